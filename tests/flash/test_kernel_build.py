"""The seed kernel.cu and best/kernel.cu compile with nvcc for sm_90a; their ABI refuses bad shapes.

Compile-only: no GPU is needed (CI has nvcc but no GPU). Skipped only where nvcc is absent.
"""

from __future__ import annotations

import ctypes
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ks_tui.harness.build import build
from ks_tui.task import load_task

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


_spec = importlib.util.spec_from_file_location("flash_variants", REPO / "kernels/flash_attn_fwd/scripts/variants.py")
variants = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(variants)


# The task's seed and the fastest kernel so far, with the kernel instantiations each must have:
# bf16 and fp16, each for head dims 64, 96, 128 and 256; best/kernel.cu has two epilogues (TMA
# store for short launches, registers for long ones) for every head dim (d64 on 192-row tiles);
# d96/d128 on long keys (both masks) also run 160-key blocks (register epilogue only); d64 and
# d256 unmasked launches have their own instantiations without the causal-only diagonal-block
# code (v27's kHalfDiag switch); d96/d128 also run 192-row tiles, on long keys (both masks,
# register epilogue; v29) and unmasked on short keys (TMA epilogue; v30). Since v33 every unmasked
# d96/d128 launch runs a function of its own (causal 0 at compile time: +6 a dtype), and the 128-key
# 128-row d96/d128 functions with the register epilogue, never launched, are gone (-2 a dtype): 22 a dtype.
# Since v34 causal d256 runs the TMA epilogue at every s_k (its register-epilogue function gone): 21 a dtype.
# Since v36 every d96/d128 launch runs the TMA epilogue on 128-key blocks: the 160-key and 192-row register-epilogue
# functions go (-8 a dtype) and the causal 192-row d96/d128 ones get the TMA epilogue (+2 a dtype): 15 a dtype.
# Since v37 causal d64 runs the TMA epilogue at every s_k (its register-epilogue function gone): 14 a dtype.
# Since v41 d256's long launches run 80-key blocks, both masks (+2 a dtype), and unmasked d256 on 128-key blocks has
# the TMA epilogue only (-1 a dtype): 15 a dtype. Since v42 d256's middle launches run 64-key blocks, both masks (+2 a
# dtype): 17 a dtype.
INSTANTIATIONS_BEST = 34
INSTANTIATIONS = {"kernel.cu": 8, "best/kernel.cu": INSTANTIATIONS_BEST,
                  # candidates made by scripts/variants.py (edits of the files above), as "variant:NAME": count
                  **{f"variant:{name}": variants.INSTANTIATIONS.get(name, INSTANTIATIONS_BEST) for name in variants.VARIANTS}}
KERNELS = list(INSTANTIATIONS)


def source_of(name: str, tmp: Path) -> Path:
    """The file to compile: a committed one, or a variant written out from its base."""
    if name.startswith("variant:"):
        path = tmp / f"{name.split(':', 1)[1]}.cu"
        path.write_text(variants.render(name.split(":", 1)[1]))
        return path
    return REPO / "kernels/flash_attn_fwd" / name


@pytest.fixture(scope="module", params=KERNELS)
def compiled(request, tmp_path_factory):
    task = load_task("flash_attn_fwd", REPO)
    source = source_of(request.param, tmp_path_factory.mktemp("src"))
    import os

    cache = tmp_path_factory.mktemp("ks-cache")
    old = os.environ.get("KS_CACHE_DIR")
    os.environ["KS_CACHE_DIR"] = str(cache)  # cold: nothing cached from other runs
    try:
        record, lib = build(source, language=task.language, compiler=task.build.compiler,
                            flags=task.build.flags, arch=task.build.arch,
                            shown_name=source.name, timeout=600)
    finally:
        if old is None:
            os.environ.pop("KS_CACHE_DIR")
        else:
            os.environ["KS_CACHE_DIR"] = old
    return request.param, record, lib


def test_compiles_for_sm90a(compiled):
    _, record, lib = compiled
    assert record["ok"], record["log"][-2000:]
    assert "compute_90a" in record["command"] and "code=sm_90a" in record["command"]
    assert lib is not None and lib.is_file()


def test_ptxas_report_lists_every_instantiation(compiled):
    name, record, _ = compiled
    kernels = record["kernels"]
    assert len(kernels) == INSTANTIATIONS[name], [k["name"] for k in kernels]
    for k in kernels:
        assert 0 < k["registers"] <= 255
        assert k["spills_bytes"] == 0, f"{k['name']} spills {k['spills_bytes']} bytes"
        # a serialised wgmma pipeline (C7511/C7512 and kin) has cost every candidate that had one (IDEAS.md)
        assert k["perf_warnings"] == [], f"{k['name']}: {k['perf_warnings']}"
        assert k["stack_bytes"] >= 0


@pytest.mark.parametrize("name", KERNELS)
def test_uses_no_library_headers(name, tmp_path):
    text = source_of(name, tmp_path).read_text()
    includes = [ln.split()[1] for ln in text.splitlines() if ln.startswith("#include")]
    for banned in ("cutlass", "cute", "cublas", "cudnn", "torch", "ATen"):
        assert not any(banned in inc for inc in includes), includes


def _call(lib: Path, q=4096, k=4096, v=4096, o=4096, b=1, s_q=128, s_k=128, h_q=8, h_kv=8,
          d=128, causal=0, scale=0.1, dtype=0) -> int:
    """Call the entry point with fake, 16-byte-aligned addresses: the kernel must refuse the
    shape before it touches memory or the GPU, so this runs without one."""
    fn = ctypes.CDLL(str(lib)).flash_attn_fwd
    fn.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int] * 7 + [ctypes.c_float, ctypes.c_int,
                                                                 ctypes.c_void_p]
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
    out = subprocess.run([sys.executable, str(REPO / "kernels/flash_attn_fwd/scripts/variants.py"), "next_q4"],
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
