"""Attention helpers for both kernel ABIs of DESIGN.md, so a task's reference.py is a few lines.

Layout everywhere is [batch, seqlen, heads, head_dim], contiguous. GQA: query head h reads
kv head h // (h_q // h_kv). Causal is bottom-right aligned: query i sees key j when
j <= i + s_k - s_q. A query row that sees no key at all (causal with s_q > s_k) is defined
to output zeros — the reference, the seed kernels and the docs agree on this.

Child-process only (imports torch).
"""

from __future__ import annotations

import ctypes

import torch

from ks_tui.harness.reference_api import Unavailable

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
ABI_DTYPE_CODE = {"bf16": 0, "fp16": 1}   # the GPU ABI's `dtype` argument
# Largest score block the chunked reference builds at once (elements), per device.
_CHUNK_ELEMS = {"cpu": 1 << 24, "cuda": 1 << 28}

__all__ = ["make_inputs", "make_output", "call_cpu", "call_gpu", "reference", "reference_lowp",
           "sdpa_baseline", "CPU_BASELINES", "Unavailable", "dtype_of", "shape_of", "extra_limits"]


def dtype_of(p: dict) -> torch.dtype:
    return DTYPES[p.get("dtype", "fp32")]


def scale_of(p: dict) -> float:
    return float(p["scale"]) if "scale" in p else 1.0 / float(p["d"]) ** 0.5


def shape_of(p: dict) -> dict:
    return {k: p[k] for k in ("b", "s_q", "s_k", "h_q", "h_kv", "d", "causal") if k in p} | (
        {"dtype": p["dtype"]} if "dtype" in p else {})


def make_inputs(p: dict, gen: torch.Generator, device: str = "cpu") -> dict:
    """Fresh standard-normal q, k, v (rounded to the scenario dtype); never all zeros."""
    dt = dtype_of(p)

    def rand(s, h):
        return torch.randn((p["b"], s, h, p["d"]), generator=gen, device=device,
                           dtype=torch.float32).to(dt)

    return {"q": rand(p["s_q"], p["h_q"]), "k": rand(p["s_k"], p["h_kv"]), "v": rand(p["s_k"], p["h_kv"])}


def make_output(p: dict, inputs: dict) -> torch.Tensor:
    q = inputs["q"]
    return torch.empty((p["b"], p["s_q"], p["h_q"], p["d"]), dtype=q.dtype, device=q.device)


def _ptr(t: torch.Tensor) -> ctypes.c_void_p:
    return ctypes.c_void_p(t.data_ptr())


def _set_signature(fn, gpu: bool) -> None:
    if getattr(fn, "_ks_signature", None) == gpu:
        return
    args = [ctypes.c_void_p] * 4 + [ctypes.c_int] * 7 + [ctypes.c_float]
    if gpu:
        args += [ctypes.c_int, ctypes.c_void_p]
    fn.argtypes, fn.restype = args, ctypes.c_int
    fn._ks_signature = gpu


def _ints(p: dict) -> list[int]:
    return [int(p[k]) for k in ("b", "s_q", "s_k", "h_q", "h_kv", "d")] + [int(bool(p["causal"]))]


def call_cpu(fn, inputs: dict, out: torch.Tensor, p: dict, stream: int = 0) -> int:
    """attention_forward(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale)."""
    _set_signature(fn, gpu=False)
    return fn(_ptr(inputs["q"]), _ptr(inputs["k"]), _ptr(inputs["v"]), _ptr(out), *_ints(p), scale_of(p))


def call_gpu(fn, inputs: dict, out: torch.Tensor, p: dict, stream: int = 0) -> int:
    """flash_attn_fwd(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, stream)."""
    _set_signature(fn, gpu=True)
    return fn(_ptr(inputs["q"]), _ptr(inputs["k"]), _ptr(inputs["v"]), _ptr(out), *_ints(p), scale_of(p),
              ABI_DTYPE_CODE[p.get("dtype", "bf16")], ctypes.c_void_p(stream))


def _causal_strip(scores, i0: int, i1: int, n_k: int, p: dict) -> None:
    """Mask, in place, the keys rows i0..i1-1 must not see: only columns past the chunk's first row's
    last visible key can be masked, so only that strip (at most i1 - i0 wide) is touched."""
    off = int(p["s_k"]) - int(p["s_q"])
    lo = max(0, i0 + off + 1)
    if lo >= n_k:
        return
    last_key = torch.arange(i0, i1, device=scores.device) + off
    cols = torch.arange(lo, n_k, device=scores.device)
    scores[..., lo:n_k].masked_fill_(cols[None, :] > last_key[:, None], float("-inf"))


def _attention_chunked(q, k, v, p: dict, work_dtype: torch.dtype, lowp: bool = False) -> torch.Tensor:
    """softmax(q k^T * scale + mask) v, built over blocks of query rows.

    Only [chunk, s_k] scores exist at once, so 32k x 32k never materialises. `lowp` keeps the
    matmuls in the input precision (softmax in fp32, probabilities rounded back), which is
    the FlashAttention test's low-precision reference.
    """
    b, s_q, s_k, h_q, h_kv, d = (int(p[x]) for x in ("b", "s_q", "s_k", "h_q", "h_kv", "d"))
    g = h_q // h_kv
    causal, scale = bool(p["causal"]), scale_of(p)
    kh = k.to(work_dtype).permute(0, 2, 1, 3).unsqueeze(2)        # [b, h_kv, 1, s_k, d]
    vh = v.to(work_dtype).permute(0, 2, 1, 3).unsqueeze(2)
    out = torch.empty((b, s_q, h_q, d), dtype=work_dtype, device=q.device)
    budget = _CHUNK_ELEMS.get(q.device.type, 1 << 24)
    rows = max(1, min(s_q, budget // max(1, b * h_q * s_k)))
    for i0 in range(0, s_q, rows):
        i1 = min(s_q, i0 + rows)
        # Causal: keys past the chunk's last visible one are masked for every row in it, so
        # they are left out (exp(-inf) adds exactly 0): half the score work on long rows.
        n_k = min(s_k, i1 + s_k - s_q) if causal else s_k
        if n_k <= 0:  # no row of this chunk sees any key
            out[:, i0:i1] = 0
            continue
        qc = q[:, i0:i1].to(work_dtype).reshape(b, i1 - i0, h_kv, g, d).permute(0, 2, 3, 1, 4)
        if not lowp:  # scale the small q block, not the big score block (one pass fewer)
            qc = qc * scale
        scores = torch.matmul(qc, kh[..., :n_k, :].transpose(-1, -2))  # [b, h_kv, g, c, n_k]
        if lowp:
            scores = scores.float() * scale
        if causal:
            _causal_strip(scores, i0, i1, n_k, p)
        probs = torch.softmax(scores, dim=-1)
        if causal and s_q > s_k:  # only then can a row see no key: NaN -> zeros
            probs.nan_to_num_(0.0)
        oc = torch.matmul(probs.to(work_dtype), vh[..., :n_k, :])  # [b, h_kv, g, c, d]
        out[:, i0:i1] = oc.permute(0, 3, 1, 2, 4).reshape(b, i1 - i0, h_q, d)
    return out


def _exact_scores_supported(q) -> bool:
    """Whether this torch multiplies bf16/fp16 matrices into an fp32 result on the GPU (`out_dtype`)."""
    global _EXACT_SCORES
    if _EXACT_SCORES is None:
        try:
            a = torch.ones((1, 2, 16), dtype=q.dtype, device=q.device)
            zero = torch.zeros((1, 1, 1), dtype=torch.float32, device=q.device).expand(1, 2, 2)
            r = torch.baddbmm(zero, a, a.transpose(1, 2), beta=0, alpha=0.5, out_dtype=torch.float32)
            _EXACT_SCORES = bool(r.dtype == torch.float32 and float(r[0, 0, 0]) == 8.0)
        except (RuntimeError, TypeError, NotImplementedError):
            _EXACT_SCORES = False
    return _EXACT_SCORES


_EXACT_SCORES: bool | None = None


def _attention_blocks_gpu(q, k, v, p: dict, lowp: bool) -> torch.Tensor:
    """Attention of bf16/fp16 inputs on the GPU, over blocks of query rows, as two batched matrix products with
    q k^T on the tensor cores (the scale applied in fp32 as that product's alpha). Same chunks and mask as
    `_attention_chunked`.

    lowp=False, the fp32 reference: a product of two bf16 (or fp16) numbers is exact in fp32, so q k^T with fp32
    accumulation and an fp32 result is as accurate as an fp32 matrix product, at a tenth of the time; P V stays
    an fp32 product (P is no low-precision number).
    lowp=True, the low-precision reference with the fewest passes over the score block: the scores rounded once to
    the input precision, softmax reading them and writing low-precision probabilities (accumulating in fp32), P V
    in the input precision with fp32 accumulation. The same roundings as `_attention_chunked(lowp=True)` (scores
    once, probabilities once, the output once), with the scale before the scores' rounding instead of after; a
    third of its memory traffic."""
    b, s_q, s_k, h_q, h_kv, d = (int(p[x]) for x in ("b", "s_q", "s_k", "h_q", "h_kv", "d"))
    g, bh = h_q // h_kv, b * h_kv
    causal, scale = bool(p["causal"]), scale_of(p)
    work = q.dtype if lowp else torch.float32
    product = {} if lowp else {"out_dtype": torch.float32}
    kb = k.permute(0, 2, 1, 3).reshape(bh, s_k, d)                 # [b*h_kv, s_k, d], input precision
    vb = v.permute(0, 2, 1, 3).reshape(bh, s_k, d).to(work)        # fp32: an exact widening
    out = torch.empty((b, s_q, h_q, d), dtype=work, device=q.device)
    rows = max(1, min(s_q, _CHUNK_ELEMS["cuda"] // max(1, b * h_q * s_k)))
    for i0 in range(0, s_q, rows):
        i1, c = min(s_q, i0 + rows), min(s_q, i0 + rows) - i0
        n_k = min(s_k, i1 + s_k - s_q) if causal else s_k
        if n_k <= 0:
            out[:, i0:i1] = 0
            continue
        qc = q[:, i0:i1].reshape(b, c, h_kv, g, d).permute(0, 2, 3, 1, 4).reshape(bh, g * c, d)
        zero = torch.zeros((1, 1, 1), dtype=work, device=q.device).expand(bh, g * c, n_k)
        scores = torch.baddbmm(zero, qc, kb[:, :n_k].transpose(1, 2), beta=0, alpha=scale, **product)
        if causal:
            _causal_strip(scores.view(bh, g, c, n_k), i0, i1, n_k, p)
        probs = torch.softmax(scores, dim=-1)
        if causal and s_q > s_k:
            probs.nan_to_num_(0.0)
        oc = torch.bmm(probs, vb[:, :n_k])                          # [b*h_kv, g*c, d]
        out[:, i0:i1] = oc.view(b, h_kv, g, c, d).permute(0, 3, 1, 2, 4).reshape(b, c, h_q, d)
    return out


def reference(inputs: dict, p: dict) -> torch.Tensor:
    """Higher precision than the inputs: fp64 for fp32 inputs, fp32 for bf16/fp16."""
    q = inputs["q"]
    if q.dtype != torch.float32 and q.is_cuda and _exact_scores_supported(q):
        return _attention_blocks_gpu(q, inputs["k"], inputs["v"], p, lowp=False)
    work = torch.float64 if q.dtype == torch.float32 else torch.float32
    return _attention_chunked(q, inputs["k"], inputs["v"], p, work)


def reference_lowp(inputs: dict, p: dict) -> torch.Tensor:
    """The same computed in the input precision (for the lowp_relative rule)."""
    q = inputs["q"]
    if q.dtype != torch.float32 and q.is_cuda:
        return _attention_blocks_gpu(q, inputs["k"], inputs["v"], p, lowp=True)
    return _attention_chunked(q, inputs["k"], inputs["v"], p, q.dtype, lowp=True)


def sdpa_args(inputs: dict, p: dict, lower_right: bool = True) -> tuple[tuple, dict]:
    """Arguments for torch's scaled_dot_product_attention on [b, h, s, d] views (no copies).

    `lower_right=False` passes plain is_causal even when s_q != s_k (top-left in most
    backends), for a backend that the lower-right mask object would reroute (cuDNN).
    """
    q, k, v = (inputs[x].transpose(1, 2) for x in ("q", "k", "v"))
    kw: dict = {"scale": scale_of(p)}
    if p["h_q"] != p["h_kv"]:
        kw["enable_gqa"] = True
    if p["causal"]:
        if p["s_q"] == p["s_k"] or not lower_right:
            kw["is_causal"] = True
        else:  # bottom-right alignment; SDPA's is_causal is top-left
            import warnings

            from torch.nn.attention.bias import causal_lower_right
            with warnings.catch_warnings():  # it warns about rows with no key when s_q > s_k
                warnings.simplefilter("ignore")
                kw["attn_mask"] = causal_lower_right(p["s_q"], p["s_k"])
    return (q, k, v), kw


def sdpa_baseline(inputs: dict, p: dict):
    """torch's own scaled_dot_product_attention with its default backend choice."""
    import torch.nn.functional as F

    args, kw = sdpa_args(inputs, p)
    return lambda: F.scaled_dot_product_attention(*args, **kw)


CPU_BASELINES = {"torch_sdpa": sdpa_baseline}


def avg_keys(p: dict) -> float:
    """Keys a query row sees on average, as FlashAttention counts them (bottom-right causal)."""
    s_q, s_k = p["s_q"], p["s_k"]
    return float(s_k) if not p["causal"] else (max(0, s_k - s_q) + s_k) / 2


def extra_limits(p: dict, device: dict) -> dict:
    """Attention's limit beyond FLOPs and bytes: one exponential per visible score, on the MUFU
    unit (16 per clock per SM on Ampere/Hopper), which no tensor core helps with."""
    from ks_tui.harness.sol import exp_limit_ms

    return exp_limit_ms(p, device, p["b"] * p["h_q"] * p["s_q"] * avg_keys(p))
