"""What each candidate's host code picks per scenario, replicated in Python from the .cu files' `dispatch` and
`launch`, to list the scenarios a candidate changes (the device script times those) and to check the replica
against the best kernel's own rule text.

    python3 -m lab.flash_attn_fwd.candidates.dispatch_model            # changed scenarios per candidate
    python3 -m lab.flash_attn_fwd.candidates.dispatch_model --ids c128  # one candidate's ids, space separated

A launch is (instantiation, host parameters): the instantiation is launch<T, Dp, kM, kQkSteps, kTmaEpi, kN,
kHalfDiag>; the host parameters are the causal section width `sec`, the tail cut and the split tail (v46). Two files
run a scenario the same way when both agree, so a candidate changes exactly the scenarios where they differ.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
SMS = 132
CANDIDATES = ("c128", "d256n64", "gqasec", "pre192")


def scenarios() -> list[dict]:
    """The task's 182 scenarios (id and shape), derived as task.yaml says."""
    spec = yaml.safe_load((REPO / "kernels/flash_attn_fwd/task.yaml").read_text())["scenarios"]
    out = []
    for head in spec["grid"]["head"]:
        for S in spec["grid"]["S"]:
            for causal in spec["grid"]["causal"]:
                p = dict(head, S=S, causal=causal, b=max(1, 32768 // S))
                p["s_k"] = S - 17 if p["kind"] == "ragged" else S
                p["s_q"] = S // 4 if p["kind"] == "prefill" else p["s_k"]
                sq = f"s{p['s_q']}" if p["s_q"] == p["s_k"] else f"q{p['s_q']}-k{p['s_k']}"
                p["id"] = (f"d{p['d']}-h{p['h_q']}-{p['h_kv']}-{sq}" + ("" if p["dtype"] == "bf16" else "-" + p["dtype"])
                           + ("-causal" if causal else ""))
                out.append(p)
    return out


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def launch_params(name: str, p: dict, inst: tuple) -> tuple:
    """`launch`'s host parameters: (sec or split_from, cut, run_tiles) as the kernel gets them."""
    Dp, kM, steps, tma, kN, half = inst
    b, s_q, s_k, h_q, h_kv, d, causal = p["b"], p["s_q"], p["s_k"], p["h_q"], p["h_kv"], p["d"], p["causal"]
    BN = kN
    rows = 64 * (3 if kM == 192 else 2) if Dp != 64 else 192
    num_m = _ceil(s_q, rows)
    num_bh = h_q * b
    tiles = num_bh * num_m
    sec, cut = 1, 0
    if causal:
        group = h_q // h_kv
        kv_bytes = 2 * s_k * d * 2
        kv_heads = max(1, ((4 << 20) if s_k <= 1024 else (16 << 20)) // kv_bytes)
        sec = min(kv_heads * group, num_bh)
        if Dp == 256 and s_k <= 1024 and s_q == s_k:
            sec = min(max(64 // num_m, 1), num_bh)
        if name == "gqasec" and Dp == 128 and steps == 8 and group > 1 and s_k <= 2048 and s_q == s_k:
            sec = min(max(64 // num_m, 1), num_bh)

        def blocks(m: int) -> int:
            kv_end = min(m * rows + rows + s_k - s_q, s_k)
            return _ceil(kv_end, BN) if kv_end > 0 else 0

        heaviest = blocks(num_m - 1)
        while (Dp != 256 and s_k > 4096 and cut < num_m - 1 and (cut + 1) * num_bh <= 4 * SMS
               and 2 * blocks(cut) <= heaviest):
            cut += 1
    grid = min(tiles, SMS)
    split_from, run_tiles = tiles, tiles
    split_tail = Dp == 128 and kM == 192 and not half
    if split_tail and tiles > grid and tiles % grid > 0 and 3 * (tiles % grid) <= grid:
        split_from = tiles - tiles % grid
        run_tiles = tiles + 2 * (tiles % grid)
    return (split_from if split_tail else sec, cut, run_tiles)


def instantiation(name: str, p: dict) -> tuple:
    """`dispatch`'s choice: (Dp, kM, kQkSteps, kTmaEpi, kN, kHalfDiag)."""
    b, s_q, s_k, h_q, d, causal = p["b"], p["s_q"], p["s_k"], p["h_q"], p["d"], p["causal"]
    tma = s_k <= 2048
    if d <= 64 and causal:
        return (64, 192, 4, True, 128, True)
    if d <= 64:
        return (64, 192, 4, tma, 128, False)
    bh = b * h_q
    waves192 = _ceil(bh * _ceil(s_q, 64), 3 * SMS) * 192
    waves128 = _ceil(bh * _ceil(s_q, 128), SMS) * 128
    pad_ok = _ceil(s_q, 192) * 192 * 100 <= _ceil(s_q, 128) * 128 * 101
    if causal:
        rows192 = s_q == s_k or pad_ok
        if name == "c128":
            rows192 = d <= 96 and rows192
    else:
        rows192 = waves192 * 1000 <= waves128 * 1035
        if name == "pre192":
            tiles192 = bh * _ceil(s_q, 192)
            tail = tiles192 % SMS
            split = tiles192 > SMS and tail > 0 and 3 * tail <= SMS
            rows192 = rows192 or (split and (3 * (tiles192 // SMS) + 2) * 192 * 1000 <= 3 * waves128 * 1070)
    steps = 6 if d <= 96 else 8
    if d <= 128:
        if rows192 and (not tma or not causal):
            return (128, 192, steps, True, 128, bool(causal))
        return (128, 128, steps, True, 128, bool(causal))
    n80_causal, n80_unmasked = (16384, 4096) if name == "d256n64" else (4096, 1024)
    if causal:
        if s_k > n80_causal:
            return (256, 128, 16, False, 80, True)
        return (256, 128, 16, True, 64, True) if s_k > 512 else (256, 128, 16, True, 128, True)
    if s_k > n80_unmasked:
        return (256, 128, 16, False, 80, False)
    return (256, 128, 16, True, 64, False) if s_k > 512 else (256, 128, 16, True, 128, False)


def plan(name: str, p: dict) -> tuple:
    inst = instantiation(name, p)
    return inst, launch_params(name, p, inst)


def changed(name: str) -> list[tuple[dict, tuple, tuple]]:
    out = []
    for p in scenarios():
        a, c = plan("best", p), plan(name, p)
        if a != c:
            out.append((p, a, c))
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ids", metavar="NAME", help="print only this candidate's changed scenario ids")
    a = ap.parse_args(argv)
    if a.ids:
        if a.ids not in CANDIDATES:
            print(f"dispatch_model: no candidate {a.ids!r} (known: {', '.join(CANDIDATES)})", file=sys.stderr)
            return 2
        print(" ".join(p["id"] for p, _, _ in changed(a.ids)))
        return 0
    for name in CANDIDATES:
        rows = changed(name)
        print(f"{name}: {len(rows)} scenarios change")
        for p, (ia, ha), (ic, hc) in rows:
            what = []
            if ia != ic:
                what.append(f"M{ia[1]}/N{ia[4]}{'/tma' if ia[3] else ''} -> M{ic[1]}/N{ic[4]}{'/tma' if ic[3] else ''}")
            if ha != hc:
                what.append(f"sec/split,cut,tiles {ha} -> {hc}")
            print(f"  {p['id']:34} {'; '.join(what)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
