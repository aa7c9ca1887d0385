"""The wheel built from this tree: small, the code plus the bundled tasks and bank only, and `ks init` works from it.

Built with hatchling's own builder (the project's build backend) into a temporary folder, then unpacked as a
site-packages folder that a child `python -m ks_tui init` imports instead of this checkout.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BUNDLED = "ks_tui/_bundled/"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    pytest.importorskip("hatchling")
    from hatchling.builders.wheel import WheelBuilder

    out = tmp_path_factory.mktemp("dist")
    built = list(WheelBuilder(str(REPO)).build(directory=str(out), versions=["standard"]))
    assert len(built) == 1
    return Path(built[0])


def test_the_wheel_is_small_and_holds_no_lab_or_results(wheel):
    assert wheel.stat().st_size < 1_000_000, wheel.stat().st_size
    names = zipfile.ZipFile(wheel).namelist()
    assert not [n for n in names if "/results/" in n or n.startswith("lab/") or "/lab/" in n], names
    assert not [n for n in names if "__pycache__" in n or n.endswith((".pyc", ".so", ".tgz", ".tar.gz"))]
    assert not [n for n in names if n.startswith(BUNDLED) and ("/scripts/" in n or n.endswith(".md")
                                                                and not n.endswith("/README.md"))]
    assert "ks_tui/cli.py" in names and "ks_tui/harness/runner.py" in names


def test_the_wheel_carries_every_bundled_task_and_the_bank(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert BUNDLED + "question_bank.yaml" in names
    tasks = sorted(p.parent.name for p in (REPO / "kernels").glob("*/task.yaml"))
    assert "attention_cpu" in tasks and "flash_attn_fwd" in tasks
    for task in tasks:
        assert f"{BUNDLED}kernels/{task}/task.yaml" in names
        assert f"{BUNDLED}kernels/{task}/reference.py" in names
    assert f"{BUNDLED}kernels/flash_attn_fwd/kernel.cu" in names
    assert f"{BUNDLED}kernels/flash_attn_fwd/best/kernel.cu" in names  # the documented example
    assert f"{BUNDLED}kernels/attention_cpu/kernel.cpp" in names


def test_ks_init_works_from_the_installed_wheel(wheel, tmp_path):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KS_", "GIT_"))}
    env.update(PYTHONPATH=str(site), HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    probe = subprocess.run([sys.executable, "-c", "import ks_tui, ks_tui.paths as p; print(ks_tui.__file__);"
                            " print(p.bundled_root())"], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=60)
    assert probe.returncode == 0, probe.stderr
    module, root = probe.stdout.split()
    assert module.startswith(str(site)) and root == str(site / "ks_tui" / "_bundled")  # not this checkout
    out = subprocess.run([sys.executable, "-m", "ks_tui", "init", "ws"], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    ws = tmp_path / "ws"
    for task in ("attention_cpu", "flash_attn_fwd"):
        assert (ws / "kernels" / task / "task.yaml").is_file()
    assert (ws / "question_bank.yaml").read_text() == (REPO / "question_bank.yaml").read_text()
    assert not (ws / "kernels" / "flash_attn_fwd" / "best").exists()  # a workspace starts from the seed
    scen = subprocess.run([sys.executable, "-m", "ks_tui", "scenarios", "attention_cpu", "--json"], cwd=ws, env=env,
                          capture_output=True, text=True, timeout=120)
    assert scen.returncode == 0 and '"scenarios"' in scen.stdout, scen.stderr
