"""The seed kernel.cu compiles with nvcc for sm_90a; its ABI refuses bad shapes.

Compile-only: no GPU is needed (CI has nvcc but no GPU). Skipped only where nvcc is absent. best/kernel.cu, whose
cold build takes minutes of nvcc, is built the same way by the lab suite (lab/flash_attn_fwd/tests/test_best_build.py).
"""

from __future__ import annotations

import ctypes
import shutil
from pathlib import Path

import pytest

from ks_tui.harness.build import build
from ks_tui.task import load_task
from tests.conftest import run_wide_dir, run_wide_lock

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


# The task's kernel files and the kernel instantiations each must have: one per dtype (bf16, fp16) and head dim
# (64, 96, 128, 256).
INSTANTIATIONS = {"kernel.cu": 8}
KERNELS = list(INSTANTIATIONS)


def source_of(name: str) -> Path:
    return REPO / "kernels/flash_attn_fwd" / name


@pytest.fixture(scope="module", params=KERNELS)
def compiled(request, tmp_path_factory):
    task = load_task("flash_attn_fwd", REPO)
    source = source_of(request.param)
    import os

    # This run's build cache, which tests/harness shares (test_bundled_tasks builds the same seed kernel with the
    # same command): cold, nothing cached from other runs, and one nvcc build of the seed per run whichever test
    # comes first; the other waits for it on the lock and reads the same record.
    cache = run_wide_dir(tmp_path_factory, "ks-cache")
    old = os.environ.get("KS_CACHE_DIR")
    os.environ["KS_CACHE_DIR"] = str(cache)
    try:
        with run_wide_lock(tmp_path_factory, f"build-{task.name}-{source.name}"):
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
        # a serialised wgmma pipeline (C7511/C7512 and kin) has cost every candidate that had one (lab/flash_attn_fwd/IDEAS.md)
        assert k["perf_warnings"] == [], f"{k['name']}: {k['perf_warnings']}"
        assert k["stack_bytes"] >= 0


@pytest.mark.parametrize("name", [*KERNELS, "best/kernel.cu"])
def test_uses_no_library_headers(name):
    text = source_of(name).read_text()
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
