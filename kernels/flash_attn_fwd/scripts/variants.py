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

# Session 12, after call 4 (an edit of v26, compile-checked): v25's half-width diagonal block is compiled into the d256
# functions that also run the unmasked launches, and those lost 3%: kernel time v24 / v25 on the nine unmasked d256
# scenarios with s <= 2048 0.971 (call 4, 2 rounds; the key loop's SASS is the same, 922 vs 920 instructions, so the
# cost is in the code around it), while the causal ones gained 4.7% (call 2). Here the diagonal block is a template
# switch: the unmasked d256 launches use instantiations without it, whose SASS is v24's, and the causal ones keep
# v25's. Predicted: unmasked d256 s <= 2048 back to v24 (+3%), causal d256 level, the rest unchanged.
D256SPLIT_EDITS = [
    ("template <typename T, int Dp, int kM, int kQkSteps, bool kTmaEpi, int kN = 128>\n"
     "__global__ void __launch_bounds__(Config<Dp, kM, kN>::kThreads, 1)\n",
     "// kHalfDiag: d256 compiles its half-width diagonal block only into the causal launches (the block's code cost the\n"
     "// unmasked ones 3% at s <= 2048 in shared functions).\n"
     "template <typename T, int Dp, int kM, int kQkSteps, bool kTmaEpi, int kN = 128, bool kHalfDiag = true>\n"
     "__global__ void __launch_bounds__(Config<Dp, kM, kN>::kThreads, 1)\n"),
    ("      if constexpr ((Dp == 64 && Cfg::kConsumers == 2) || Dp == 256) {\n",
     "      if constexpr ((Dp == 64 && Cfg::kConsumers == 2) || (Dp == 256 && kHalfDiag)) {\n"),
    ("template <typename T, int Dp, int kM, int kQkSteps, bool kTmaEpi, int kN = 128>\n"
     "int launch(",
     "template <typename T, int Dp, int kM, int kQkSteps, bool kTmaEpi, int kN = 128, bool kHalfDiag = true>\n"
     "int launch("),
    ("      attn_fwd_sm90<T, Dp, kM, kQkSteps, kTmaEpi, kN>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);\n",
     "      attn_fwd_sm90<T, Dp, kM, kQkSteps, kTmaEpi, kN, kHalfDiag>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);\n"),
    ("  attn_fwd_sm90<T, Dp, kM, kQkSteps, kTmaEpi, kN><<<",
     "  attn_fwd_sm90<T, Dp, kM, kQkSteps, kTmaEpi, kN, kHalfDiag><<<"),
    ("  return KS_LAUNCH(256, 128, 16);\n",
     "  if (causal) return KS_LAUNCH(256, 128, 16);\n"
     "  // unmasked d256: the instantiations without the half-width diagonal block\n"
     "  return tma ? launch<T, 256, 128, 16, true, 128, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st)\n"
     "             : launch<T, 256, 128, 16, false, 128, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);\n"),
]

# Session 12 (an edit of v26, compile-checked): a protocol fix. Since v21 a dead warpgroup of a 192-row d64 tile
# (its rows all past s_q) advances its stage counters over the tile's key blocks without waiting for their loads,
# and warpgroup 0 releases each stage for it. scripts/protocol_model.py, run with more schedules than its default,
# finds the hazard: at the next tile the dead warpgroup tests the first stage's full barrier for round R while round
# R-1 (the dead tile's last block in that stage, loaded just before the next tile's Q) may still be landing, and a
# parity test cannot tell phase R-1 from phase R+1: it passes, and the warpgroup reads K while it loads. It needs the
# next tile's Q to land before the dead tile's last K or V: rare, never seen on the grid or the edge tests, but a
# wrong answer when it happens. Here a dead warpgroup waits for each block's K and V and releases the stage itself, as
# a live one does, and nobody stands in. Predicted level (the dead warpgroup is idle in those waits anyway).
DEADFIX_EDITS = [
    ("// n arrivals at once (one thread standing in for n warps).\n",
     "// One arrival from the threads where `pred` holds, as a predicated instruction: a branch around mbar_arrive in the\n"
     "// dead warpgroups' loop below made ptxas add divergence handling (BRA.DIV) and 40 instructions to the key loop.\n"
     "__device__ __forceinline__ void mbar_arrive_if(uint32_t bar, bool pred) {\n"
     "  asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %1, 0;\\n@p mbarrier.arrive.shared::cta.b64 _, [%0];\\n}\\n\"\n"
     "               ::\"r\"(bar), \"r\"(static_cast<int>(pred)) : \"memory\");\n"
     "}\n"
     "// n arrivals at once (one thread standing in for n warps).\n"),
    ("      // d64: warpgroups whose rows all lie past s_q (the last 192-row tile) run no key block; warpgroup 0\n"
     "      // releases each stage for them as well (its warp w arrives for warp w of each).\n",
     "      // d64: warpgroups whose rows all lie past s_q (the last 192-row tile) run no key block; each waits for its\n"
     "      // blocks' loads and releases their stages itself (session 12: v21's stand-in release by warpgroup 0 let a\n"
     "      // dead warpgroup's parity tests run two phases ahead of the loads; scripts/protocol_model.py).\n"),
    ("        if (cw == 0) releases += dead_wgs;\n", ""),
    ("          for (int i = 0; i < n_blocks; ++i)\n"
     "            if (++stage == kStages) { stage = 0; phase ^= 1; }\n",
     "          for (int i = 0; i < n_blocks; ++i) {\n"
     "            const int s = stage;\n"
     "            const uint32_t parity = phase;\n"
     "            if (++stage == kStages) { stage = 0; phase ^= 1; }\n"
     "            mbar_wait(full_k(s), parity);\n"
     "            mbar_wait(full_v(s), parity);\n"
     "            __syncwarp();\n"
     "            mbar_arrive_if(empty(s), lane == 0);  // this warp's share of the stage's release\n"
     "          }\n"),
]

# Session 12 (an edit of v26 on top of next_d256split and next_deadfix, compile-checked): d64 causal at s_q > 1024 runs
# 192-row tiles (three consumer warpgroups) whose first key block is the diagonal-most one. With s_q = s_k, a tile at m-block mb
# starts its first block at 128 * (n_blocks - 1); warpgroups whose 64 rows end before that block see none of it and
# still ran it whole (every score masked), and a warpgroup that sees only its first half ran it whole too. Here the
# first block is skipped by a warpgroup that sees none of it (it waits for the stage's loads, as the loop does, so
# its release cannot count toward the stage's previous round, then releases it) and run at half width by one that
# sees at most 64 of its keys (v24's peeled block). Its arrivals are predicated (mbar_arrive_if): branches there
# cost the key loop 40 instructions and divergence handling. Per tile that is 1.5-2.5 of ~3 x n_blocks warpgroup-blocks: ~8% of the tensor work at s2048, ~4% at 4096, ~2% at 8192. The unmasked d64 launches
# (the same 192-row functions) get instantiations without the block (next_d256split's switch), whose SASS is v26's.
# Predicted: d64 causal s2048 +4-6%, s4096 +2-3%, s8192 +1%, level beyond and on everything else.
DIAG192_EDITS = D256SPLIT_EDITS + DEADFIX_EDITS + [
    ("      if constexpr ((Dp == 64 && Cfg::kConsumers == 2) || (Dp == 256 && kHalfDiag)) {\n"
     "        const bool half = __shfl_sync(0xffffffff, static_cast<int>(causal && live_blocks > 0 &&\n"
     "                                          (n_blocks - 1) * BN + BN / 2 > m0 + cw * 64 + 63 + diag), 0) != 0;\n"
     "        if (half) {\n",
     "      if constexpr ((Dp == 64 || Dp == 256) && kHalfDiag) {  // d64's 128-row tiles are causal only: kHalfDiag\n"
     "        const bool half = __shfl_sync(0xffffffff, static_cast<int>(causal && live_blocks > 0 &&\n"
     "                                          (n_blocks - 1) * BN + BN / 2 > m0 + cw * 64 + 63 + diag), 0) != 0;\n"
     "        // 192-row tiles: a warpgroup whose rows end before the first block's first key skips the block. It waits\n"
     "        // for the stage's loads as the loop would (a release before them could count toward the stage's previous\n"
     "        // round, which the other warpgroups may still read), then releases it.\n"
     "        bool skip = false;\n"
     "        if constexpr (Cfg::kConsumers == 3)\n"
     "          skip = __shfl_sync(0xffffffff, static_cast<int>(causal && live_blocks > 0 &&\n"
     "                                 (n_blocks - 1) * BN > m0 + cw * 64 + 63 + diag), 0) != 0;\n"
     "        if (skip) {\n"
     "          first_block = 1;\n"
     "          const int s = stage;\n"
     "          const uint32_t parity = phase;\n"
     "          if (++stage == kStages) { stage = 0; phase ^= 1; }\n"
     "          mbar_wait(full_k(s), parity);\n"
     "          mbar_wait(full_v(s), parity);\n"
     "          if constexpr (kTmaEpi && kQBufs >= 2) {\n"
     "            release_staged();  // no Q K^T here: the previous tile's O store is waited for now\n"
     "          } else if (n_blocks == 1) {\n"
     "            __syncwarp();\n"
     "            mbar_arrive_if(q_empty(qb), lane == 0);  // this tile reads Q no more\n"
     "          }\n"
     "          __syncwarp();\n"
     "          mbar_arrive_if(empty(s), lane == 0);  // predicated: a branch here cost the key loop (BRA.DIV)\n"
     "        } else if (half) {\n"),
    ("            if (lane == 0) mbar_arrive(empty(s));  // K and V of the stage (d64: one mbarrier)\n",
     "            if constexpr (Cfg::kConsumers == 3) {\n"
     "              mbar_arrive_if(empty(s), lane == 0);  // one per warp: dead warpgroups release for themselves\n"
     "            } else {\n"
     "              if (lane == 0) mbar_arrive(empty(s));  // K and V of the stage (d64: one mbarrier)\n"
     "            }\n"),
    ("  if (d <= 64) return KS_LAUNCH(64, 192, 4);\n",
     "  if (d <= 64 && causal) return KS_LAUNCH(64, 192, 4);\n"
     "  // unmasked d64: the instantiations without the skipped / half-width first block\n"
     "  if (d <= 64)\n"
     "    return tma ? launch<T, 64, 192, 4, true, 128, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st)\n"
     "               : launch<T, 64, 192, 4, false, 128, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);\n"),
]

# name -> (base file in best/, header lines, [(old, new), ...])
VARIANTS: dict[str, tuple[str, str, list[tuple[str, str]]]] = {
    "next_d256split": (
        "kernel.cu",
        "// next_d256split: v26 + the unmasked d256 launches on v24's code (no half-width diagonal block compiled in).\n",
        D256SPLIT_EDITS),
    "next_deadfix": (
        "kernel.cu",
        "// next_deadfix: v26 + dead warpgroups wait for their blocks' loads and release them (no stand-in).\n",
        DEADFIX_EDITS),
    "next_diag192": (
        "kernel.cu",
        "// next_diag192: next_d256split + next_deadfix + d64 causal 192-row tiles skip / halve their first key block per warpgroup.\n",
        DIAG192_EDITS),
}

# Kernel instantiations of a candidate whose count is not best/kernel.cu's (tests/flash/test_kernel_build.py checks it):
# next_d256split adds the four unmasked d256 ones, next_diag192 four unmasked d64 ones more.
INSTANTIATIONS = {"next_d256split": 28, "next_diag192": 32}


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
