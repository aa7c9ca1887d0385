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

# Measured candidates leave this file; each is rebuilt byte for byte from a commit whose best/kernel.cu was its base:
# - session 7's (next_deadu, next_wait2, next_wait2w, next_w3, next_v6try, edits of v16; next_v6try became v17)
#   from cdb870c;
# - session 8's (next_exp2fma, next_tree, next_tilestart, next_lazyrs, edits of v17; next_lazyrs became v18)
#   from 1cb84c9;
# - session 9's (next_n160tn, next_cheapmask, next_descinc, next_maskdesc, edits of v18; next_descinc became v19,
#   the others lost: NOTES.md, "Session 9") from 697c249:
#   git worktree add /tmp/ks-s9 697c249 && python3 /tmp/ks-s9/kernels/flash_attn_fwd/scripts/variants.py NAME
# - session 9's next_tcsum (an edit of v19: next_stageu + the d96/d128 row sums on the tensor cores; lost) from
#   cdc0ba9.
# - session 10's next_stageu and next_desc64 (edits of v19; next_desc64 became v20, next_stageu ran only inside it)
#   from 2a443bc.
# - session 10's next_deadwg (an edit of v20; became v21) from e76ca0c. Its first form, measured in call 2, lacked
#   `&& Cfg::kConsumers == 3` in its two `if constexpr` lines, so it changed the 128-row d64 tiles too.
# - session 11's next_tilepipe (lost: short128 0.967 of v21) and next_d64desc19 (became v22), edits of v21, from
#   b6f580d.
# - session 11's next_slotdec (an edit of v22: the producer publishes decoded tiles; became v23) from 8ffe35e.
# - session 11's next_tilepipe2 (lost: short128 0.949 of v23) and next_diag64 (became v24), edits of v23, from
#   d99cfa1.
# - session 12's next_diag256 (became v25) and next_diag128 (lost: short128 kernel time 0.999), edits of v24, from
#   ed6a9e7.
# - session 12's next_diag128pv (became v26), an edit of v25, from 72c2021.
# - session 12's next_d256split, next_deadfix and next_diag192 (edits of v26, measured in session 13; next_diag192,
#   which holds the other two, became v27) from bf3a49e.
# - session 13's next_c192at1024, next_c192all (became v28) and next_splitqk0 (lost: short128 kernel time 0.986),
#   edits of v27, from f0b654f.

# Session 13 (an edit of v28, compile-checked). A d64 causal head's 192-row tiles start at row 0, so the partly
# filled tile (s_q % 192 is 64 or 128 in every d64 scenario) is the head's last: the heaviest, with one or two dead
# warpgroups idle through all of its key blocks (s1024: 8 blocks for 64 live rows; s2048: 16 blocks for 128). Here
# the tiles end at s_q instead: rows shift up by whole 64-row slices, so the partly filled tile is the head's first
# and sees one or two key blocks; its dead slices (rows before 0, which the Q load zero-fills) wait for the loads and
# release them as v27's dead warpgroups do, and store nothing. Counted in block-times of a full tile (a lone warpgroup
# at ~0.55, two at ~0.8): s512 8.2 -> 7.8 (-5%), s1024 28.4 -> 26.6 (-6%), s2048 ~-4%, s4096 ~-2%, s8192 ~-1.5%.
# Predicted: d64 causal +1-5% (most at s <= 2048), every other launch unchanged (their SASS the same).
_BOTTOM192_SHIFT = """\
// d64 causal (192-row tiles): the tiles end at s_q, shifted up by whole 64-row slices, so the partly filled tile is
// a head's first (lightest) one instead of its last (heaviest). 0 elsewhere.
template <int Dp, bool kHalfDiag, int kBlockM>
__device__ __forceinline__ int row_shift(int s_q, int num_m_blocks) {
  if constexpr (Dp == 64 && kHalfDiag) return (num_m_blocks * kBlockM - s_q) / 64 * 64;
  else return 0;
}

"""
BOTTOM192_EDITS = [
    ("template <int BN, int kBlockM>\n__device__ __forceinline__ Tile decode_tile(int t, int num_m_blocks, int num_bh, int sec, int h_q,\n"
     "                                            int s_q, int s_k, int causal) {\n",
     _BOTTOM192_SHIFT +
     "template <int BN, int kBlockM>\n__device__ __forceinline__ Tile decode_tile(int t, int num_m_blocks, int num_bh, int sec, int h_q,\n"
     "                                            int s_q, int s_k, int causal, int shift) {\n"),
    ("  if (causal) kv_end = min(s_k, w.m_block * kBlockM + kBlockM + s_k - s_q);\n",
     "  if (causal) kv_end = min(s_k, w.m_block * kBlockM - shift + kBlockM + s_k - s_q);\n"),
    ("          w = decode_tile<BN, Cfg::kBlockM>(static_cast<int>(tile), num_m_blocks, num_bh, sec, h_q, s_q, s_k, causal);\n",
     "          w = decode_tile<BN, Cfg::kBlockM>(static_cast<int>(tile), num_m_blocks, num_bh, sec, h_q, s_q, s_k, causal,\n"
     "                                            row_shift<Dp, kHalfDiag, Cfg::kBlockM>(s_q, num_m_blocks));\n"),
    ("                     w.head, w.m_block * Cfg::kBlockM, w.batch);\n",
     "                     w.head, w.m_block * Cfg::kBlockM - row_shift<Dp, kHalfDiag, Cfg::kBlockM>(s_q, num_m_blocks),\n"
     "                     w.batch);  // shifted d64 causal tiles: rows before 0 are zero-filled\n"),
    ("    const int m0 = w.m_block * Cfg::kBlockM;\n",
     "    const int m0 = w.m_block * Cfg::kBlockM - row_shift<Dp, kHalfDiag, Cfg::kBlockM>(s_q, num_m_blocks);\n"),
    ("        if (cw >= Cfg::kConsumers - dead_wgs && n_blocks > 0) {\n",
     "        bool dead = cw >= Cfg::kConsumers - dead_wgs;\n"
     "        if constexpr (kHalfDiag)  // shifted causal tiles: slices wholly before row 0\n"
     "          dead = dead || cw < __shfl_sync(0xffffffff, max(0, -m0 / 64), 0);\n"
     "        if (dead && n_blocks > 0) {\n"),
    ("            if (m0 + cw * 64 < s_q) {  // a slice wholly past s_q stores nothing\n",
     "            if (m0 + cw * 64 < s_q && (!(Dp == 64 && kHalfDiag) || m0 + cw * 64 >= 0)) {  // nor one before row 0\n"),
    ("          const int row = row0 + 8 * r;\n          if (row < s_q) {\n",
     "          const int row = row0 + 8 * r;\n          if (row < s_q && (!(Dp == 64 && kHalfDiag) || row >= 0)) {\n"),
    ("        const int row = row0 + 8 * r;\n        if (row < s_q) {\n",
     "        const int row = row0 + 8 * r;\n        if (row < s_q && (!(Dp == 64 && kHalfDiag) || row >= 0)) {\n"),
]


# name -> (base file in best/, header lines, [(old, new), ...])
VARIANTS: dict[str, tuple[str, str, list[tuple[str, str]]]] = {
    "next_bottom192": (
        "kernel.cu", "// next_bottom192: v28 with d64 causal 192-row tiles ending at s_q (the partly filled tile first).\n",
        BOTTOM192_EDITS),
}

# Kernel instantiations of a candidate whose count is not best/kernel.cu's (tests/flash/test_kernel_build.py checks it).
INSTANTIATIONS: dict[str, int] = {}


class VariantError(Exception):
    pass


def render(name: str, best: Path = BEST) -> str:
    """The candidate's source text; VariantError if its name or one of its edits does not fit."""
    if name not in VARIANTS:
        raise VariantError(f"unknown variant {name!r} (known: {', '.join(VARIANTS) or 'none'})")
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
