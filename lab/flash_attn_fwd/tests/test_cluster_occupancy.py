"""scripts/cluster_occupancy.cu: how many CTAs run at once in clusters of 1, 2, 4, 8 (a persistent grid's size).

Compiled with nvcc for sm_90a here (CI has nvcc, no GPU); its argument check runs anywhere, the numbers only on a GPU.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[1] / "scripts" / "cluster_occupancy.cu"
pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    exe = tmp_path_factory.mktemp("occupancy") / "cluster_occupancy"
    out = subprocess.run(["nvcc", "-std=c++17", "-arch=sm_90a", "-o", str(exe), str(SOURCE)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return exe


def test_bad_arguments_are_one_line_and_exit_2(program):
    for args in (["0"], ["513"], ["384", "-1"]):
        out = subprocess.run([str(program), *args], capture_output=True, text=True, timeout=60)
        assert out.returncode == 2 and out.stderr.count("\n") == 1 and "THREADS must be" in out.stderr


@pytest.mark.gpu
def test_clusters_on_the_gpu(program):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    out = subprocess.run([str(program)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    sms = int(re.match(r"(\d+) SMs", out.stdout).group(1))
    rows = {int(m.group(1)): (int(m.group(2)), int(m.group(3)))
            for m in re.finditer(r"cluster size (\d+): (\d+) clusters at once, (\d+) SMs busy", out.stdout)}
    assert rows[1][0] == sms  # one CTA per SM at this shared-memory size
    for size, (clusters, busy) in rows.items():
        assert busy == clusters * size <= sms
