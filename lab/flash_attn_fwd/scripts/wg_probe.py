"""How fast one consumer warpgroup runs a tile alone (device probe, session 16).

Question behind it: the unmasked launches of the grid end on a partial wave (4096 tiles of 128 rows
on 132 SMs = 31.03 waves, so the last 4 tiles run while 128 SMs idle; 2816 192-row tiles = 21.33).
Splitting each last-wave tile by rows over two CTAs (one live warpgroup each, no combine step)
pays only if a warpgroup alone runs its 64 rows in well under the whole tile's time. This times
launches of one shape at several s_q (one query tile per head, so each s_q leaves a different number
of warpgroups live) and prints x = t(s_q) / t(first s_q). With a 128-row tile, x(64) = 0.5 would mean
a lone warpgroup runs its rows as fast as two do (a row split of the tail saves half a tile), and
x(64) = 1 that it saves nothing.
All query heads share one K/V head (MQA), so K/V stay in L2 and the tiles are compute-bound. Session
16's first form gave every head its own K/V: each byte was read from HBM for one 128-row tile, both
row counts ran at ~3.4-3.9 TB/s, and x read 0.96-1.00 for that reason (results/2026-12-04-h200-s16-call2-wg-probe.txt).

On 128-row tiles the answer is x = 1 by construction: they compute a dead warpgroup's rows (only
192-row tiles skip them, since v21; session 16's call 3). The form that measures it: best/gen/
probe_rows192.cu (variants.py; every unmasked d96/d128 launch on 192-row tiles) with --rows 192,128,64,
i.e. 3, 2 and 1 live warpgroups (d256 stays on 128 rows there: a control).

Usage (repo root, GPU machine):
    python3 -m lab.flash_attn_fwd.scripts.wg_probe [KERNEL.cu] [--rows 128,64]
Writes $OUT/wg_probe.json. Not a harness run: no correctness check beyond finite output.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import subprocess
from pathlib import Path

import torch

OUT = Path(os.environ.get("OUT", "/tmp"))
# (d, s_k, b, h): b x h tiles per m-block; 1056 = 8 waves of 132, 8448 = 64 waves
SHAPES = [(128, 4096, 8, 132), (128, 512, 64, 132), (256, 4096, 8, 132), (96, 2048, 16, 132)]


def build(src: Path) -> ctypes.CDLL:
    so = Path("/tmp/ks_wg_probe.so")
    cmd = ["nvcc", "-gencode=arch=compute_90a,code=sm_90a", "-O3", "-std=c++17", "-shared",
           "-Xcompiler", "-fPIC", str(src), "-o", str(so)]
    subprocess.run(cmd, check=True)
    fn = ctypes.CDLL(str(so)).flash_attn_fwd
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int] * 7 + [ctypes.c_float, ctypes.c_int, ctypes.c_void_p]
    return fn


def time_ms(fn, b: int, s_q: int, s_k: int, h: int, d: int, reps: int = 20) -> float:
    q = torch.randn(b, s_q, h, d, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(b, s_k, 1, d, device="cuda", dtype=torch.bfloat16)  # one K/V head: L2-resident
    v = torch.randn_like(k)
    o = torch.empty_like(q)
    stream = torch.cuda.current_stream().cuda_stream

    def run() -> None:
        rc = fn(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), b, s_q, s_k, h, 1, d, 0, d ** -0.5, 0, stream)
        if rc:
            raise SystemExit(f"kernel returned {rc} on b{b} q{s_q} k{s_k} h{h} d{d}")

    for _ in range(3):
        run()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for a, e in ev:
        a.record()
        run()
        e.record()
    torch.cuda.synchronize()
    assert torch.isfinite(o.float()).all().item(), "non-finite output"
    return sorted(a.elapsed_time(e) for a, e in ev)[reps // 2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kernel", nargs="?", type=Path, default=Path("kernels/flash_attn_fwd/best/kernel.cu"))
    ap.add_argument("--rows", default="128,64", help="query rows per head to time, the first is the reference")
    args = ap.parse_args()
    rows_list = [int(r) for r in args.rows.split(",")]
    fn = build(args.kernel)
    rows = []
    for d, s_k, b, h in SHAPES:
        for _ in range(2):  # the second pass counts: in the first the clock settles
            t = {s_q: time_ms(fn, b, s_q, s_k, h, d) for s_q in rows_list}
        ref = t[rows_list[0]]
        rows.append({"d": d, "s_k": s_k, "b": b, "h": h, "t_ms": {str(k): v for k, v in t.items()},
                     "x": {str(k): v / ref for k, v in t.items()}})
    (OUT / "wg_probe.json").write_text(json.dumps({"source": str(args.kernel), "h_kv": 1, "rows": rows}, indent=1))
    print(f"{'d':>4} {'s_k':>6} {'heads':>6} " + " ".join(f"{'t' + str(r) + ' ms':>10} {'x':>6}" for r in rows_list))
    for r in rows:
        print(f"{r['d']:4d} {r['s_k']:6d} {r['b'] * r['h']:6d} "
              + " ".join(f"{r['t_ms'][str(q)]:10.4f} {r['x'][str(q)]:6.3f}" for q in rows_list))


if __name__ == "__main__":
    main()
