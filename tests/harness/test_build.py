"""Build: real g++/nvcc, parsed diagnostics, ptxas numbers, and the compile cache."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from ks_tui.harness.build import build, cache_root
from ks_tui.harness.client import run_harness
from ks_tui.harness.compiler_output import parse_ptxas, summarize_sass
from tests.harness.conftest import run_ks

BROKEN = """// a kernel with a typo
extern "C" int attention_forward(const float* q, const float* k, const float* v, float* o,
                                 int b, int s_q, int s_k, int h_q, int h_kv, int d, int causal,
                                 float scale) {
    int n = b * s_q * missing_size;
    return undefined_name;
}
"""

TINY_CU = r"""
__global__ void twice(float* x, int n) {
    __shared__ float buf[256];
    int i = threadIdx.x;
    buf[i] = i < n ? x[i] : 0.f;
    __syncthreads();
    if (i < n) x[i] = 2.f * buf[i];
}
extern "C" int launch(float* x, int n, void* stream) {
    twice<<<1, 256, 0, (cudaStream_t)stream>>>(x, n);
    return 0;
}
"""

# A wgmma whose accumulator a plain instruction rewrites while the pipeline runs: ptxas (sm_90a) serialises the
# wgmmas and says so as "info" (C7511), which the build record must not lose.
SERIAL_CU = r"""
#include <cstdint>
__global__ void serial(float* out, uint64_t da, uint64_t db, int c) {
    float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    for (int i = 0; i < c; ++i) {
        asm volatile("wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, %4, %5, 1, 1, 1, 0, 0;\n"
                     : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3) : "l"(da), "l"(db));
        d0 *= 0.5f;
    }
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    out[threadIdx.x] = d0 + d1 + d2 + d3;
}
"""


def test_compile_error_is_parsed_to_kernel_file_and_line(cpu_task, tmp_path):
    src = tmp_path / "somewhere" / "my_try.cpp"
    src.parent.mkdir()
    src.write_text(BROKEN)
    r = run_harness(cpu_task, src, quick=True)
    assert r["status"] == "compile_error"
    errors = r["compile"]["errors"]
    # Reported under the task's kernel name, whatever file the candidate came from.
    assert {e["file"] for e in errors} == {"kernel.cpp"}
    assert {e["line"] for e in errors} >= {5, 6}
    assert any("undefined_name" in e["message"] for e in errors)
    assert any("missing_size" in e["message"] for e in errors)
    assert r["message"].startswith("kernel.cpp:5:")
    assert r["scenarios"] == []


def test_cli_shows_compile_errors_and_exits_1(tmp_path):
    src = tmp_path / "k.cpp"
    src.write_text(BROKEN)
    out = run_ks("check", "attention_cpu", "--source", str(src), "--quick")
    assert out.returncode == 1
    assert "kernel.cpp:6:" in out.stdout and "compile_error" in out.stdout


@pytest.mark.slow
def test_unchanged_source_is_not_recompiled(cpu_task, planted_dir, tmp_path):
    src = tmp_path / "naive.cpp"
    src.write_text((planted_dir / "naive.cpp").read_text() + "\n// unique to this test\n")
    first = run_harness(cpu_task, src, scenarios=["d24-h2-1-q31-k45-b4"])
    lib = cache_root() / "build" / first["compile"]["key"][:2] / first["compile"]["key"] / "kernel.so"
    stamp = lib.stat().st_mtime_ns
    second = run_harness(cpu_task, src, scenarios=["d24-h2-1-q31-k45-b4"])
    assert first["selection"] == ["d24-h2-1-q31-k45-b4"]  # a subset run says which scenarios
    assert first["compile"]["cached"] is False and second["compile"]["cached"] is True
    assert second["compile"]["key"] == first["compile"]["key"]
    assert lib.stat().st_mtime_ns == stamp
    assert second["status"] == "correct"
    # A changed flag or source is a different entry.
    src.write_text(src.read_text() + "// changed\n")
    third = run_harness(cpu_task, src, scenarios=["d24-h2-1-q31-k45-b4"])
    assert third["compile"]["cached"] is False and third["compile"]["key"] != first["compile"]["key"]


def nvcc_build(tmp_path, name: str, text: str, flags: tuple[str, ...] = ("-std=c++17",)):
    """A real nvcc build for sm_90a of `text`, shown to the user as kernel.cu."""
    src = tmp_path / name
    src.write_text(text)
    return build(src, language="cuda", compiler="nvcc", flags=list(flags), arch="sm_90a",
                 shown_name="kernel.cu", timeout=300)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_nvcc_builds_for_sm90a_and_ptxas_is_parsed(tmp_path):
    record, lib = nvcc_build(tmp_path, "tiny.cu", TINY_CU)
    assert record["ok"], record["log"]
    assert "-gencode=arch=compute_90a,code=sm_90a" in record["command"]
    assert lib is not None and lib.is_file()
    (k,) = record["kernels"]
    assert "twice" in k["demangled"]
    assert k["registers"] > 0 and k["smem_bytes"] == 256 * 4 and k["spills_bytes"] == 0
    assert k["perf_warnings"] == []
    if shutil.which("cuobjdump") is None:
        assert record["sass"] is None and "cuobjdump" in record["sass_reason"]
    else:
        assert record["sass"]["BAR"] >= 1


def _device_code(lib) -> bytes:
    """The fatbinary nvcc embedded in a shared library (the device code, as the driver loads it)."""
    out = lib.with_suffix(".fatbin")
    subprocess.run(["objcopy", "-O", "binary", "--only-section=.nv_fatbin", str(lib), str(out)], check=True)
    return out.read_bytes()


@pytest.mark.skipif(shutil.which("nvcc") is None or shutil.which("objcopy") is None, reason="nvcc/objcopy missing")
def test_the_host_code_level_leaves_the_device_code_alone(tmp_path):
    # The harness compiles the host side at -O1 (a third less host compile time) on the grounds that nvcc's -O
    # is the host's level only: the same device code whether a task keeps that or asks for -O3.
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    mine, lib1 = nvcc_build(tmp_path / "a", "tiny.cu", TINY_CU)
    theirs, lib3 = nvcc_build(tmp_path / "b", "tiny.cu", TINY_CU, flags=("-O3", "-std=c++17"))
    assert mine["ok"] and theirs["ok"], (mine["log"], theirs["log"])
    assert "-O1" in mine["command"] and theirs["command"].index("-O1") < theirs["command"].index("-O3")  # theirs wins
    code = _device_code(lib1)
    assert len(code) > 1000 and code == _device_code(lib3)
    assert lib1.read_bytes() != lib3.read_bytes()  # ... while the host code did change


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_serialised_wgmma_is_recorded_with_its_kernel(tmp_path):
    record, _ = nvcc_build(tmp_path, "serial.cu", SERIAL_CU)
    assert record["ok"], record["log"]
    (k,) = record["kernels"]
    assert "serial" in k["demangled"]
    assert any(note.startswith("C75") and "serialized" in note for note in k["perf_warnings"]), k


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_nvcc_errors_are_parsed(tmp_path):
    record, lib = nvcc_build(tmp_path, "bad.cu", "__global__ void f(float* x) {\n  x[0] = missing;\n}\n", flags=())
    assert lib is None and not record["ok"]
    assert record["errors"][0]["file"] == "kernel.cu" and record["errors"][0]["line"] == 2
    assert "missing" in record["errors"][0]["message"]


def test_ptxas_and_sass_parsers_on_recorded_text():
    log = ("ptxas info    : 0 bytes gmem\n"
           "ptxas info    : Compiling entry function '_Z3fwdv' for 'sm_90a'\n"
           "ptxas info    : Function properties for _Z3fwdv\n"
           "    16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
           "ptxas info    : Used 168 registers, used 1 barriers, 99328 bytes smem, 400 bytes cmem[0]\n")
    assert parse_ptxas(log) == [{"name": "_Z3fwdv", "registers": 168, "spills_bytes": 20,
                                 "smem_bytes": 99328, "stack_bytes": 16, "perf_warnings": []}]
    # ptxas 13's note for a serialised wgmma pipeline comes before the function's properties, and names it
    note = ("ptxas info    : (C7511) Potential Performance Loss: wgmma.mma_async instructions are serialized due to "
            "insufficient register resources for the wgmma pipeline in the function '_Z3fwdv'\n")
    (k,) = parse_ptxas(log.replace("ptxas info    : Function properties", note + "ptxas info    : Function properties"))
    assert k["perf_warnings"] == ["C7511: wgmma.mma_async instructions are serialized due to insufficient register "
                                  "resources for the wgmma pipeline"]
    assert k["registers"] == 168
    (k,) = parse_ptxas(note.replace("_Z3fwdv", "_Z5otherv") + log)  # names no kernel of the report: still shown
    assert len(k["perf_warnings"]) == 1 and k["name"] == "_Z3fwdv"
    sass = ("        /*0080*/                   HGMMA.64x128x16.F32.BF16 gdesc[UR4], RZ, !UPT ;\n"
            "        /*0090*/              @!P0 BAR.SYNC.DEFER_BLOCKING 0x0 ;\n"
            "        /*00a0*/                   STL.64 [R1], R2 ;\n"
            "        /*00b0*/                   HGMMA.64x128x16.F32.BF16 gdesc[UR8], R24 ;\n")
    s = summarize_sass(sass)
    assert (s["HGMMA"], s["BAR"], s["STL"], s["LDL"], s["total"]) == (2, 1, 1, 0, 4)


def test_least_recently_used_builds_are_evicted(tmp_path, monkeypatch):
    monkeypatch.setenv("KS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("KS_CACHE_MAX_ENTRIES", "2")
    keys = []
    for i in range(3):
        src = tmp_path / f"k{i}.cpp"
        src.write_text(f'extern "C" int attention_forward() {{ return {i}; }}\n')
        record, lib = build(src, language="cpp", compiler="g++", flags=[], arch=None,
                            shown_name="kernel.cpp", timeout=120)
        assert record["ok"] and lib.is_file()
        keys.append(record["key"])
        if i == 1:  # use the first again: the second becomes the least recently used
            os.utime(cache_root() / "build" / keys[0][:2] / keys[0], (1e9, 1e9))
            os.utime(cache_root() / "build" / keys[1][:2] / keys[1], (5e8, 5e8))
    present = {p.name for p in (cache_root() / "build").glob("??/*")}
    assert present == {keys[0], keys[2]}


def test_library_headers_are_refused_with_their_line(cpu_task, planted_dir, tmp_path):
    src = tmp_path / "smuggler.cpp"
    src.write_text("// uses torch's kernels\n#include <cmath>\n  #include <torch/extension.h>\n"
                   + (planted_dir / "naive.cpp").read_text())
    r = run_harness(cpu_task, src, quick=True)
    assert r["status"] == "compile_error"
    (err,) = r["compile"]["errors"]
    assert (err["file"], err["line"]) == ("kernel.cpp", 3) and "self-contained" in err["message"]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_check_and_bench_text_name_each_kernels_resources_and_ptxas_notes(tmp_path):
    from ks_tui.harness.report import render

    record, _ = nvcc_build(tmp_path, "serial.cu", SERIAL_CU)
    text = render({"status": "correct", "correct": "0/0", "compile": record, "scenarios": []})
    block = text.split("compiled:\n", 1)[1].splitlines()
    assert block[0].startswith("  kernel serial: ") and "B spills" in block[0]
    assert block[1].startswith("    ptxas: C75") and "serialized" in block[1]


def test_many_kernel_functions_are_summed_up_and_only_the_odd_ones_listed():
    import json
    from pathlib import Path

    from ks_tui.harness.report import kernel_label, kernel_lines, render

    seed = Path(__file__).resolve().parents[1] / "app" / "data" / "h200_seed_bench_first6.json"
    result = json.loads(seed.read_text())  # the H200 run of the flash_attn_fwd seed: 8 kernel functions
    kernels = result["compile"]["kernels"]
    regs = sorted(k["registers"] for k in kernels)
    lines = kernel_lines(result, every=False)
    assert lines[0] == f"  8 kernel functions: {regs[0]}-{regs[-1]} registers, 0 B spills, 0 B shared"
    assert lines[1].startswith("  SASS: HGMMA 0, HMMA 832") and len(lines) == 2  # none spills or has a note
    kernels[2]["spills_bytes"] = 24
    kernels[5]["perf_warnings"] = ["C7510: wgmma.mma_async instructions are serialized"]
    lines = kernel_lines(result, every=False)
    assert "0-24 B spills" in lines[0]
    assert lines[1] == f"  kernel {kernel_label(kernels[2])}: {kernels[2]['registers']} registers, 24 B spills, 0 B shared"
    assert lines[2].startswith(f"  kernel {kernel_label(kernels[5])}:") and lines[3].startswith("    ptxas: C7510")
    assert len(kernel_lines(result)) == 8 + 1 + 1  # every kernel, the one note, the SASS counts
    assert "compiled:\n  8 kernel functions" in render(result)


def test_nvcc_splits_its_work_over_the_cpus_unless_told_otherwise(monkeypatch):
    from ks_tui.harness.build import compile_command

    monkeypatch.delenv("KS_NVCC_SPLIT", raising=False)
    cmd = compile_command("cuda", "nvcc", ["-O3"], "sm_90a", "k.cu", "k.so")
    assert "-split-compile=0" in cmd
    monkeypatch.setenv("KS_NVCC_SPLIT", "1")
    assert "-split-compile=1" in compile_command("cuda", "nvcc", [], "sm_90a", "k.cu", "k.so")
    mine = compile_command("cuda", "nvcc", ["-split-compile=4"], "sm_90a", "k.cu", "k.so")
    assert [f for f in mine if "split-compile" in f] == ["-split-compile=4"]
    assert not any("split" in f for f in compile_command("cpp", "g++", [], None, "k.cpp", "k.so"))
