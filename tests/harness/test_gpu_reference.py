"""On a GPU: the fp32 reference with its scores on the tensor cores (bf16/fp16 inputs) agrees with the plain
fp32 chunked one far inside the FlashAttention rule's bound, and the fused low-precision reference sets the bound
the plain one did, on GQA, causal, prefill and ragged shapes."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from ks_tui.tasklib.attention import helpers as attention  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]

SHAPES = [
    dict(b=2, s_q=512, s_k=512, h_q=8, h_kv=2, d=128, causal=True, dtype="bf16"),
    dict(b=1, s_q=256, s_k=1024, h_q=4, h_kv=4, d=128, causal=True, dtype="bf16"),    # prefill, bottom-right
    dict(b=1, s_q=1007, s_k=1007, h_q=4, h_kv=1, d=64, causal=False, dtype="fp16"),  # ragged, MQA
    dict(b=1, s_q=384, s_k=384, h_q=2, h_kv=2, d=256, causal=True, dtype="bf16"),
]


@pytest.mark.parametrize("p", SHAPES)
def test_tensor_core_scores_match_the_fp32_reference(p, monkeypatch):
    if not attention._exact_scores_supported(torch.empty(1, dtype=torch.bfloat16, device="cuda")):
        pytest.skip("this torch has no out_dtype matrix product")
    p = dict(p, scale=1 / p["d"] ** 0.5)
    x = attention.make_inputs(p, torch.Generator(device="cuda").manual_seed(3), "cuda")
    fast = attention.reference(x, p)
    monkeypatch.setattr(attention, "_EXACT_SCORES", False)  # the plain fp32 path
    plain = attention.reference(x, p)
    lowp_err = float((attention.reference_lowp(x, p).float() - plain).abs().max())
    diff = float((fast - plain).abs().max())
    assert fast.dtype == torch.float32 and fast.isfinite().all()
    assert diff <= 1e-2 * lowp_err, (diff, lowp_err)  # a hundredth of what sets the bound
    monkeypatch.setitem(attention._CHUNK_ELEMS, "cuda", p["b"] * p["h_q"] * p["s_k"] * 7)  # 7-row chunks
    monkeypatch.setattr(attention, "_EXACT_SCORES", True)
    torch.testing.assert_close(attention.reference(x, p), fast, rtol=0, atol=1e-6)


@pytest.mark.parametrize("p", SHAPES)
def test_the_fused_low_precision_reference_sets_the_bound_the_plain_one_did(p, monkeypatch):
    """The GPU's low-precision reference (scale in the product's epilogue, bf16/fp16 softmax in and out) is as far
    from the fp32 answer as the one with fp32 passes between its products, whole or in chunks: the rule's bound
    (twice that distance) stays where it was."""
    p = dict(p, scale=1 / p["d"] ** 0.5)
    x = attention.make_inputs(p, torch.Generator(device="cuda").manual_seed(4), "cuda")
    ref = attention.reference(x, p)
    fused = attention.reference_lowp(x, p)
    plain = attention._attention_chunked(x["q"], x["k"], x["v"], p, x["q"].dtype, lowp=True)
    e_fused, e_plain = (float((o.float() - ref).abs().max()) for o in (fused, plain))
    assert fused.dtype == x["q"].dtype and fused.isfinite().all()
    assert 0.5 * e_plain <= e_fused <= 2 * e_plain, (e_fused, e_plain)
    monkeypatch.setitem(attention._CHUNK_ELEMS, "cuda", p["b"] * p["h_q"] * p["s_k"] * 7)  # 7-row chunks
    chunked = attention.reference_lowp(x, p)  # other product shapes may round a few elements the other way
    assert float((chunked.float() - fused.float()).abs().max()) <= e_plain
