"""Shared fixtures: the bundled CPU task, a private build cache, planted kernel files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_wide_dir
from tests.harness import planted

REPO = Path(__file__).resolve().parents[2]
CPU_TASK_DIR = REPO / "kernels" / "attention_cpu"


@pytest.fixture(scope="session")
def build_cache(tmp_path_factory) -> Path:
    return run_wide_dir(tmp_path_factory, "ks-cache")


@pytest.fixture(autouse=True)
def _private_cache(build_cache, monkeypatch):
    # Children inherit this: tests never touch the user's ~/.cache/ks.
    monkeypatch.setenv("KS_CACHE_DIR", str(build_cache))


@pytest.fixture(scope="session")
def cpu_task():
    from ks_tui.task import load_task

    return load_task(CPU_TASK_DIR, REPO)


@pytest.fixture(scope="session")
def planted_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("planted")
    for kind in planted.VARIANTS:
        (d / f"{kind}.cpp").write_text(planted.source(kind))
    return d


def run_ks(*args: str, env: dict | None = None, cwd: Path | None = None, timeout: float = 240):
    """`ks` as a real child process (python -m ks_tui)."""
    return subprocess.run([sys.executable, "-m", "ks_tui", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd or REPO, env={**os.environ, **(env or {})})


def active_sandbox(monkeypatch):
    """The sandbox `auto` picks on this machine (the test is skipped where none can run)."""
    from ks_tui.harness import sandbox

    monkeypatch.setenv("KS_SANDBOX", "auto")
    box = sandbox.current()
    if not box.active:
        pytest.skip("no sandbox on this machine")
    return box


def started_inside(pid: int, box) -> bool:
    """PID was started by the sandbox's own tool (bwrap, unshare): the harness child runs inside it."""
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return os.path.basename(f.read().split(b"\0")[0].decode()) == box.mode
