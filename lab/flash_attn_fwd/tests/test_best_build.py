"""best/kernel.cu and the candidates made by scripts/variants.py (edits of it) compile for sm_90a with the
instantiation count each must have, no spills and no serialised wgmma; best/kernel.cu's ABI refuses bad shapes; a
variant whose edit no longer fits is refused.

Compile-only: no GPU is needed. Skipped only where nvcc is absent. Each compile of the kernel takes one to two
minutes of nvcc on 2 cores, which is why this lives in the lab suite and not in the product's (tests/flash compiles
the seed).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ks_tui.harness.build import build
from ks_tui.task import load_task
from lab.flash_attn_fwd.scripts import variants

REPO = Path(__file__).resolve().parents[3]
BEST = REPO / "kernels/flash_attn_fwd/best/kernel.cu"
# best/kernel.cu: 17 functions a dtype (per head dim, a function per tile shape, key-block width and epilogue, and
# for the unmasked launches a causal-free copy).
INSTANTIATIONS_BEST = 34

pytestmark = [pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed"),
              pytest.mark.timeout(1200)]  # a cold nvcc build of the kernel on a loaded 2-core machine


@pytest.fixture(scope="module", params=["best", *variants.VARIANTS])
def compiled(request, tmp_path_factory):
    task = load_task("flash_attn_fwd", REPO)
    if request.param == "best":
        source = BEST
    else:
        source = tmp_path_factory.mktemp("src") / f"{request.param}.cu"
        source.write_text(variants.render(request.param))
    old = os.environ.get("KS_CACHE_DIR")
    os.environ["KS_CACHE_DIR"] = str(tmp_path_factory.mktemp("ks-cache"))  # cold: nothing cached from other runs
    try:
        record, lib = build(source, language=task.language, compiler=task.build.compiler, flags=task.build.flags,
                            arch=task.build.arch, shown_name=source.name, timeout=1200)
    finally:
        if old is None:
            os.environ.pop("KS_CACHE_DIR")
        else:
            os.environ["KS_CACHE_DIR"] = old
    return request.param, record, lib


def test_variant_compiles_with_its_instantiations(compiled):
    name, record, lib = compiled
    assert record["ok"], record["log"][-2000:]
    assert lib is not None and lib.is_file()
    kernels = record["kernels"]
    assert "compute_90a" in record["command"] and "code=sm_90a" in record["command"]
    assert len(kernels) == variants.INSTANTIATIONS.get(name, INSTANTIATIONS_BEST), [k["name"] for k in kernels]
    for k in kernels:
        assert 0 < k["registers"] <= 255
        assert k["spills_bytes"] == 0, f"{k['name']} spills {k['spills_bytes']} bytes"
        assert k["perf_warnings"] == [], f"{k['name']}: {k['perf_warnings']}"


@pytest.mark.parametrize("name", ["best", *variants.VARIANTS])
def test_variant_uses_no_library_headers(name):
    text = BEST.read_text() if name == "best" else variants.render(name)
    includes = [ln.split()[1] for ln in text.splitlines() if ln.startswith("#include")]
    for banned in ("cutlass", "cute", "cublas", "cudnn", "torch", "ATen"):
        assert not any(banned in inc for inc in includes), includes


def _call(lib: Path, q=4096, k=4096, v=4096, o=4096, b=1, s_q=128, s_k=128, h_q=8, h_kv=8,
          d=128, causal=0, scale=0.1, dtype=0) -> int:
    """Call the entry point with fake, 16-byte-aligned addresses: the kernel must refuse the
    shape before it touches memory or the GPU, so this runs without one."""
    fn = ctypes.CDLL(str(lib)).flash_attn_fwd
    fn.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int] * 7 + [ctypes.c_float, ctypes.c_int, ctypes.c_void_p]
    fn.restype = ctypes.c_int
    return fn(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, None)


@pytest.mark.parametrize("change, why", [
    (dict(d=80), "head dim 80 has no instantiation"),
    (dict(h_q=12, h_kv=8), "h_q is not a multiple of h_kv"),
    (dict(dtype=2), "dtype code 2 is neither bf16 nor fp16"),
    (dict(b=0), "empty batch"),
    (dict(q=4096 + 2), "q is not 16-byte aligned"),
])
def test_unsupported_shapes_return_nonzero(compiled, change, why):
    _, _, lib = compiled
    assert _call(lib, **change) != 0, why


def test_a_variant_whose_edit_no_longer_fits_is_refused(tmp_path, monkeypatch):
    """A base that changed under a variant's edit gives one clear error and writes nothing."""
    best = tmp_path / "best"
    best.mkdir()
    (best / "kernel.cu").write_text("// v9\nint x = 1;\n")
    # A candidate of its own (the live ones come and go). Its one edit fits once; then twice, then not at all.
    monkeypatch.setitem(variants.VARIANTS, "next_x2", ("kernel.cu", "// next_x2\n", [("int x = 1;", "int x = 2;")]))
    assert variants.render("next_x2", best) == "// next_x2\n// v9\nint x = 2;\n"
    (best / "kernel.cu").write_text("// v10\nint x = 1;\nint x = 1;\n")
    with pytest.raises(variants.VariantError, match="matches 2 times in best/kernel.cu"):
        variants.render("next_x2", best)
    (best / "kernel.cu").write_text("// a kernel.cu without the line next_x2 edits\n")
    with pytest.raises(variants.VariantError, match="matches 0 times in best/kernel.cu"):
        variants.render("next_x2", best)
    with pytest.raises(variants.VariantError, match="unknown variant"):
        variants.render("next_q4", best)
    out = subprocess.run([sys.executable, "-m", "lab.flash_attn_fwd.scripts.variants", "next_q4"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "unknown variant 'next_q4'" in out.stderr and "Traceback" not in out.stderr


def test_a_counted_edit_changes_every_place_or_refuses(tmp_path, monkeypatch):
    """(old, new, count): a text that occurs `count` times changes at every place; another count is refused."""
    best = tmp_path / "best"
    best.mkdir()
    (best / "kernel.cu").write_text("f<Dp>(a);\nf<Dp>(b);\n")
    monkeypatch.setitem(variants.VARIANTS, "next_dv", ("kernel.cu", "// next_dv\n", [("f<Dp>(", "f<Dv>(", 2)]))
    assert variants.render("next_dv", best) == "// next_dv\nf<Dv>(a);\nf<Dv>(b);\n"
    (best / "kernel.cu").write_text("f<Dp>(a);\nf<Dp>(b);\nf<Dp>(c);\n")  # a third place appeared in the base
    with pytest.raises(variants.VariantError, match="matches 3 times in best/kernel.cu, not 2 times"):
        variants.render("next_dv", best)
