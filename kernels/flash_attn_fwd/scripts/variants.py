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

# v16's dispatch for the 160-key blocks, and the same blocks without a mask from 1024 keys on (with the
# TMA epilogue up to 2048 keys). Session 6 measured both masks (next_s6 in 22afd93): causal lost there.
N160_OLD = (
    "  // d96/d128 on long keys (s_k > 2048), causal or not: 160-key blocks, register epilogue.\n"
    "  if (d <= 128 && !tma) {\n"
    "    if (d <= 96) return launch<T, 128, 128, 6, false, 160>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);\n"
    "    return launch<T, 128, 128, 8, false, 160>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);\n"
    "  }\n")
N160_NEW = (
    "  // d96/d128 on long keys (s_k > 2048), causal or not, and without a mask from 1024 keys on:\n"
    "  // 160-key blocks (the TMA epilogue up to 2048 keys).\n"
    "  constexpr int kWideBlockMinSk = 1024;\n"
    "  if (d <= 128 && (!tma || (!causal && s_k > kWideBlockMinSk))) {\n"
    "    if (d <= 96)\n"
    "      return tma ? launch<T, 128, 128, 6, true, 160>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st)\n"
    "                 : launch<T, 128, 128, 6, false, 160>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);\n"
    "    return tma ? launch<T, 128, 128, 8, true, 160>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st)\n"
    "               : launch<T, 128, 128, 8, false, 160>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);\n"
    "  }\n")

# v6's loop (d64, d256): a warpgroup whose 64 rows all lie past s_q skips its matrix work. Session 6's
# form (next_dead/next_s6 in 22afd93) branched on `m0 + cw * 64 < s_q`, which ptxas cannot prove
# warp-uniform: it added BRA.DIV checks before the HGMMAs and moved the stage counters out of the
# uniform registers (measured -7 to -12%). Broadcasting the test from lane 0 (__shfl_sync) makes it
# warp-uniform to ptxas: no BRA.DIV, the uniform-register stage counters stay (checked in the SASS).
DEAD_OLD = (
    "      for (int i = 0; i < n_blocks; ++i) {\n"
    "        const int n = n_blocks - 1 - i;\n"
    "        const int s = stage;\n"
    "        const uint32_t parity = phase;\n"
    "        if (++stage == kStages) { stage = 0; phase ^= 1; }\n"
    "\n"
    "        // S = Q K^T\n")
DEAD_NEW = (
    "      // d64: a warpgroup whose 64 rows all lie past s_q (the last 192-row tile when s_q % 192 is 1..128)\n"
    "      // does no matrix work: it only makes the stage and Q-buffer hand-offs of the loop below, each\n"
    "      // after the stage is full, so its arrivals never count toward a stage's previous round. (d256\n"
    "      // never has such a warpgroup on this grid.) The test is broadcast from lane 0 so that ptxas\n"
    "      // sees a warp-uniform branch: a plain test made it add divergence checks to the whole loop.\n"
    "      const bool rows_live = Dp != 64 || __shfl_sync(0xffffffffu, m0 + cw * 64 < s_q, 0);\n"
    "      for (int i = 0; i < n_blocks; ++i) {\n"
    "        const int n = n_blocks - 1 - i;\n"
    "        const int s = stage;\n"
    "        const uint32_t parity = phase;\n"
    "        if (++stage == kStages) { stage = 0; phase ^= 1; }\n"
    "        if (!rows_live) {\n"
    "          mbar_wait(full_k(s), parity);\n"
    "          __syncwarp();\n"
    "          if constexpr (kSplitKV<Dp>) {\n"
    "            if (lane == 0) mbar_arrive(empty(s));\n"
    "          }\n"
    "          if constexpr (kTmaEpi && kQBufs >= 2) {\n"
    "            if (i == 0) release_staged();\n"
    "          } else {\n"
    "            if (i == n_blocks - 1 && lane == 0) mbar_arrive(q_empty(qb));\n"
    "          }\n"
    "          mbar_wait(full_v(s), parity);\n"
    "          __syncwarp();\n"
    "          if constexpr (Dp == 256 && kTmaEpi) {\n"
    "            if (lane == 0 && i < n_blocks - 1) mbar_arrive(empty_v(s));\n"
    "          } else {\n"
    "            if (lane == 0) mbar_arrive(kSplitKV<Dp> ? empty_v(s) : empty(s));\n"
    "          }\n"
    "          continue;\n"
    "        }\n"
    "\n"
    "        // S = Q K^T\n")

# Session 7's wait profile (scripts/wait_profile.py): a consumer's mbarrier wait costs ~75-95 cycles even
# when the data is already there (the try_wait's round trip), and the loops make two in a row per key
# block (full_k then full_v), ~5% of a d128 consumer's cycles at every length. Both tests are issued
# before either result is used, so their latencies overlap; a stage that is not full yet falls back to
# the spinning wait. The v6 loop (d64, d256) tests V together with K and waits for V only if it was not
# ready then (a completed phase stays completed until this warpgroup releases the stage).
WAIT2_HELPER_OLD = (
    "// Plain 32-bit shared-memory store / load (the tile-index slots; ordered by the mbarriers).\n")
WAIT2_HELPER_NEW = (
    "// One test of the phase (no spinning): true once it has completed.\n"
    "__device__ __forceinline__ bool mbar_try(uint32_t bar, uint32_t parity) {\n"
    "  uint32_t ok;\n"
    "  asm volatile(\n"
    "      \"{\\n\"\n"
    "      \".reg .pred done;\\n\"\n"
    "      \"mbarrier.try_wait.parity.shared::cta.b64 done, [%1], %2;\\n\"\n"
    "      \"selp.u32 %0, 1, 0, done;\\n\"\n"
    "      \"}\\n\"\n"
    "      : \"=r\"(ok)\n"
    "      : \"r\"(bar), \"r\"(parity)\n"
    "      : \"memory\");\n"
    "  return ok != 0;\n"
    "}\n"
    "// Two waits whose tests overlap: both are issued before either result is used.\n"
    "__device__ __forceinline__ void mbar_wait_both(uint32_t bar_a, uint32_t parity_a, uint32_t bar_b, uint32_t parity_b) {\n"
    "  const bool a = mbar_try(bar_a, parity_a);\n"
    "  const bool b = mbar_try(bar_b, parity_b);\n"
    "  if (!a) mbar_wait(bar_a, parity_a);\n"
    "  if (!b) mbar_wait(bar_b, parity_b);\n"
    "}\n"
    "\n"
    "// Plain 32-bit shared-memory store / load (the tile-index slots; ordered by the mbarriers).\n")
# mbar_try alone (next_w3 does not pair waits in the FA3 loop).
TRY_HELPER_NEW = WAIT2_HELPER_NEW[:WAIT2_HELPER_NEW.index("// Two waits whose")] + "\n" + WAIT2_HELPER_OLD
WAIT2_FA3_OLD = (
    "          mbar_wait(full_k(s), parity);\n"
    "          mbar_wait(full_v(prev), prev_parity);\n")
WAIT2_FA3_NEW = (
    "          mbar_wait_both(full_k(s), parity, full_v(prev), prev_parity);\n")
WAIT2_V6K_OLD = (
    "        float s_acc[BN / 2];\n"
    "        mbar_wait(full_k(s), parity);\n")
WAIT2_V6K_NEW = (
    "        float s_acc[BN / 2];\n"
    "        const bool k_ready = mbar_try(full_k(s), parity);\n"
    "        const bool v_ready = mbar_try(full_v(s), parity);  // used at the P V below\n"
    "        if (!k_ready) mbar_wait(full_k(s), parity);\n")
WAIT2_V6V_OLD = (
    "        // O += P V\n"
    "        mbar_wait(full_v(s), parity);\n")
WAIT2_V6V_NEW = (
    "        // O += P V\n"
    "        if (!v_ready) mbar_wait(full_v(s), parity);\n")
WAIT2_EDITS = [(WAIT2_HELPER_OLD, WAIT2_HELPER_NEW), (WAIT2_FA3_OLD, WAIT2_FA3_NEW),
               (WAIT2_V6K_OLD, WAIT2_V6K_NEW), (WAIT2_V6V_OLD, WAIT2_V6V_NEW)]

# The same profile: the FA3 loop's softmax barrier (a bar.sync of the warpgroup's 128 threads, there only so
# that ptxas keeps the P V wait after the softmax) costs 55-65 cycles a key block, part of it waiting for
# the warpgroup's slowest warp. One barrier per warp (32 threads; ids 8-15, free in the d96/d128 kernels,
# whose loop never runs the d256 epilogue's barrier 8) keeps the same ordering without that wait.
WARPBAR_OLD = "          named_sync(after_softmax_barrier_id(row_sum, 1 + cw), 128);\n"
WARPBAR_NEW = "          named_sync(after_softmax_barrier_id(row_sum, 8 + 4 * cw + warp), 32);  // per warp, ids 8-15 (8 is d256-only)\n"

# name -> (base file in best/, header lines, [(old, new), ...])
VARIANTS: dict[str, tuple[str, str, list[tuple[str, str]]]] = {
    "next_n160tn": (
        "kernel.cu",
        "// next_n160tn: v16 + its 160-key blocks for d96/d128 without a mask at 1024 < s_k <= 2048 too, with the\n"
        "// TMA epilogue.\n",
        [(N160_OLD, N160_NEW)]),
    "next_deadu": (
        "kernel.cu",
        "// next_deadu: v16 + a d64 warpgroup whose rows all lie past s_q skips its matrix work (warp-uniform test).\n",
        [(DEAD_OLD, DEAD_NEW)]),
    "next_wait2": (
        "kernel.cu",
        "// next_wait2: v16 + the two mbarrier tests of a key block (K, V) issued together, not one after the other.\n",
        WAIT2_EDITS),
    "next_wait2w": (
        "kernel.cu",
        "// next_wait2w: next_wait2 + the FA3 loop's softmax barrier per warp (32 threads) instead of per warpgroup.\n",
        WAIT2_EDITS + [(WARPBAR_OLD, WARPBAR_NEW)]),
    # Session 7 call 2: the FA3 loop's paired test lost 3% on long d128 (long128 1.082 -> 1.047), the
    # per-warp barrier won it back (1.081), and the v6 loop's early V test gained on long d64/d256.
    "next_w3": (
        "kernel.cu",
        "// next_w3: v16 + the v6 loop's V tested with K (d64, d256) + the FA3 loop's softmax barrier per warp.\n",
        [(WAIT2_HELPER_OLD, TRY_HELPER_NEW), (WAIT2_V6K_OLD, WAIT2_V6K_NEW), (WAIT2_V6V_OLD, WAIT2_V6V_NEW),
         (WARPBAR_OLD, WARPBAR_NEW)]),
    # Session 7 call 3: next_w3's full grid 1.0619 (v16 1.0562 in another call); in one process d256
    # +2.0% (6 scenarios), long d128 -0.9%: only the v6 loop's part has a measured gain. This is that part;
    # its d96/d128 code is v16's (the same SASS).
    "next_v6try": (
        "kernel.cu",
        "// next_v6try: v16 + the v6 loop's V tested with K (d64, d256); the d96/d128 code is v16's.\n",
        [(WAIT2_HELPER_OLD, TRY_HELPER_NEW), (WAIT2_V6K_OLD, WAIT2_V6K_NEW), (WAIT2_V6V_OLD, WAIT2_V6V_NEW)]),
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
