"""On a GPU: torch SDPA baselines run, pass their probe, and compute the task's attention.

Skipped without CUDA. (In the first device run a layout bug made every baseline "unavailable"
and the bench still reported `correct` with no speedup; this test would have stopped it.)
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from ks_tui.harness import attention  # noqa: E402
from ks_tui.harness.gpu_baselines import BASELINES, Unavailable  # noqa: E402

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


def _scenario(**kw):
    p = dict(b=2, s_q=1000, s_k=1000, h_q=16, h_kv=4, d=128, causal=True, dtype="bf16")
    p.update(kw)
    p["scale"] = p["d"] ** -0.5
    return p


@pytest.mark.parametrize("name", ["sdpa_cudnn", "sdpa_flash"])
@pytest.mark.parametrize("kw", [dict(), dict(causal=False, d=64, h_kv=16), dict(dtype="fp16", d=256)])
def test_sdpa_baseline_matches_the_reference(name, kw):
    p = _scenario(**kw)
    gen = torch.Generator(device="cuda").manual_seed(3)
    inputs = attention.make_inputs(p, gen, "cuda")
    out = BASELINES[name](inputs, p)()
    assert out.shape == (p["b"], p["s_q"], p["h_q"], p["d"])
    ref = attention.reference(inputs, p)
    lowp = attention.reference_lowp(inputs, p)
    assert (out.float() - ref).abs().max() <= 2 * (lowp.float() - ref).abs().max() + 1e-3


def test_flash_handles_bottom_right_prefill_and_cudnn_is_honest_about_it():
    p = _scenario(s_q=256, s_k=1024, h_kv=16)
    gen = torch.Generator(device="cuda").manual_seed(4)
    inputs = attention.make_inputs(p, gen, "cuda")
    ref = attention.reference(inputs, p)
    out = BASELINES["sdpa_flash"](inputs, p)()
    assert (out.float() - ref).abs().max() < 5e-2
    try:
        out = BASELINES["sdpa_cudnn"](inputs, p)()
    except Unavailable as exc:  # torch 2.11: cuDNN's is_causal is top-left here
        assert "probe" in str(exc)
    else:  # a cuDNN that aligns bottom-right must then be right
        assert (out.float() - ref).abs().max() < 5e-2
