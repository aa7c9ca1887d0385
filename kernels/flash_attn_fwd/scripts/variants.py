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

# Session 10: d64 runs 192-row tiles, and s_q % 192 is 64 or 128 in every d64 scenario, so the last query tile
# holds one or two warpgroups whose 64 rows all lie past s_q. They do a live warpgroup's whole work today (the
# tensor cores and issue slots the live ones share). Session 6 skipped their matrix work with a branch on a value
# ptxas could not prove warp-uniform, and the loop went divergent (BRA.DIV, WARPSYNC, counters off the uniform
# registers): -7..-12% everywhere. A separate loop for the dead warpgroup behind a uniform (broadcast) test still
# made the TMA-epilogue loop divergent (BRA.DIV 0 -> 13, WARPSYNC.COLLECTIVE 0 -> 15). Here nothing in the loop
# branches: a dead warpgroup runs it zero times (the trip count is a broadcast value), only advances its ring
# counters and hands its Q buffer back, and warpgroup 0's warps release each stage for the dead ones too (one
# arrive with a count, as the d256 epilogue does for its 4 warps).
DEADWG_EDITS = [
    ("    } else {\n      for (int i = 0; i < n_blocks; ++i) {\n        const int n = n_blocks - 1 - i;\n",
     "    } else {\n"
     "      // d64: warpgroups whose rows all lie past s_q (the last 192-row tile) run no key block; warpgroup 0\n"
     "      // releases each stage for them as well (its warp w arrives for warp w of each).\n"
     "      int live_blocks = n_blocks;\n"
     "      uint32_t releases = 1;\n"
     "      if constexpr (Dp == 64 && Cfg::kConsumers == 3) {  // 192-row tiles (128-row ones: s_q % 128 == 0)\n"
     "        const int dead_wgs =\n"
     "            __shfl_sync(0xffffffff, max(0, Cfg::kConsumers - (s_q - m0 + 63) / 64), 0);  // provably uniform\n"
     "        if (cw == 0) releases += dead_wgs;\n"
     "        if (cw >= Cfg::kConsumers - dead_wgs && n_blocks > 0) {\n"
     "          live_blocks = 0;\n"
     "          for (int i = 0; i < n_blocks; ++i)\n"
     "            if (++stage == kStages) { stage = 0; phase ^= 1; }\n"
     "          if constexpr (kTmaEpi && kQBufs >= 2) {\n"
     "            release_staged();\n"
     "          } else {\n"
     "            __syncwarp();\n"
     "            if (lane == 0) mbar_arrive(q_empty(qb));  // its Q load has landed (q_full above)\n"
     "          }\n"
     "        }\n"
     "      }\n"
     "      for (int i = 0; i < live_blocks; ++i) {\n        const int n = n_blocks - 1 - i;\n"),
    ("          if (lane == 0) mbar_arrive(kSplitKV<Dp> ? empty_v(s) : empty(s));  // V (and K unless split)\n",
     "          if (lane == 0) {  // V (and K unless split)\n"
     "            if constexpr (Dp == 64 && Cfg::kConsumers == 3) mbar_arrive_count(empty(s), releases);\n"
     "            else mbar_arrive(kSplitKV<Dp> ? empty_v(s) : empty(s));\n"
     "          }\n"),
]

# name -> (base file in best/, header lines, [(old, new), ...])
VARIANTS: dict[str, tuple[str, str, list[tuple[str, str]]]] = {
    "next_deadwg": (
        "kernel.cu",
        "// next_deadwg: v20 + d64 warpgroups whose rows all lie past s_q run no key block (a uniform trip count).\n",
        DEADWG_EDITS),
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
