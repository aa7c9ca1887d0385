"""What the references cost, and whether a low-precision reference with fewer memory passes keeps the bound.

  python3 lab/flash_attn_fwd/device/reference_probe.py [--ids ID ...]

Per scenario (the quick subset and the longest ones by default), on the GPU, one draw: the wall time of the fp32
reference (helpers.reference), of the low-precision one as it was (bf16 scores, a pass to fp32 and the scale, fp32
softmax, a pass back to bf16) and as it is (helpers.reference_lowp on the GPU: the scale applied in the score
product's fp32 epilogue and rounded once to bf16, softmax reading bf16 and writing bf16 probabilities,
accumulating in fp32); and max|lowp - ref32| for both, whose ratio is what the rule's bound would move by.
With --split, also an fp32 reference whose P V runs on the tensor cores: P split into two bf16 parts
(P = hi + lo to 16 bits; V is bf16, so each product is exact and accumulates in fp32), its time, and both fp32
references' distance to an fp64 one (err64), against the low-precision distance that sets the bound.
Prints one JSON line per scenario and a summary line.
"""
import argparse
import json
import time
from pathlib import Path

import torch

from ks_tui.task import load_task
from ks_tui.tasklib.attention import helpers as H

LONG = ["d128-h16-16-s32768", "d128-h16-16-s32768-causal", "d256-h8-8-s32768", "d64-h32-32-s32768-causal",
        "d128-h32-8-s16384-causal", "d128-h16-16-q8192-k32768-causal"]


def lowp_passes(inputs, p):
    """The low-precision reference as it was: bf16 scores, a pass to fp32 and the scale, fp32 softmax, back."""
    return H._attention_chunked(inputs["q"], inputs["k"], inputs["v"], p, inputs["q"].dtype, lowp=True)


def ref_split(inputs, p):
    """The fp32 reference with P V as two bf16 products accumulating in fp32 (P's high and low bf16 parts)."""
    q, k, v = inputs["q"], inputs["k"], inputs["v"]
    b, s_q, s_k, h_q, h_kv, d = (int(p[x]) for x in ("b", "s_q", "s_k", "h_q", "h_kv", "d"))
    g, bh = h_q // h_kv, b * h_kv
    causal, scale = bool(p["causal"]), H.scale_of(p)
    kb = k.permute(0, 2, 1, 3).reshape(bh, s_k, d)
    vb = v.permute(0, 2, 1, 3).reshape(bh, s_k, d)
    out = torch.empty((b, s_q, h_q, d), dtype=torch.float32, device=q.device)
    rows = max(1, min(s_q, H._CHUNK_ELEMS["cuda"] // max(1, b * h_q * s_k)))
    for i0 in range(0, s_q, rows):
        i1, c = min(s_q, i0 + rows), min(s_q, i0 + rows) - i0
        n_k = min(s_k, i1 + s_k - s_q) if causal else s_k
        if n_k <= 0:
            out[:, i0:i1] = 0
            continue
        qc = q[:, i0:i1].reshape(b, c, h_kv, g, d).permute(0, 2, 3, 1, 4).reshape(bh, g * c, d)
        zero = torch.zeros((1, 1, 1), dtype=torch.float32, device=q.device).expand(bh, g * c, n_k)
        scores = torch.baddbmm(zero, qc, kb[:, :n_k].transpose(1, 2), beta=0, alpha=scale, out_dtype=torch.float32)
        if causal:
            H._causal_strip(scores.view(bh, g, c, n_k), i0, i1, n_k, p)
        probs = torch.softmax(scores, dim=-1)
        del scores
        if causal and s_q > s_k:
            probs.nan_to_num_(0.0)
        hi = probs.to(q.dtype)
        lo = probs.sub_(hi).to(q.dtype)
        del probs
        zo = torch.zeros((1, 1, 1), dtype=torch.float32, device=q.device).expand(bh, g * c, d)
        oc = torch.baddbmm(zo, hi, vb[:, :n_k], beta=0, out_dtype=torch.float32)
        oc += torch.baddbmm(zo, lo, vb[:, :n_k], beta=0, out_dtype=torch.float32)
        out[:, i0:i1] = oc.view(b, h_kv, g, c, d).permute(0, 3, 1, 2, 4).reshape(b, c, h_q, d)
    return out


def ref64(inputs, p):
    return H._attention_chunked(inputs["q"], inputs["k"], inputs["v"], p, torch.float64)


def wall(fn, *args):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    r = fn(*args)
    torch.cuda.synchronize()
    return r, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ids", nargs="*")
    ap.add_argument("--split", action="store_true")
    a = ap.parse_args()
    task = load_task("kernels/flash_attn_fwd", Path.cwd())
    ids = a.ids or (list(task.quick) + LONG)
    tot = {"ref": 0.0, "lowp": 0.0, "fused": 0.0}
    ratios = []
    for sc in task.select(quick=False, ids=ids):
        gen = torch.Generator(device="cuda").manual_seed(5)
        inputs = H.make_inputs(sc.params, gen, "cuda")
        H.reference(inputs, sc.params)  # first calls (cuBLAS handles, plans) off the clock
        ref, t_ref = wall(H.reference, inputs, sc.params)
        low, t_low = wall(lowp_passes, inputs, sc.params)
        fus, t_fus = wall(H.reference_lowp, inputs, sc.params)
        e_low = (low.float() - ref).abs().max().item()
        e_fus = (fus.float() - ref).abs().max().item()
        tot["ref"] += t_ref
        tot["lowp"] += t_low
        tot["fused"] += t_fus
        ratios.append(e_fus / e_low)
        row = {"id": sc.id, "ref_ms": round(t_ref * 1e3, 1), "lowp_ms": round(t_low * 1e3, 1),
               "now_ms": round(t_fus * 1e3, 1), "err_lowp": e_low, "err_now": e_fus, "ratio": round(e_fus / e_low, 3)}
        if a.split:
            ref_split(inputs, sc.params)
            spl, t_spl = wall(ref_split, inputs, sc.params)
            r64 = ref64(inputs, sc.params)
            tot["split"] = tot.get("split", 0.0) + t_spl
            row.update(split_ms=round(t_spl * 1e3, 1), err64_ref=(ref.double() - r64).abs().max().item(),
                       err64_split=(spl.double() - r64).abs().max().item(), split_vs_ref=(spl - ref).abs().max().item())
            del spl, r64
        print(json.dumps(row), flush=True)
        del inputs, ref, low, fus
    print(json.dumps({"summary": {k: round(v, 3) for k, v in tot.items()},
                      "ratio_min": round(min(ratios), 3), "ratio_max": round(max(ratios), 3)}))


if __name__ == "__main__":
    main()
