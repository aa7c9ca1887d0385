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
# - session 13's next_bottom192 (an edit of v28; lost in session 14: d64causal kernel time 0.994) from 752a5b1.
# - session 14's next_cluster (an edit of v28; lost: nomask_long kernel time 0.797, MEMBAR.ALL.GPU before each remote
#   arrival) from 9a8d8c2.
# - session 14's next_qrs (an edit of v28: Q K^T's A operand from registers on the 160-key launches; rejected at
#   compile time: 96 bytes of spills in d128, 32 in d96, wgmmas serialised (C7512); with 240 consumer registers
#   124 bytes) from 6090a69.
# - session 15's next_r192 and next_r192c (edits of v28: d96/d128 long launches on 192x128 tiles, unmasked / both
#   masks; measured in call 2: nomask8 and causal_gqa kernel time +2.8%, +2.9%; next_r192's full grid 1.1381; their
#   32-register producer spills 24 bytes, which next_r192p removes) from 1f461a8.
# - session 14's cluster forms and controls (next_cluster2, next_clstatic, next_clcoupled, next_cluster2d,
#   next_cluster2dc, next_cluster3s; edits of v28, all lost in session 15's call 1: nomask8 kernel time 0.986, 0.968,
#   0.977, 0.983, -, 0.963; next_cluster2dc hung once) and session 15's next_r192p (an edit of v28; became v29) from
#   3e6e540.
# - session 15's next_r192w, next_r192s, next_r192all (edits of v29: unmasked d96/d128 launches on 192 rows by waves;
#   next_r192all with next_r192diag too; measured in session 16: next_r192all against v29 in call 1, full grid, the
#   wave rule's 15 launches +3..+6%; next_r192s's full grid 1.1466 in call 2; next_r192s became v30) from 4043b19.
# - session 16's next_d96n96 (an edit of v30: d96's P V as m64n96 over V in 64-byte swizzle; measured in session 17:
#   d96 speedup 1.039 in call 1, full grid 1.1559 in call 2; became v31) from d283365.


# Session 14: probes, not candidates (their output is wrong by design; only scripts/clock_log.py runs them). Long
# shapes run at the 700 W cap (session 9), so the energy a byte of K/V costs on its way in decides how fast they
# run. Against v28 at the same power: probe_samekv loads every key block from the head's block 0 (L2 hits: the
# HBM reads go, the L2 -> SM traffic stays); probe_noload loads a tile's first kStages blocks only and completes
# the later blocks' full barriers by a plain arrive (the consumers reread stale stages: neither traffic is left).
# v28 - samekv is what the HBM reads cost; samekv - noload what the L2 -> SM copies cost, the part a two-CTA
# cluster with TMA multicast of K/V would halve.
_K_LOAD = ("              tma_load(sK + stage * kKVBytes + p * BN * 128, &tm_k, full_k(stage), p * 64, kv_head,\n"
           "                       n * BN, w.batch);\n")
_V_LOAD = ("              tma_load(sV + stage * kKVBytes + p * BN * kVRowBytes<Dp, kQkSteps>, &tm_v, full_v(stage),\n"
           "                       p * static_cast<int>(kVRowBytes<Dp, kQkSteps> / 2), kv_head,\n"
           "                       n * BN, w.batch);\n")
_V_HEAD = ("            mbar_expect_tx(full_v(stage), kVPanels<Dp, kQkSteps> * BN * kVRowBytes<Dp, kQkSteps>);\n"
           "            // d96's three boxes in a loop: unrolled, the 32-register producer of the 192-row tiles spilled 4 B\n"
           "#pragma unroll(kV64<Dp, kQkSteps> ? 1 : 4)\n            for (int p = 0; p < kVPanels<Dp, kQkSteps>; ++p)\n")
SAMEKV_EDITS = [(_K_LOAD, _K_LOAD.replace("n * BN", "0")), (_V_LOAD, _V_LOAD.replace("n * BN", "0"))]
NOLOAD_EDITS = [
    ("            mbar_expect_tx(full_k(stage), kKVBytes);\n#pragma unroll\n            for (int p = 0; p < kPanels; ++p)\n" + _K_LOAD,
     "            if (i >= kStages) mbar_arrive(full_k(stage));  // probe: no load after the first kStages blocks\n"
     "            else {\n"
     "            mbar_expect_tx(full_k(stage), kKVBytes);\n#pragma unroll\n            for (int p = 0; p < kPanels; ++p)\n" + _K_LOAD +
     "            }\n"),
    (_V_HEAD + _V_LOAD,
     "            if (i >= kStages) mbar_arrive(full_v(stage));\n"
     "            else {\n" + _V_HEAD + _V_LOAD +
     "            }\n"),
]

# next_r192diag (an edit of v30; written as one of v29): v30's causal 192-row d96/d128 tiles run their diagonal-most
# key block in full for every warpgroup, masked or not. d64's 192-row tiles skip it for a warpgroup whose rows end before the block and run
# it at half width where the rows see at most its first 64 keys (v27's diag192: causal s8192 +2-4%, s2048 +7-8%).
# The same code for d96/d128, with K and V released apart (K after the Q K^T, as the loop does; V, or both when
# skipped, at the end). Unmasked 192-row launches get instantiations without the block (kHalfDiag false: v29's code,
# as unmasked d64 and d256 have), so the causal-only code costs them nothing. Per 192-row tile at the diagonal, one
# or two warpgroups skip and one runs half: of ~3 x n_blocks warpgroup-blocks, about 1-1.5 saved. Predicted:
# causal 192-row launches s8192 +1-3%, s16384 +0.5-1.5%, s32768 <1% (about +0.1% on the grid).
# Session 16 call 1 (inside next_r192all, full grid, 1 round, kernel time v29 / this): its 22 launches 0.999 against
# 0.998 for the causal scenarios it leaves alone; s8192 +1.5% (7), s16384 -0.9% (7), s32768 -0.8% (8). Call 3 (an
# edit of v30, causal_long, 2 rounds): speedup 0.996 of v30, kernel time 1.000 (s8192 +0.8%). Level twice.
R192DIAG_EDITS = [
    ("      if constexpr ((Dp == 64 || Dp == 256) && kHalfDiag) {  // kHalfDiag: causal launches only\n",
     "      if constexpr ((Dp == 64 || Dp == 256 || Cfg::kConsumers == 3) && kHalfDiag) {  // kHalfDiag: causal launches only\n"),
    ("        if constexpr (Dp == 64)\n          skip = ",
     "        if constexpr (Cfg::kConsumers == 3)  // 192-row tiles: d64, and d96/d128 (next_r192diag)\n          skip = "),
    ("          mbar_arrive_if(empty(s), lane == 0);  // predicated: a branch here cost the key loop (BRA.DIV)\n",
     "          mbar_arrive_if(empty(s), lane == 0);  // predicated: a branch here cost the key loop (BRA.DIV)\n"
     "          if constexpr (kSplitKV<Dp>) mbar_arrive_if(empty_v(s), lane == 0);  // d96/d128: V apart\n"),
    ("          } else {\n            mbar_arrive_if(empty(s), lane == 0);  // K and V of the stage (one mbarrier), one arrival per warp\n",
     "          } else if constexpr (kSplitKV<Dp>) {\n"
     "            mbar_arrive_if(empty_v(s), lane == 0);  // d96/d128 192-row: V (K went after the Q K^T)\n"
     "          } else {\n            mbar_arrive_if(empty(s), lane == 0);  // K and V of the stage (one mbarrier), one arrival per warp\n"),
    ("    if (d <= 96) return launch<T, 128, 192, 6, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);\n"
     "    return launch<T, 128, 192, 8, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);\n",
     "    if (!causal) {  // next_r192diag: the unmasked launches on instantiations without the diagonal block\n"
     "      if (d <= 96) return launch<T, 128, 192, 6, false, 128, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);\n"
     "      return launch<T, 128, 192, 8, false, 128, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);\n"
     "    }\n"
     "    if (d <= 96) return launch<T, 128, 192, 6, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);\n"
     "    return launch<T, 128, 192, 8, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);\n"),
]
# Session 16: a probe, not a candidate (correct output, but every unmasked d96/d128 launch on 192-row tiles whatever
# its waves). With scripts/wg_probe.py --rows 192,128,64 it times a 192-row tile with 3, 2 and 1 live warpgroups (dead
# ones skip their work on these tiles since v21): how fast one warpgroup runs its rows alone, which decides whether a
# row split of a launch's last wave (no combine step) could shorten it. 128-row tiles cannot answer that: they compute
# a dead warpgroup's rows.
ROWS192_EDITS = [
    ("                              : waves192 * 1000 <= waves128 * 1035;\n",
     "                              : true;  // probe_rows192: every unmasked launch on 192-row tiles\n"),
]

# Session 17 (an edit of v31): the last wave of an unmasked long-key launch, split by keys. Unmasked tiles all cost
# the same, so a launch of T tiles on G CTAs runs ceil(T / G) tile-times, and the grid's launches lose ~3% each to a
# last wave of r = T % G tiles (4096 / 132 = 31.03 waves, 2816 / 132 = 21.33, 2048 / 132 = 15.52). Here the last r
# tiles become r x p parts (p = min(G / r, key blocks, 8)) over contiguous key-block ranges; a part writes each warp's
# unnormalised O, row maxima and per-thread row sums to a workspace (fragment order: every lane its own values, so
# the warp that merges reads exactly the positions it holds), counts itself in (one counter per tile and warp), and
# the warp that counts last merges the other parts' records into its registers (weights 2^((m - M) scale)) and runs
# the usual epilogue. Only functions with the register epilogue (kTmaEpi false: s_k > 2048) and only unmasked
# launches split: causal tiles differ in cost and the scheduler already hands out the heavy ones first. The tail goes
# from one tile-time to ~1/p of one plus the merge (p - 1 records of 64 rows x Dv fp32 a warpgroup, from L2).
# Predicted: +1.5..+2.5% on the ~52 unmasked long-key scenarios, +0.4-0.7% on the grid; every kTmaEpi function
# unchanged but for its parameter offsets.
_SPLIT_MERGE = r"""
// next_tailsplit: a launch's last wave split by keys. A part writes its warp's unnormalised O, row maxima and per-thread
// row sums to the workspace in fragment order (every lane its own values), then counts itself in; the warp that counts
// last merges the other parts' records into its registers and goes on to the usual epilogue. Returns whether this warp
// holds the merged rows (it stores O); the others are done with the tile.
template <int Dv>
__device__ __forceinline__ bool split_merge(float (&o_acc)[Dv / 2], const float (&row_max)[2], float (&row_sum)[2],
                                            float* __restrict__ ws, unsigned int* count, int first, int j, int parts,
                                            int warps, int warp_id, int lane, float scale_log2) {
  constexpr int kRec = 32 * (Dv / 2 + 4);  // floats in a warp's record: O as pairs, then (m0, m1, l0, l1) a lane
  auto rec = [&](int q) { return ws + (static_cast<size_t>(first + q) * warps + warp_id) * kRec; };
  float* mine = rec(j);
#pragma unroll
  for (int k = 0; k < Dv / 4; ++k)
    __stcg(reinterpret_cast<float2*>(mine) + k * 32 + lane, make_float2(o_acc[2 * k], o_acc[2 * k + 1]));
  __stcg(reinterpret_cast<float4*>(mine + 32 * (Dv / 2)) + lane,
         make_float4(row_max[0], row_max[1], row_sum[0], row_sum[1]));
  __threadfence();  // this lane's record, device-wide, before the count (threadFenceReduction's order)
  __syncwarp();
  unsigned int seen = 0;
  if (lane == 0) seen = atomicAdd(count, 1u);
  seen = __shfl_sync(0xffffffff, seen, 0);
  if (seen != static_cast<unsigned int>(parts - 1)) return false;
  __threadfence();
  if (lane == 0) *count = 0u;  // zero again for the next launch
  float mx[2] = {row_max[0], row_max[1]};
  for (int q = 0; q < parts; ++q) {
    if (q == j) continue;
    const float4 ml = __ldcg(reinterpret_cast<const float4*>(rec(q) + 32 * (Dv / 2)) + lane);
    mx[0] = fmaxf(mx[0], ml.x);
    mx[1] = fmaxf(mx[1], ml.y);
  }
  // A record's weight 2^((m - M) scale); 0 for rows that saw no key (m = -inf: dead warpgroups' rows).
  auto weight = [&](float m, int r) { return m == -INFINITY ? 0.f : fast_exp2((m - mx[r]) * scale_log2); };
  const float f0 = weight(row_max[0], 0), f1 = weight(row_max[1], 1);
  row_sum[0] *= f0;
  row_sum[1] *= f1;
#pragma unroll
  for (int k = 0; k < Dv / 4; ++k) {  // pair k holds o_acc[2k], o_acc[2k + 1]: row (k % 2) of the thread's two
    o_acc[2 * k] *= k % 2 ? f1 : f0;
    o_acc[2 * k + 1] *= k % 2 ? f1 : f0;
  }
  for (int q = 0; q < parts; ++q) {
    if (q == j) continue;
    const float* r = rec(q);
    const float4 ml = __ldcg(reinterpret_cast<const float4*>(r + 32 * (Dv / 2)) + lane);
    const float g0 = weight(ml.x, 0), g1 = weight(ml.y, 1);
    row_sum[0] += ml.z * g0;
    row_sum[1] += ml.w * g1;
#pragma unroll
    for (int k = 0; k < Dv / 4; ++k) {
      const float2 v = __ldcg(reinterpret_cast<const float2*>(r) + k * 32 + lane);
      o_acc[2 * k] += v.x * (k % 2 ? g1 : g0);
      o_acc[2 * k + 1] += v.y * (k % 2 ? g1 : g0);
    }
  }
  return true;
}

"""
TAILSPLIT_EDITS = [
    # the slot carries the part's first key block and its part number
    ("constexpr int kSlotBytes = 16;  // m_block, head, batch, n_blocks (n_blocks < 0: the sentinel)",
     "constexpr int kSlotBytes = 32;  // m_block, head, batch, n_blocks (n_blocks < 0: the sentinel); next_tailsplit:\n"
     "                                // a split tile's part: its first key block, its number (-1: a whole tile)\n"
     "// next_tailsplit: the slot stride; functions that never split (the TMA epilogue) keep v31's 16 bytes.\n"
     "template <bool kTmaEpi> constexpr int kSlotStride = kTmaEpi ? 16 : kSlotBytes;"),
    ("kSlotBytes * slot", "kSlotStride<kTmaEpi> * slot", 8),
    ("__device__ unsigned int g_tile_counter;\n",
     "__device__ unsigned int g_tile_counter;\n\n"
     "// next_tailsplit: per split tile and consumer warp, the parts that have written their record (zero at load; the\n"
     "// warp that merges sets its counter back to zero).\n"
     "constexpr int kSplitMaxTiles = 128, kSplitWarps = 12, kSplitMaxParts = 8;\n"
     "__device__ unsigned int g_split_count[kSplitMaxTiles * kSplitWarps];\n"),
    ("// ---- work decomposition ----", _SPLIT_MERGE + "// ---- work decomposition ----"),
    ("                  int num_bh, int sec, int num_tiles) {\n",
     "                  int num_bh, int sec, int num_tiles, float* __restrict__ split_ws, int split_first,\n"
     "                  int split_parts) {\n"),
    # the producer: items past split_first are parts of the last tiles
    ("        Tile w{0, 0, 0, -1};\n        if (!last)\n"
     "          w = decode_tile<BN, Cfg::kBlockM>(static_cast<int>(tile), num_m_blocks, num_bh, sec, h_q, s_q, s_k, causal);\n",
     "        Tile w{0, 0, 0, -1};\n        int k_lo = 0, part = -1;\n        if (!last) {\n"
     "          int tt = static_cast<int>(tile);\n"
     "          if constexpr (!kTmaEpi) {\n"
     "            if (tt >= split_first) {\n"
     "              part = tt - split_first;\n"
     "              tt = split_first + part / split_parts;\n"
     "            }\n"
     "          }\n"
     "          w = decode_tile<BN, Cfg::kBlockM>(tt, num_m_blocks, num_bh, sec, h_q, s_q, s_k, causal);\n"
     "          if constexpr (!kTmaEpi) {\n"
     "            if (part >= 0) {  // part j of the tile: key blocks [j nb / p, (j + 1) nb / p)\n"
     "              const int j = part % split_parts;\n"
     "              k_lo = j * w.n_blocks / split_parts;\n"
     "              w.n_blocks = (j + 1) * w.n_blocks / split_parts - k_lo;\n"
     "            }\n"
     "          }\n"
     "        }\n"),
    ("        st_shared_u32(slots + kSlotStride<kTmaEpi> * slot + 12, static_cast<uint32_t>(w.n_blocks));\n",
     "        st_shared_u32(slots + kSlotStride<kTmaEpi> * slot + 12, static_cast<uint32_t>(w.n_blocks));\n"
     "        if constexpr (!kTmaEpi) {  // a 32-byte slot\n"
     "          st_shared_u32(slots + kSlotStride<kTmaEpi> * slot + 16, static_cast<uint32_t>(k_lo));\n"
     "          st_shared_u32(slots + kSlotStride<kTmaEpi> * slot + 20, static_cast<uint32_t>(part));\n"
     "        }\n"),
    ("            const int n = w.n_blocks - 1 - i;  // masked (diagonal / tail) tiles first\n",
     "            const int n = k_lo + w.n_blocks - 1 - i;  // masked (diagonal / tail) tiles first\n"),
    # the consumers: the part's key offset for the mask, and the merge before the register epilogue
    ("    w.n_blocks = static_cast<int>(ld_shared_u32(slots + kSlotStride<kTmaEpi> * slot + 12));\n",
     "    w.n_blocks = static_cast<int>(ld_shared_u32(slots + kSlotStride<kTmaEpi> * slot + 12));\n"
     "    int k_lo = 0, part = -1;\n"
     "    if constexpr (!kTmaEpi) {\n"
     "      k_lo = static_cast<int>(ld_shared_u32(slots + kSlotStride<kTmaEpi> * slot + 16));\n"
     "      part = static_cast<int>(ld_shared_u32(slots + kSlotStride<kTmaEpi> * slot + 20));\n"
     "    }\n"),
    ("        auto mask = [&](int n) { mask_scores<BN>(s_acc, n * BN, s_k, causal, m0, diag, row0, t); };\n",
     "        auto mask = [&](int n) { mask_scores<BN>(s_acc, (k_lo + n) * BN, s_k, causal, m0, diag, row0, t); };\n"),
    ("        mask_scores<BN>(s_acc, n * BN, s_k, causal, m0, diag, row0, t);\n",
     "        mask_scores<BN>(s_acc, (k_lo + n) * BN, s_k, causal, m0, diag, row0, t);\n"),
    ("    } else {\n      // Epilogue: finish the row sums across the quad, normalise, store the rows inside s_q.\n",
     "    } else {\n"
     "      if (part >= 0) {  // next_tailsplit: a part of a split tile; the warp that counts last merges and stores\n"
     "        const int ts = part / split_parts;\n"
     "        if (!split_merge<kDv<Dp, kQkSteps>>(o_acc, row_max, row_sum, split_ws,\n"
     "                                            &g_split_count[ts * kSplitWarps + cw * 4 + warp], ts * split_parts,\n"
     "                                            part - ts * split_parts, split_parts, Cfg::kConsumers * 4,\n"
     "                                            cw * 4 + warp, lane, scale_log2)) {\n"
     "          __syncwarp();\n"
     "          continue;\n"
     "        }\n"
     "      }\n"
     "      // Epilogue: finish the row sums across the quad, normalise, store the rows inside s_q.\n"),
    # the host: the split, the workspace
    ("void* tile_counter() {",
     "// next_tailsplit: the parts' records (grown on demand; cudaFree waits for the device).\n"
     "float* split_workspace(size_t bytes) {\n"
     "  static float* p = nullptr;\n"
     "  static size_t have = 0;\n"
     "  if (bytes > have) {\n"
     "    if (p != nullptr) cudaFree(p);\n"
     "    p = nullptr;\n"
     "    have = 0;\n"
     "    if (cudaMalloc(&p, bytes) != cudaSuccess) return nullptr;\n"
     "    have = bytes;\n"
     "  }\n"
     "  return p;\n"
     "}\n"
     "void* tile_counter() {"),
    ("  if (cudaMemsetAsync(counter, 0, sizeof(unsigned int), stream) != cudaSuccess) return 4;\n",
     "  // next_tailsplit: an unmasked launch with the register epilogue whose last wave is at most half full runs its\n"
     "  // last r tiles as r x p parts over the idle CTAs (p = min(grid / r, key blocks, kSplitMaxParts)).\n"
     "  int split_first = num_tiles, split_parts = 0, items = num_tiles;\n"
     "  float* ws = nullptr;\n"
     "  if (!kTmaEpi && !causal && num_tiles > grid) {\n"
     "    const int r = num_tiles % grid, nb = (s_k + BN - 1) / BN;\n"
     "    int p = r > 0 ? grid / r : 0;\n"
     "    if (p > nb) p = nb;\n"
     "    if (p > kSplitMaxParts) p = kSplitMaxParts;\n"
     "    if (p >= 2 && r <= kSplitMaxTiles) {\n"
     "      constexpr int kDvHost = kDv<Dp, kQkSteps>;\n"
     "      const size_t bytes = static_cast<size_t>(r) * p * Config<Dp, kM, kN>::kConsumers * 4 * 32 * (kDvHost / 2 + 4) * 4;\n"
     "      ws = split_workspace(bytes);\n"
     "      if (ws == nullptr) return 4;\n"
     "      split_first = num_tiles - r;\n"
     "      split_parts = p;\n"
     "      items = split_first + r * p;\n"
     "    }\n"
     "  }\n"
     "  if (cudaMemsetAsync(counter, 0, sizeof(unsigned int), stream) != cudaSuccess) return 4;\n"),
    ("      num_bh, sec, num_tiles);\n", "      num_bh, sec, items, ws, split_first, split_parts);\n"),
]

# Session 17: next_tailsplit without d64. In call 3 (nomask_reg, 2 rounds but one of v31) and call 5 (15 scenarios, 3
# rounds) the d64 launches ran 2.9-3.0% slower in kernel time with the split code compiled in, the six that never
# split included (its loop +1 instruction); the split d96/d128 s4096 launches +0.7..+2.7%, d256 h16-4 level. Here the
# d64 functions compile none of it (their slot stays 16 bytes; the host never splits them).
def _no_d64(text: str) -> str:
    return (text.replace("if constexpr (!kTmaEpi)", "if constexpr (!kTmaEpi && Dp != 64)")
                .replace("kSlotStride<kTmaEpi>", "kSlotStride<kTmaEpi || Dp == 64>")
                .replace("if (!kTmaEpi && !causal", "if (!kTmaEpi && Dp != 64 && !causal"))


TAILSPLIT2_EDITS = [(e[0] if i <= 2 else _no_d64(e[0]), _no_d64(e[1]), *e[2:]) for i, e in enumerate(TAILSPLIT_EDITS)]

# name -> (base file in best/, header lines, [(old, new) or (old, new, count), ...])
VARIANTS: dict[str, tuple[str, str, list[tuple]]] = {
    "next_r192diag": ("kernel.cu", "// next_r192diag: v30 + causal 192-row d96/d128 tiles skip / halve their diagonal block per warpgroup.\n",
                      R192DIAG_EDITS),
    "next_tailsplit": ("kernel.cu", "// next_tailsplit: v31 + the last wave of unmasked long-key launches split by keys, merged by the last part.\n",
                       TAILSPLIT_EDITS),
    "next_tailsplit2": ("kernel.cu", "// next_tailsplit2: next_tailsplit without d64 (its functions as v31's).\n",
                        TAILSPLIT2_EDITS),
    "probe_rows192": ("kernel.cu", "// probe_rows192: best/kernel.cu with every unmasked d96/d128 launch on 192-row tiles.\n",
                      ROWS192_EDITS),
    "probe_samekv": ("kernel.cu", "// probe_samekv (wrong output by design): best/kernel.cu loading every key block from block 0.\n",
                     SAMEKV_EDITS),
    "probe_noload": ("kernel.cu", "// probe_noload (wrong output by design): best/kernel.cu loading a tile's first kStages key blocks only.\n",
                     NOLOAD_EDITS),
}

# Kernel instantiations of a candidate whose count is not best/kernel.cu's (tests/flash/test_kernel_build.py checks it).
INSTANTIATIONS: dict[str, int] = {"next_r192diag": 40}


class VariantError(Exception):
    pass


def render(name: str, best: Path = BEST) -> str:
    """The candidate's source text; VariantError if its name or one of its edits does not fit."""
    if name not in VARIANTS:
        raise VariantError(f"unknown variant {name!r} (known: {', '.join(VARIANTS) or 'none'})")
    base, header, edits = VARIANTS[name]
    text = (best / base).read_text()
    for edit in edits:
        old, new = edit[0], edit[1]
        want = edit[2] if len(edit) > 2 else 1  # (old, new, count): a text every one of whose `count` places changes
        n = text.count(old)
        if n != want:
            times = "once" if want == 1 else f"{want} times"
            raise VariantError(f"{name}: an edit matches {n} times in best/{base}, not {times}: {old.splitlines()[-1]!r}")
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
