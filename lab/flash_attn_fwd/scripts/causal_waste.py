"""How much of a causal launch's matrix work lies above the diagonal, by tile shape: the key-block work the tiles
compute over the work the mask keeps (1.000 = none wasted), for 192-row tiles (three warpgroups walk the tile's key
blocks; dead warpgroups, wholly past s_q, skip) and 128-row tiles with the half-width diagonal block (warpgroup 0
runs the diagonal block 64 keys wide where its rows see none of the other 64: v26, FA3's shape with the same skip).

It counts work, not time: a warpgroup that computes a masked block still shares the tensor cores with the others,
and the 192-row tiles' loop is faster per row (v29: a third fewer K/V copies per FLOP). The difference between the
two columns is what the 192-row causal launches pay for their shape against FA3's 128x128 tiles.

    python3 -m lab.flash_attn_fwd.scripts.causal_waste                 # square and prefill (s_q = S/4), S 1024-32768
    python3 -m lab.flash_attn_fwd.scripts.causal_waste --s-q 8192 --s-k 32768
"""

from __future__ import annotations

import argparse
import sys

BLOCK_N = 128  # keys a block
WG_ROWS = 64   # query rows a consumer warpgroup


def waste(s_q: int, s_k: int, rows: int, half_diag: bool = False) -> float:
    """Computed over needed score elements of one head's causal launch (bottom-right mask: row i sees keys
    j <= i + s_k - s_q) on `rows`-row tiles of 128-key blocks."""
    diag = s_k - s_q
    computed = needed = 0
    for r0 in range(0, s_q, rows):
        kv_end = min(s_k, r0 + rows + diag)
        n_blocks = -(-kv_end // BLOCK_N) if kv_end > 0 else 0
        for w0 in range(r0, min(r0 + rows, s_q), WG_ROWS):  # the live warpgroups
            keys = n_blocks * BLOCK_N
            # v26: warpgroup 0 of a 128-row tile runs the diagonal block 64 keys wide when its rows end in its first half
            if half_diag and rows == 128 and w0 == r0 and n_blocks > 1 and w0 + WG_ROWS - 1 + diag < keys - 64:
                keys -= 64
            computed += keys * WG_ROWS
            needed += sum(max(0, min(s_k, i + diag + 1)) for i in range(w0, min(w0 + WG_ROWS, s_q)))
    return computed / needed if needed else 1.0


def table(shapes: list[tuple[int, int]]) -> list[str]:
    lines = [f"{'s_q':>6s} {'s_k':>6s} {'192 rows':>9s} {'128 rows + half diag':>21s} {'ratio':>6s}"]
    for s_q, s_k in shapes:
        a, b = waste(s_q, s_k, 192), waste(s_q, s_k, 128, half_diag=True)
        lines.append(f"{s_q:6d} {s_k:6d} {a:9.3f} {b:21.3f} {a / b:6.3f}")
    return lines


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--s-q", type=int)
    ap.add_argument("--s-k", type=int)
    a = ap.parse_args(argv)
    if (a.s_q is None) != (a.s_k is None) or (a.s_q is not None and (a.s_q < 1 or a.s_k < 1)):
        print("causal_waste: give both --s-q and --s-k, each at least 1", file=sys.stderr)
        return 2
    sizes = [1 << k for k in range(10, 16)]
    shapes = [(a.s_q, a.s_k)] if a.s_q else [(s, s) for s in sizes] + [(s // 4, s) for s in sizes]
    print("\n".join(table(shapes)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
