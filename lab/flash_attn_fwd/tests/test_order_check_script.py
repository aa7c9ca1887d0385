"""device/order_check.sh on a machine without a GPU: every step runs, fails with its own clear message, and the call
still returns its summary and run.tgz with the exit code of the failure (on the device the same steps read clocks)."""

from __future__ import annotations

import os
import subprocess
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "lab" / "flash_attn_fwd" / "device" / "order_check.sh"


def _run(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    full = dict(os.environ, OUT=str(tmp_path / "out"), KS_CALL_SECONDS="200", **env)
    return subprocess.run(["bash", str(SCRIPT)], cwd=REPO, env=full, capture_output=True, text=True, timeout=300)


def test_without_a_gpu_each_step_says_why_and_the_call_still_returns_its_files(tmp_path):
    r = _run(tmp_path, KS_CLOCK_SCENARIOS="d128-h16-16-s512", KS_PROFILE="d128-h16-16-s512")
    assert r.returncode == 2, r.stdout + r.stderr
    summary = (tmp_path / "out" / "summary.txt").read_text()
    assert "== clock_log d128-h16-16-s512: rc 2" in summary and "needs an NVIDIA GPU" in summary
    assert "== profile d128-h16-16-s512: rc 2" in summary
    assert "== fa3 profile d128-h16-16-s512: rc 2" in summary  # no ncu here: profile_baseline says so
    with tarfile.open(tmp_path / "out" / "run.tgz") as tar:
        names = set(tar.getnames())
    assert {"run/clock-d128-h16-16-s512.txt", "run/profile-d128-h16-16-s512.err",
            "run/profile-fa3-d128-h16-16-s512.txt"} <= names
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["run.tgz", "summary.txt"]


def test_a_missing_kernel_file_stops_the_call_before_any_step(tmp_path):
    r = _run(tmp_path, KS_KERNEL="kernels/flash_attn_fwd/best/nothing.cu")
    assert r.returncode == 2 and "order_check.sh: no kernel file kernels/flash_attn_fwd/best/nothing.cu" in r.stderr
    assert not (tmp_path / "out" / "summary.txt").exists()
