"""Real git workspaces in temporary folders for the attempt-store tests."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

TASK_YAML = """\
name: toy
description: a tiny CPU task for the attempt-store tests
kernel: kernel.cpp
entry: toy_forward
reference: reference.py
scenarios:
  list:
    - {n: 8}
    - {n: 16}
  id: "n{n}"
quick: [n8]
tolerance:
  rule: fp32_relative
flops: "n * 2"
"""

KERNEL = """\
extern "C" int toy_forward(const float* x, float* y, int n) {
    for (int i = 0; i < n; ++i) y[i] = 2.0f * x[i];
    return 0;
}
"""


def git(cwd: Path, *args: str, check: bool = True) -> str:
    out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if check and out.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {out.stderr}")
    return out.stdout


@pytest.fixture
def git_env(tmp_path, monkeypatch):
    """An isolated git: its own HOME and global config, an identity set there."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.delenv("KS_WORKSPACE", raising=False)
    for var in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL"):
        monkeypatch.delenv(var, raising=False)
    (home / ".gitconfig").write_text("[user]\n\tname = Test User\n\temail = test@example.com\n"
                                     "[init]\n\tdefaultBranch = main\n")
    return home


@pytest.fixture
def workspace(tmp_path, git_env) -> Path:
    """A committed workspace with the toy task, plus an uncommitted user file."""
    ws = tmp_path / "ws"
    task = ws / "kernels" / "toy"
    task.mkdir(parents=True)
    (task / "task.yaml").write_text(TASK_YAML)
    (task / "kernel.cpp").write_text(KERNEL)
    (task / "reference.py").write_text("# the toy task's reference is not run by these tests\n")
    (ws / "question_bank.yaml").write_text("questions: []\n")
    (ws / ".gitignore").write_text("/sessions/\n")
    git(ws, "init", "-q")
    git(ws, "add", ".")
    git(ws, "commit", "-q", "-m", "toy workspace")
    return ws


def result_for(kernel: Path, status: str = "correct", speedup: float | None = 1.0, n_ok: int = 2,
               mode: str = "bench") -> dict:
    """A harness result in the documented schema (docs/internal-apis.md) for this kernel file."""
    import hashlib

    data = kernel.read_bytes()
    scenarios = []
    for i, sid in enumerate(("n8", "n16")):
        ok = i < n_ok
        scenarios.append({
            "id": sid, "shape": {"n": 8 * (i + 1)}, "ok": ok,
            "error": {"max_abs": 0.0 if ok else 1.0, "bound": 1e-4, "where": "y[0]"},
            "time_ms": 0.01, "tflops": 0.001, "baseline": {"name": "torch_ref", "time_ms": 0.01 * (speedup or 1)},
            "baselines": {"torch_ref": 0.01 * (speedup or 1)}, "skipped_baselines": {},
            "speedup": speedup,
        })
    return {
        "schema": 1, "task": "toy", "kernel_sha256": hashlib.sha256(data).hexdigest(), "source": str(kernel),
        "mode": mode, "quick": False, "seed": 1234, "device": "cpu", "torch": "2.13.0", "cuda": None,
        "status": status, "message": "" if status == "correct" else f"{status} on n16",
        "compile": {"ok": status != "compile_error", "cached": False, "seconds": 0.1, "command": "g++", "log": "",
                    "errors": [], "kernels": [], "sass": {}},
        "scenarios": scenarios if status != "compile_error" else [],
        "correct": f"{n_ok}/2", "geomean_speedup": speedup if status == "correct" else None,
        "geomean_by_baseline": {"torch_ref": speedup} if speedup else {},
        "stderr_tail": "", "timings": {"compile_s": 0.1, "check_s": 0.1, "bench_s": 0.1, "total_s": 0.3},
    }
