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

# Session 9: v19 computes each wgmma descriptor as its buffer's plus a constant, but the K/V stage index lives in
# vector registers (it also addresses the stage's mbarriers), so every K and V descriptor is built there and moved
# to the uniform registers HGMMA reads: two R2UR and a constant move per wgmma. Broadcasting the stage index from
# lane 0 (__shfl_sync, as v19 does for the warpgroup index) lets ptxas build the descriptors on the uniform
# datapath: the instructions among a steady d128 160-key block's 18 wgmmas drop 82 -> 49 (128-key: 67 -> 40),
# for one SHFL per descriptor base.
STAGEU_EDITS = [
    ("          const uint64_t k_desc = smem_desc(sK + st * kKVBytes, 16, 1024);\n",
     "          const uint64_t k_desc = smem_desc(sK + __shfl_sync(0xffffffff, st, 0) * kKVBytes, 16, 1024);\n"),
    ("          const uint64_t v_desc = smem_desc(sV + st * kKVBytes, BN * 128, 1024);\n",
     "          const uint64_t v_desc = smem_desc(sV + __shfl_sync(0xffffffff, st, 0) * kKVBytes, BN * 128, 1024);\n"),
    ("        const uint32_t parity = phase;\n",
     "        const uint32_t parity = phase;\n"
     "        const int s_u = __shfl_sync(0xffffffff, s, 0);  // the stage for the descriptors: provably warp-uniform\n"),
    ("smem_desc_at(smem_desc(sK + s * kKVBytes, 16, 1024)", "smem_desc_at(smem_desc(sK + s_u * kKVBytes, 16, 1024)"),
    ("smem_desc_at(smem_desc(sV + s * kKVBytes, BN * 128, 1024)", "smem_desc_at(smem_desc(sV + s_u * kKVBytes, BN * 128, 1024)"),
]

# Session 9: even on the uniform datapath (next_stageu, d256, d64) ptxas builds each descriptor as a 32-bit add on the
# low word plus a move of the constant high word (UIADD3 + UMOV per descriptor), because smem_desc_at masks the
# high word and adds on the low one. As a plain 64-bit add (the same value: the low word cannot carry), ptxas emits
# one UIADD3.64 and keeps the high word. With next_stageu: the instructions among a steady d128 160-key block's 18
# wgmmas drop 49 -> 26, the whole steady block 531 -> 515 (v19: 561); d256's 16 Q K^T wgmmas carry 60 -> 33
# others, its 8 P V 21 -> 13; d64's P V 17 -> 8. Without next_stageu the d96/d128 descriptors stay in vector
# registers and the 64-bit add costs more there (160-key: 82 -> 93), so it comes only with it.
DESC64_EDITS = [
    ("  return (base & 0xFFFFFFFF00000000ull) | static_cast<uint32_t>(static_cast<uint32_t>(base) + (byte_off >> 4));\n",
     "  return base + (byte_off >> 4);  // one 64-bit add (UIADD3.64); the low word cannot carry\n"),
]

# name -> (base file in best/, header lines, [(old, new), ...])
VARIANTS: dict[str, tuple[str, str, list[tuple[str, str]]]] = {
    "next_stageu": (
        "kernel.cu",
        "// next_stageu: v19 + the K/V stage index broadcast from lane 0 for the wgmma descriptors (uniform datapath).\n",
        STAGEU_EDITS),
    "next_desc64": (
        "kernel.cu",
        "// next_desc64: next_stageu + each descriptor offset as one 64-bit add (UIADD3.64, the high word kept).\n",
        STAGEU_EDITS + DESC64_EDITS),
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
