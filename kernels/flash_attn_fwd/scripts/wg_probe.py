"""How fast one consumer warpgroup runs a tile alone (device probe, session 16).

Question behind it: the unmasked launches of the grid end on a partial wave (4096 tiles of 128 rows
on 132 SMs = 31.03 waves, so the last 4 tiles run while 128 SMs idle; 2816 192-row tiles = 21.33).
Splitting each last-wave tile by rows over two CTAs (one live warpgroup each, no combine step)
pays only if a warpgroup alone runs its 64 rows in well under the whole tile's time. This times
tiles with 1 and 2 live warpgroups of the same launch shape (s_q 64 against 128: the same number
of 128-row tiles, 8 or 64 waves) and prints x = t(64 rows) / t(128 rows):
x = 0.5 means a lone warpgroup is as fast a row as two, so a row split of the tail saves half a
tile per launch; x = 1 means it saves nothing.
All query heads share one K/V head (MQA), so K/V stay in L2 and the tiles are compute-bound. Session
16's first form gave every head its own K/V: each byte was read from HBM for one 128-row tile, both
row counts ran at ~3.4-3.9 TB/s, and x read 0.96-1.00 for that reason (results/2026-12-04-h200-s16-call2-wg-probe.txt).

Usage (repo root, GPU machine): python3 kernels/flash_attn_fwd/scripts/wg_probe.py [KERNEL.cu]
Writes $OUT/wg_probe.json. Not a harness run: no correctness check beyond finite output.
"""
from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from pathlib import Path

import torch

SRC = Path(sys.argv[1] if len(sys.argv) > 1 else "kernels/flash_attn_fwd/best/kernel.cu")
OUT = Path(os.environ.get("OUT", "/tmp"))
# (d, s_k, b, h): b x h tiles per m-block; 1056 = 8 waves of 132, 8448 = 64 waves
SHAPES = [(128, 4096, 8, 132), (128, 512, 64, 132), (256, 4096, 8, 132), (96, 2048, 16, 132)]


def build() -> ctypes.CDLL:
    so = Path("/tmp/ks_wg_probe.so")
    cmd = ["nvcc", "-gencode=arch=compute_90a,code=sm_90a", "-O3", "-std=c++17", "-shared",
           "-Xcompiler", "-fPIC", str(SRC), "-o", str(so)]
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
    fn = build()
    rows = []
    for d, s_k, b, h in SHAPES:
        t = {s_q: time_ms(fn, b, s_q, s_k, h, d) for s_q in (128, 64, 128, 64)}  # second pair: the clock settled
        rows.append({"d": d, "s_k": s_k, "b": b, "h": h, "t128_ms": t[128], "t64_ms": t[64], "x": t[64] / t[128]})
    (OUT / "wg_probe.json").write_text(json.dumps({"source": str(SRC), "h_kv": 1, "rows": rows}, indent=1))
    print(f"{'d':>4} {'s_k':>6} {'tiles':>6} {'t128 ms':>9} {'t64 ms':>9} {'x':>6}")
    for r in rows:
        print(f"{r['d']:4d} {r['s_k']:6d} {r['b'] * r['h']:6d} {r['t128_ms']:9.4f} {r['t64_ms']:9.4f} {r['x']:6.3f}")


if __name__ == "__main__":
    main()
