"""Candidate kernels written as small edits of a committed file, instead of committed near-copies.

A candidate that differs from `best/kernel.cu` (or another committed file) in a line or two is
made from it when it is needed: `python3 kernels/flash_attn_fwd/scripts/variants.py [NAME ...]`
writes best/gen/NAME.cu (git-ignored) for the named candidates, or for all of them. Every edit
must match its base exactly once; otherwise nothing is written and the exit code is 2, so a
change to the base cannot silently produce a different candidate. The output is the same bytes
for the same base, so a result's kernel_sha256 identifies it.
"""

from __future__ import annotations

import sys
from pathlib import Path

BEST = Path(__file__).resolve().parents[1] / "best"
OUT = BEST / "gen"

Q3_OLD = "template <> struct Config<128, 128> : TileConfig<2, 128, 2, 2, 40, 232> {};"
Q3_NEW = "template <> struct Config<128, 128> : TileConfig<2, 128, 2, 3, 40, 232> {};"

# name -> (base file in best/, header lines, [(old, new), ...])
VARIANTS: dict[str, tuple[str, str, list[tuple[str, str]]]] = {
    "next_q3": (
        "kernel.cu",
        "// next_q3: v15 + a third Q buffer for the 128-key d96/d128 tiles (96 + 128 KB = 224 KB), so the Q of\n"
        "// tile t + 2 goes into the buffer of tile t - 1, long free, instead of waiting for tile t's O store\n"
        "// (TMA epilogue) to be read. Meant for short causal tiles (1-4 key blocks).\n",
        [(Q3_OLD, Q3_NEW)]),
    "next_c160": (
        "kernel.cu",
        "// next_c160: v15 + its 160-key blocks for the causal d96/d128 launches at s_k > 2048 too (the diagonal\n"
        "// blocks are masked at 160-key granularity).\n",
        [("  // d96/d128 without a mask on long keys: 160-key blocks, register epilogue (s_k > 2048).\n"
          "  if (d <= 128 && !causal && !tma) {",
          "  // d96/d128 on long keys: 160-key blocks, register epilogue (s_k > 2048); causal too (candidate).\n"
          "  if (d <= 128 && !tma) {")]),
    "next_xtile3q": (
        "next_xtile.cu",
        "// next_xtile3q: next_xtile + a third Q buffer for the 128-key d96/d128 tiles: tests whether xtile lost\n"
        "// because the next tile's Q came too late (NOTES.md, session 5).\n",
        [(Q3_OLD, Q3_NEW)]),
}


class VariantError(Exception):
    pass


def render(name: str, best: Path = BEST) -> str:
    """The candidate's source text; VariantError if its name or one of its edits does not fit."""
    if name not in VARIANTS:
        raise VariantError(f"unknown variant {name!r} (known: {', '.join(VARIANTS)})")
    base, header, edits = VARIANTS[name]
    text = (best / base).read_text()
    for old, new in edits:
        n = text.count(old)
        if n != 1:
            raise VariantError(f"{name}: an edit matches {n} times in best/{base}, not once: {old.splitlines()[-1]!r}")
        text = text.replace(old, new)
    return header + text


def main(argv: list[str]) -> int:
    names = argv or list(VARIANTS)
    try:
        texts = {name: render(name) for name in names}  # all or nothing
    except VariantError as e:
        print(f"variants.py: {e}", file=sys.stderr)
        return 2
    OUT.mkdir(exist_ok=True)
    for name, text in texts.items():
        (OUT / f"{name}.cu").write_text(text)
        print(OUT / f"{name}.cu")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
