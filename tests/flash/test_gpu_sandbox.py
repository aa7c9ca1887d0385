"""On a GPU machine: the seed kernel, with a planted load-time constructor, runs inside the strongest sandbox the
machine has and still reaches the GPU; it sees no credential, cannot edit its task.yaml for good, and (with
bubblewrap) cannot write outside its scratch folder. Skipped without CUDA; run with
`python3 -m pytest -m gpu tests/flash/test_gpu_sandbox.py -q -rs`.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from ks_tui.harness import sandbox, taskguard  # noqa: E402
from ks_tui.harness.client import run_harness  # noqa: E402
from ks_tui.task import load_task  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
TASK = REPO / "kernels" / "flash_attn_fwd"
KEY = "sk-ant-planted-" + "9" * 24

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]

PLANT = r"""
#include <cstdio>
#include <cstdlib>
#include <cstring>
extern char** environ;
__attribute__((constructor)) static void planted() {
    for (char** e = environ; *e; ++e) if (std::strstr(*e, "ANTHROPIC")) std::printf("SAW %s\n", *e);
    if (const char* p = std::getenv("KS_TEST_OUTSIDE")) {
        FILE* f = std::fopen(p, "w");
        std::printf("OUTSIDE %s\n", f ? "written" : "refused");
        if (f) std::fclose(f);
    }
    if (const char* p = std::getenv("KS_TEST_TASK_YAML")) {
        FILE* f = std::fopen(p, "a");
        std::printf("YAML %s\n", f ? "opened" : "refused");
        if (f) { std::fputs("\n# edited\n", f); std::fclose(f); }
    }
    std::fflush(stdout);
}
"""


def test_a_planted_kernel_on_the_gpu_is_confined_and_still_correct(tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    shutil.copytree(TASK, ws / "kernels" / "flash_attn_fwd",
                    ignore=shutil.ignore_patterns("results", "best", "scripts", "*.md", "__pycache__"))
    task = load_task(ws / "kernels" / "flash_attn_fwd", ws)
    src = tmp_path / "planted.cu"
    src.write_text(PLANT + TASK.joinpath("kernel.cu").read_text())
    outside = tmp_path / "outside.txt"
    before = task.yaml_path.read_bytes()
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("KS_TEST_OUTSIDE", str(outside))
    monkeypatch.setenv("KS_TEST_TASK_YAML", str(task.yaml_path))
    monkeypatch.setenv("KS_CACHE_DIR", str(tmp_path / "cache"))
    box = sandbox.current()
    print(f"sandbox here: {box.describe()}")
    r = run_harness(task, src, mode="check", scenarios=task.quick[:1])
    tail = r["stderr_tail"]
    assert r["sandbox"] == box.mode
    assert "SAW" not in tail and KEY not in str(r)
    assert task.yaml_path.read_bytes() == before  # refused by the sandbox, or put back by the guard
    if box.mode == "bwrap":
        assert "OUTSIDE refused" in tail and not outside.exists()
        assert "YAML refused" in tail
        assert r["status"] == "correct", r["message"]  # the GPU is reachable inside the sandbox
    else:
        assert r["status"] == "crashed" and r["message"].startswith(taskguard.MESSAGE), r["message"]
        monkeypatch.delenv("KS_TEST_TASK_YAML")
        again = run_harness(task, src, mode="check", scenarios=task.quick[:1])
        assert again["status"] == "correct", again["message"]  # the GPU is reachable inside the sandbox
