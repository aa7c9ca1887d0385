"""scripts/sass.py: SASS compared per kernel instantiation, with the real nvcc and nvdisasm (sm_90a).

Small kernels keep it quick; the same code compares the flash kernels (JOURNAL.md, sessions 6-7).
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lab.flash_attn_fwd.scripts import sass

REPO = Path(__file__).resolve().parents[3]
RUN = [sys.executable, "-m", "lab.flash_attn_fwd.scripts.sass"]  # from the repository root (cwd or PYTHONPATH)


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
    return subprocess.run([*RUN, *args], capture_output=True, text=True, timeout=300)


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


# A kernel template that gains a parameter (session 12: next_d256split's kHalfDiag). The division calls nvcc's
# slow-path subroutine, which returns to its caller by name and is numbered per file: neither is code.
TEMPLATE_A = """
namespace {
template <int N> __global__ void k(float* x) { x[threadIdx.x] = N / x[threadIdx.x]; }
}  // namespace
void launch(float* x) { k<1><<<1, 32>>>(x); k<2><<<1, 32>>>(x); }
"""
TEMPLATE_B = """
__device__ float g_unused(float a) { return 3.f / a; }  // shifts nvcc's numbering of its helpers
namespace {
template <int N, bool F = false> __global__ void k(float* x) {
  if constexpr (F) x[0] += 1.f;
  x[threadIdx.x] = N / x[threadIdx.x];
}
}  // namespace
void launch(float* x) { k<1><<<1, 32>>>(x); k<2><<<1, 32>>>(x); k<1, true><<<1, 32>>>(x); }
"""


def test_strip_b_matches_instantiations_that_gained_a_template_argument(tmp_path):
    a, b = tmp_path / "a.cu", tmp_path / "b.cu"
    a.write_text(TEMPLATE_A)
    b.write_text(TEMPLATE_B)
    r = run("diff", str(a), str(b), "--strip-b", "ELb0(?=EEEv)")
    assert r.returncode == 0, r.stderr
    rows = r.stdout.splitlines()
    assert len(rows) == 2 and all(row.startswith("SAME") for row in rows), rows
    # without the option the names differ, and F = true is other code
    plain = run("diff", str(a), str(b)).stdout
    assert "only A" in plain and "only B" in plain
    r = run("diff", str(a), str(b), "--strip-b", "ELb1(?=EEEv)")
    assert r.returncode == 0 and "DIFF" in r.stdout and "FADD:0->1" in r.stdout


def test_strip_b_that_merges_two_functions_is_one_clear_error(tmp_path):
    a, b = tmp_path / "a.cu", tmp_path / "b.cu"
    a.write_text(TEMPLATE_A)
    b.write_text(TEMPLATE_B)
    r = run("diff", str(a), str(b), "--strip-b", "ELb[01](?=EEEv)")
    assert r.returncode == 2
    assert r.stderr.startswith("sass.py: --strip-b") and "Traceback" not in r.stderr


def test_strip_b_that_is_not_a_regex_is_one_clear_error(tmp_path):
    a, b = tmp_path / "a.cu", tmp_path / "b.cu"
    a.write_text(TEMPLATE_A)
    b.write_text(TEMPLATE_B)
    r = run("diff", str(a), str(b), "--strip-b", "ELb[01")
    assert r.returncode == 2
    assert r.stderr.startswith("sass.py: --strip-b") and "Traceback" not in r.stderr


LOOP_KERNEL = """
namespace {
__global__ void sum_exp(const float* x, float* out, int n, float s) {
  float acc = 0.f;
  for (int i = threadIdx.x; i < n; i += 32) acc += exp2f(x[i] * s);
  out[threadIdx.x] = acc;
}
__global__ void one_exp(float* x) { x[threadIdx.x] = exp2f(x[threadIdx.x]); }
}  // namespace
void launch(const float* x, float* o, int n) { sum_exp<<<1, 32>>>(x, o, n, 2.f); one_exp<<<1, 32>>>(o); }
"""


def by_function(out: str) -> dict[str, list[str]]:
    """sass.py loops' output: function name (its short name) -> its indented rows."""
    rows: dict[str, list[str]] = {}
    for line in out.splitlines():
        if line.startswith("   "):
            rows[name].append(line.strip())
        else:
            name = "sum_exp" if "sum_exp" in line else "one_exp" if "one_exp" in line else line
            rows[name] = []
    return rows


def test_loops_finds_the_loop_that_holds_an_opcode(tmp_path):
    src = tmp_path / "loops.cu"
    src.write_text(LOOP_KERNEL)
    r = run("loops", str(src), "--op", "MUFU.EX2")
    assert r.returncode == 0, r.stderr
    rows = by_function(r.stdout)
    first = rows["sum_exp"][0].split()  # smallest loop first: "N instructions  MUFU.EX2 k  EX2 k  SYNCS 0 ..."
    assert first[1] == "instructions" and int(first[0]) > 0
    assert int(first[first.index("MUFU.EX2") + 1]) >= 1
    assert rows["one_exp"] == ["no loop holds MUFU.EX2"]  # straight-line code has no loop
    assert by_function(run("loops", str(src), "--match", "sum_exp").stdout) == {"sum_exp": ["no loop holds HGMMA"]}


def test_keyloop_compares_the_loop_alone_where_the_function_changed_outside_it(tmp_path):
    a = tmp_path / "a.cu"
    a.write_text(LOOP_KERNEL)
    # B: the same loop, and a store after it (the function changes, its loop does not)
    b = tmp_path / "b.cu"
    b.write_text(LOOP_KERNEL.replace("  out[threadIdx.x] = acc;\n", "  out[threadIdx.x] = acc;\n  out[n] = s;\n"))
    # C: one more multiply a trip, inside the loop (fused with the add)
    c = tmp_path / "c.cu"
    c.write_text(LOOP_KERNEL.replace("acc += exp2f(x[i] * s);", "acc += exp2f(x[i] * s) * x[i];"))
    assert run("diff", str(a), str(b), "--match", "sum_exp").stdout.startswith("DIFF")
    r = run("keyloop", str(a), str(b), "--ops", "MUFU.EX2")
    assert r.returncode == 0, r.stderr
    rows = {("sum_exp" if "sum_exp" in line else "one_exp"): line for line in r.stdout.splitlines()}
    assert rows["sum_exp"].startswith("SAME  ")
    assert rows["one_exp"].startswith("NONE  ")  # straight-line code: no loop to compare
    changed = run("keyloop", str(a), str(c), "--ops", "MUFU.EX2", "--match", "sum_exp").stdout
    assert changed.startswith("DIFF  ") and "FFMA:0->1" in changed  # the add became a fused multiply-add
    # the default ops: a loop must hold a wgmma too, which these kernels have not
    assert "NONE" in run("keyloop", str(a), str(b), "--match", "sum_exp").stdout
