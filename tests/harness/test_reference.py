"""The chunked attention reference and the fp32 tolerance rule, in process (torch on CPU)."""

from __future__ import annotations

import pytest
import torch

from ks_tui.tasklib.attention import helpers as attention
from ks_tui.harness.correctness import fp32_relative, lowp_relative

SHAPES = [
    dict(b=2, s_q=37, s_k=91, h_q=6, h_kv=2, d=16, causal=True),    # GQA, s_q < s_k
    dict(b=1, s_q=64, s_k=64, h_q=4, h_kv=1, d=32, causal=True),    # MQA, square
    dict(b=1, s_q=29, s_k=53, h_q=3, h_kv=3, d=8, causal=False),
    dict(b=1, s_q=40, s_k=13, h_q=2, h_kv=1, d=8, causal=True),     # s_q > s_k: rows with no key
]


def _inputs(p, seed=0):
    return attention.make_inputs(p, torch.Generator().manual_seed(seed))


def _plain(x, p):
    """Unchunked fp64 attention with explicit head mapping and mask, for comparison."""
    q, k, v = (x[n].double() for n in ("q", "k", "v"))
    g = p["h_q"] // p["h_kv"]
    out = torch.zeros_like(q)
    for h in range(p["h_q"]):
        s = q[:, :, h] @ k[:, :, h // g].transpose(1, 2) * attention.scale_of(p)
        if p["causal"]:
            i = torch.arange(p["s_q"])[:, None]
            j = torch.arange(p["s_k"])[None, :]
            s = s.masked_fill(j > i + p["s_k"] - p["s_q"], float("-inf"))
        out[:, :, h] = torch.softmax(s, -1).nan_to_num(0.0) @ v[:, :, h // g]
    return out


@pytest.mark.parametrize("p", SHAPES)
def test_chunked_reference_equals_plain_attention(p, monkeypatch):
    x = _inputs(p)
    whole = attention.reference(x, p)
    monkeypatch.setitem(attention._CHUNK_ELEMS, "cpu", 1)  # one query row per chunk
    chunked = attention.reference(x, p)
    assert whole.dtype == torch.float64
    torch.testing.assert_close(chunked, whole, rtol=0, atol=1e-12)
    torch.testing.assert_close(whole, _plain(x, p), rtol=0, atol=1e-12)


@pytest.mark.parametrize("p", [sh for sh in SHAPES if sh["causal"]])
def test_chunked_lowp_reference_equals_the_whole_one(p, monkeypatch):
    # Causal chunks leave out keys no row of the chunk sees; that must change nothing.
    x = {k: v.to(torch.bfloat16) for k, v in _inputs(p).items()}
    whole = attention.reference_lowp(x, p)
    monkeypatch.setitem(attention._CHUNK_ELEMS, "cpu", 1)
    chunked = attention.reference_lowp(x, p)
    assert chunked.dtype == torch.bfloat16
    torch.testing.assert_close(chunked.float(), whole.float(), rtol=0, atol=1e-2)
    assert chunked.isfinite().all()


@pytest.mark.parametrize("p", SHAPES[:3])
def test_reference_agrees_with_torch_sdpa(p):
    x = _inputs(p, 1)
    got = attention.sdpa_baseline(x, p)().transpose(1, 2)
    torch.testing.assert_close(got.double(), attention.reference(x, p), rtol=0, atol=1e-5)


def test_rows_with_no_visible_key_are_zero():
    p = dict(b=1, s_q=10, s_k=4, h_q=2, h_kv=1, d=8, causal=True)
    ref = attention.reference(_inputs(p), p)
    assert torch.all(ref[:, :6] == 0)          # query i sees key j <= i - 6
    assert torch.all(ref[:, 6:].abs().sum(-1) > 0)


def test_fp32_rule_passes_fp32_and_fails_zeros_and_bf16():
    p = SHAPES[0]
    x = _inputs(p, 2)
    ref = attention.reference(x, p)
    fp32 = attention.sdpa_baseline(x, p)().transpose(1, 2).contiguous()
    assert fp32_relative(fp32, ref, 1e-4, 1e-6)["ok"]
    assert not fp32_relative(torch.zeros_like(fp32), ref, 1e-4, 1e-6)["ok"]
    assert not fp32_relative(fp32.to(torch.bfloat16).float(), ref, 1e-4, 1e-6)["ok"]
    holes = fp32.clone()
    holes[0, 3] = float("nan")
    verdict = fp32_relative(holes, ref, 1e-4, 1e-6)
    assert not verdict["ok"] and verdict["nonfinite"] == p["h_q"] * p["d"]
    assert verdict["where"] == "index 0,3,0,0"


def test_lowp_rule_is_relative_to_the_low_precision_error():
    p = dict(SHAPES[0], dtype="bf16")
    x = attention.make_inputs(p, torch.Generator().manual_seed(3))
    ref32 = attention.reference(x, p)
    lowp = attention.reference_lowp(x, p)
    assert ref32.dtype == torch.float32 and lowp.dtype == torch.bfloat16
    assert lowp_relative(lowp, ref32, lowp, 2.0, 1e-5)["ok"]
    assert not lowp_relative(torch.zeros_like(lowp), ref32, lowp, 2.0, 1e-5)["ok"]
    assert not lowp_relative(lowp.to(torch.float8_e4m3fn).to(torch.bfloat16), ref32, lowp, 2.0, 1e-5)["ok"]
