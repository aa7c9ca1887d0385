"""scripts/sass.py: SASS compared per kernel instantiation, with the real nvcc and nvdisasm (sm_90a).

Small kernels keep it quick; the same code compares the flash kernels (NOTES, sessions 6-7).
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "kernels/flash_attn_fwd/scripts/sass.py"
_spec = importlib.util.spec_from_file_location("flash_sass", SCRIPT)
sass = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sass)


def _tools() -> bool:
    try:
        sass.disassembler()
    except sass.SassError:
        return False
    return shutil.which("nvcc") is not None


pytestmark = pytest.mark.skipif(not _tools(), reason="needs nvcc and nvdisasm (pip: nvidia-cuda-nvdisasm)")

# A kernel inside an anonymous namespace (as the flash kernels are): its mangled name carries the
# file's name and a hash, which the comparison must see through.
KERNEL = """
namespace {
__global__ void scale_exp(float* x, float s) {
  // BODY
  x[threadIdx.x] = exp2f(x[threadIdx.x] * s)%s;
}
}  // namespace
void launch(float* x) { scale_exp<<<1, 32>>>(x, 2.f); }
"""


def write(tmp: Path, name: str, extra: str = "", comment: str = "") -> Path:
    p = tmp / name
    p.write_text(KERNEL.replace("// BODY", "// " + comment) % extra)
    return p


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300)


def test_the_same_code_in_two_files_is_same(tmp_path):
    a = write(tmp_path, "a.cu", comment="one")
    b = write(tmp_path, "other_name.cu", comment="two")
    r = run("diff", str(a), str(b))
    assert r.returncode == 0, r.stderr
    rows = r.stdout.splitlines()
    assert len(rows) == 1 and rows[0].startswith("SAME") and "scale_exp" in rows[0]
    assert "GLOBAL__N" not in rows[0]  # the per-file namespace is gone from the name


def test_a_changed_instruction_is_a_diff_with_its_opcode(tmp_path):
    a = write(tmp_path, "a.cu")
    b = write(tmp_path, "b.cu", extra=" + 1.f")
    r = run("diff", str(a), str(b))
    assert r.returncode == 0, r.stderr
    (row,) = r.stdout.splitlines()
    assert row.startswith("DIFF") and "FADD:0->1" in row


def test_flow_shows_the_exponential(tmp_path):
    r = run("flow", str(write(tmp_path, "a.cu")), "--match", "scale_exp")
    assert r.returncode == 0, r.stderr
    name, flow = r.stdout.splitlines()
    assert "scale_exp" in name and "EX2" in flow and "HGMMA" not in flow


def test_a_match_that_selects_nothing_says_so(tmp_path):
    r = run("flow", str(write(tmp_path, "a.cu")), "--match", "no_such_kernel")
    assert r.returncode == 0 and "no function matches" in r.stdout


def test_a_file_that_does_not_compile_is_one_clear_error(tmp_path):
    bad = tmp_path / "bad.cu"
    bad.write_text("__global__ void k( {\n")
    r = run("flow", str(bad))
    assert r.returncode == 2
    assert r.stderr.startswith("sass.py: nvcc failed on") and "Traceback" not in r.stderr
