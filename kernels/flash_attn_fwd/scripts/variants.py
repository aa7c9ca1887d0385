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

# Session 13 (edits of v27, compile-checked). v12 put d64 causal at s_q <= 1024 on 128-row tiles (two consumer
# warpgroups) because 192-row tiles ran their diagonal blocks mostly masked. v27's 192-row causal tiles skip or halve
# the first (diagonal-most) block per warpgroup, so that reason is weaker: counted in warpgroup-blocks at s512, 128-row
# tiles do 18 over 4 tiles, 192-row tiles 18.5 over 3 (fewer tile edges, three warpgroups sharing the tensor cores).
# next_c192at1024 moves s_q = 1024 to 192-row tiles, next_c192all every d64 causal launch. Predicted: s1024 causal
# +0-3%, s512 -2..+2%; nothing else changes (the 128-row functions stay compiled, their SASS unchanged).
C192AT1024_EDITS = [
    ("  constexpr int kNarrowD64CausalMaxSq = 1024;\n", "  constexpr int kNarrowD64CausalMaxSq = 512;\n"),
]
C192ALL_EDITS = [
    ("  constexpr int kNarrowD64CausalMaxSq = 1024;\n", "  constexpr int kNarrowD64CausalMaxSq = 0;\n"),
]

_SPLITQK0_OLD = """\
        mbar_wait(full_k(s), parity);
        wgmma_fence();
        issue_qk(s);
        wgmma_wait<0>();
        fence_regs(s_acc);
        release(empty(s));  // K of this stage: its Q K^T has completed
        if constexpr (kTmaEpi) release_staged();  // the previous tile's O store has had this Q K^T
        mask(n_blocks - 1 - first);
        softmax();
        if (first && rescaled) rescale_o<Dp>(o_acc, alpha);
        to_p();
"""
_SPLITQK0_NEW = """\
        mbar_wait(full_k(s), parity);
        wgmma_fence();
        if constexpr (BN == 128) {
          // The block's Q K^T as two m64n64 halves (keys 0-63, 64-127; their accumulators, side by side, are
          // one m64n128's): the first half's softmax runs while the second half is on the tensor cores.
          float s_lo[BN / 4], s_hi[BN / 4];
          const uint64_t k_desc = smem_desc(sK + __shfl_sync(0xffffffff, s, 0) * kKVBytes, 16, 1024);
#pragma unroll
          for (int kk = 0; kk < kQkSteps; ++kk) {
            const uint32_t off = (kk % 4) * 32;
            mma_qk<T, BN / 2>(s_lo, smem_desc_at(q_desc, (kk / 4) * Cfg::kBlockM * 128 + off),
                              smem_desc_at(k_desc, (kk / 4) * BN * 128 + off), kk > 0);
          }
          wgmma_commit();
#pragma unroll
          for (int kk = 0; kk < kQkSteps; ++kk) {
            const uint32_t off = (kk % 4) * 32;
            mma_qk<T, BN / 2>(s_hi, smem_desc_at(q_desc, (kk / 4) * Cfg::kBlockM * 128 + off),
                              smem_desc_at(k_desc, (kk / 4) * BN * 128 + (BN / 2) * 128 + off), kk > 0);
          }
          wgmma_commit();
          const int c0 = (n_blocks - 1 - first) * BN;
          wgmma_wait<1>();
          fence_regs(s_lo);
          mask_scores<BN / 2>(s_lo, c0, s_k, causal, m0, diag, row0, t);
          float alpha_lo[2];
          const bool r_lo = online_softmax<BN / 2>(s_lo, row_max, row_sum, alpha_lo, scale_log2);
          named_sync(after_softmax_barrier_id(row_sum, 1 + cw), 128);  // keeps ptxas's wait below the softmax
          wgmma_wait<0>();
          fence_regs(s_hi);
          release(empty(s));  // K of this stage: its Q K^T has completed
          if constexpr (kTmaEpi) release_staged();  // the previous tile's O store has had this Q K^T
          mask_scores<BN / 2>(s_hi, c0 + BN / 2, s_k, causal, m0, diag, row0, t);
          const bool r_hi = online_softmax<BN / 2>(s_hi, row_max, row_sum, alpha, scale_log2);
          if (r_hi) {  // the second half moved the max: the first half's P to the new base
#pragma unroll
            for (int j = 0; j < BN / 16; ++j) {
              s_lo[4 * j + 0] *= alpha[0];
              s_lo[4 * j + 1] *= alpha[0];
              s_lo[4 * j + 2] *= alpha[1];
              s_lo[4 * j + 3] *= alpha[1];
            }
          }
          if (first) {  // O holds the half-width diagonal block's P V: both halves' factors
            if (r_lo) {
              alpha[0] = r_hi ? alpha[0] * alpha_lo[0] : alpha_lo[0];
              alpha[1] = r_hi ? alpha[1] * alpha_lo[1] : alpha_lo[1];
            }
            if (r_lo || r_hi) rescale_o<Dp>(o_acc, alpha);
          }
          // P: keys 0-63 are k-steps 0-3, keys 64-127 k-steps 4-7
          pack_p<T, BN / 2>(s_lo, *reinterpret_cast<uint32_t (*)[BN / 32][4]>(&p_frag[0]));
          pack_p<T, BN / 2>(s_hi, *reinterpret_cast<uint32_t (*)[BN / 32][4]>(&p_frag[BN / 32]));
        } else {
          issue_qk(s);
          wgmma_wait<0>();
          fence_regs(s_acc);
          release(empty(s));  // K of this stage: its Q K^T has completed
          if constexpr (kTmaEpi) release_staged();  // the previous tile's O store has had this Q K^T
          mask(n_blocks - 1 - first);
          softmax();
          if (first && rescaled) rescale_o<Dp>(o_acc, alpha);
          to_p();
        }
"""

# Session 13 (an edit of v27, compile-checked). A short d96/d128 tile (4 key blocks at s512) waits for its first Q K^T
# whole before its first softmax: 477 cycles per warpgroup-tile of 15307 at d128-h16-16-s512 (v23's wait profile,
# results/2026-12-03-h200-s12-call1-wait-v23.txt), with both warpgroups at the same point, so the tensor cores idle
# through that softmax. Here the 128-key tiles' first FA3-order block issues Q K^T as two m64n64 halves and runs the
# softmax of keys 0-63 while keys 64-127 are on the tensor cores (a second online-softmax step: if it moves a row's
# max by more than 2^8, the first half's P is scaled down to the new base). 160-key (long) functions unchanged.
# Predicted: short d96/d128 +0.5-2% kernel time (more at s512), long level.
SPLITQK0_EDITS = [(_SPLITQK0_OLD, _SPLITQK0_NEW)]

# name -> (base file in best/, header lines, [(old, new), ...])
VARIANTS: dict[str, tuple[str, str, list[tuple[str, str]]]] = {
    "next_c192at1024": (
        "kernel.cu", "// next_c192at1024: v27 with d64 causal s_q = 1024 on 192-row tiles.\n", C192AT1024_EDITS),
    "next_c192all": (
        "kernel.cu", "// next_c192all: v27 with every d64 causal launch on 192-row tiles.\n", C192ALL_EDITS),
    "next_splitqk0": (
        "kernel.cu", "// next_splitqk0: v27 with 128-key d96/d128 tiles' first Q K^T in two halves.\n", SPLITQK0_EDITS),
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
