"""What the references cost, and whether a low-precision reference with fewer memory passes keeps the bound.

  python3 lab/flash_attn_fwd/device/reference_probe.py [--ids ID ...]

Per scenario (the quick subset and the longest ones by default), on the GPU, one draw: the wall time of the fp32
reference (helpers.reference), of the low-precision one as it was (bf16 scores, a pass to fp32 and the scale, fp32
softmax, a pass back to bf16) and as it is (helpers.reference_lowp on the GPU: the scale applied in the score
product's fp32 epilogue and rounded once to bf16, softmax reading bf16 and writing bf16 probabilities,
accumulating in fp32); and max|lowp - ref32| for both, whose ratio is what the rule's bound would move by.
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


def wall(fn, *args):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    r = fn(*args)
    torch.cuda.synchronize()
    return r, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ids", nargs="*")
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
        print(json.dumps({"id": sc.id, "ref_ms": round(t_ref * 1e3, 1), "lowp_ms": round(t_low * 1e3, 1),
                          "now_ms": round(t_fus * 1e3, 1), "err_lowp": e_low, "err_now": e_fus,
                          "ratio": round(e_fus / e_low, 3)}), flush=True)
        del inputs, ref, low, fus
    print(json.dumps({"summary": {k: round(v, 3) for k, v in tot.items()},
                      "ratio_min": round(min(ratios), 3), "ratio_max": round(max(ratios), 3)}))


if __name__ == "__main__":
    main()
