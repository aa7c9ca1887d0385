"""profile_baseline.py on a machine without ncu or a GPU: each way it cannot run ends in one clear message and exit
code 2 (the profile itself runs on the device: device/order_check.sh)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
RUN = [sys.executable, "-m", "lab.flash_attn_fwd.scripts.profile_baseline"]


def _run(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([*RUN, *args], cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env})


def _clean(r: subprocess.CompletedProcess, message: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert message in r.stderr and "Traceback" not in r.stderr


def test_unknown_scenario_and_baseline():
    _clean(_run("d128-h16-16-s8193"), "unknown scenario 'd128-h16-16-s8193'")
    bad = _run("d128-h16-16-s8192", "--baseline", "cudnn9")
    assert bad.returncode == 2 and "invalid choice" in bad.stderr


@pytest.mark.skipif(shutil.which("ncu") is not None, reason="ncu is installed here: the profile would run")
def test_no_ncu_is_a_clear_error():
    _clean(_run("d128-h16-16-s8192-causal", PATH=os.path.dirname(sys.executable), CUDA_HOME="/nonexistent"),
           "Nsight Compute (ncu) not found")


def test_child_without_a_gpu_says_so():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is here")
    _clean(_run("d128-h16-16-s8192-causal", KS_PROFILE_BASELINE_CHILD="1"), "needs a CUDA device")
