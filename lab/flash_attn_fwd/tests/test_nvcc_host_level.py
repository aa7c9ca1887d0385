"""scripts/nvcc_host_level.py on a small kernel: real nvcc builds at both host levels, phases read, device code compared."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.test_build import TINY_CU

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.skipif(shutil.which("nvcc") is None or shutil.which("objcopy") is None, reason="nvcc/objcopy missing")
def test_both_host_levels_build_the_same_device_code(tmp_path):
    src = tmp_path / "tiny.cu"
    src.write_text(TINY_CU)
    out = subprocess.run([sys.executable, str(REPO / "lab/flash_attn_fwd/scripts/nvcc_host_level.py"), "--pairs", "1",
                          "--source", str(src), "--out", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    r = json.loads((tmp_path / "nvcc_host_level.json").read_text())
    assert r["device_code_identical"] is True
    assert "-O1" in r["command"].split() and r["pairs"] == 1
    for level in ("O1", "O3"):
        (run,) = r["runs"][level]
        assert {"cicc", "ptxas", "gcc (compiling)"} <= set(run["phases_s"]) and run["wall_s"] > 0
        assert r["summary"][level]["host_gcc_median_s"] == run["phases_s"]["gcc (compiling)"]
