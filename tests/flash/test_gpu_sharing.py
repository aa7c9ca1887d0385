"""On a GPU: a bench run says so when another process ran kernels on its GPU, and says nothing on an idle one.

The other process is real: a child looping matrix products on the same GPU while the harness benches the
seed kernel on one scenario. Skipped without CUDA or nvidia-smi; run on the H200 with
`python3 -m pytest -m gpu tests/flash/test_gpu_sharing.py`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

REPO = Path(__file__).resolve().parents[2]
TASK = REPO / "kernels" / "flash_attn_fwd"
SEED = TASK / "kernel.cu"
SCENARIO = "d128-h16-16-q128-k512"

pytestmark = [pytest.mark.gpu, pytest.mark.slow,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
              pytest.mark.skipif(shutil.which("nvidia-smi") is None, reason="needs nvidia-smi")]

HOG = """
import sys, time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
end = time.monotonic() + float(sys.argv[1])
torch.cuda.synchronize(); print("ready", flush=True)
while time.monotonic() < end:
    for _ in range(20):
        a = (a @ a).clamp_(-1, 1)
    torch.cuda.synchronize()
"""


def bench(tmp_path: Path) -> dict:
    out = tmp_path / f"result-{len(list(tmp_path.glob('result-*')))}.json"
    env = dict(os.environ, KS_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [sys.executable, "-m", "ks_tui.harness", "run", "--task", str(TASK), "--source", str(SEED),
         "--mode", "bench", "--scenarios", SCENARIO, "--out", str(out)],
        capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text())


def gpu_warnings(result: dict) -> list[str]:
    return [w for w in result["warnings"] if w.startswith("another process was running kernels on this GPU")]


def test_an_idle_gpu_gets_no_warning(tmp_path):
    time.sleep(1.5)  # an earlier test's kernels out of the driver's sample period
    r = bench(tmp_path)
    assert r["status"] == "correct", r["message"]
    sharing = r["sharing"]
    assert sharing["gpu_utilization_before"] is not None, "nvidia-smi's reading did not match this GPU"
    assert sharing["gpu_utilization_after"] == 0 and not gpu_warnings(r)


def test_a_busy_gpu_is_named(tmp_path):
    hog = subprocess.Popen([sys.executable, "-c", HOG, "120"], stdout=subprocess.PIPE, text=True)
    try:
        assert hog.stdout.readline().strip() == "ready"
        r = bench(tmp_path)
    finally:
        hog.kill()
        hog.wait()
    assert r["status"] == "correct", r["message"]
    assert r["sharing"]["gpu_utilization_before"] > 0 and r["sharing"]["gpu_utilization_after"] > 0
    [w] = gpu_warnings(r)
    assert "before this run used it" in w and "after timing, with this run idle" in w
