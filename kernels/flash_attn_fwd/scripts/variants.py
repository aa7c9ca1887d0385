"""Candidate kernels written as small edits of a committed file, instead of committed near-copies.

A candidate that differs from `best/kernel.cu` (or another committed file) in a line or two is
made from it when it is needed: `python3 kernels/flash_attn_fwd/scripts/variants.py [NAME ...]`
writes best/gen/NAME.cu (git-ignored) for the named candidates, or for all of them. Every edit
must match its base exactly once; otherwise nothing is written and the exit code is 2, so a
change to the base cannot silently produce a different candidate. The output is the same bytes
for the same base, so a result's kernel_sha256 identifies it.

`variants.py --at COMMIT NAME [NAME ...]` writes best/gen/NAME-SHORTSHA.cu: the candidate as COMMIT's
variants.py rendered it from COMMIT's best/ files (the same bytes that were measured then), or, for
NAME `kernel`, COMMIT's best/kernel.cu itself. That is how a candidate that left this file, or an
earlier best for a same-call A/B, comes back; it needs git and this repository's history, so run it
here and name the file in the device tool's `carry` (best/gen/ is git-ignored and the device has no git).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path

BEST = Path(__file__).resolve().parents[1] / "best"
OUT = BEST / "gen"
REPO = Path(__file__).resolve().parents[3]

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
# - session 17's next_tailsplit (an edit of v31: the last wave of unmasked long-key launches split by keys, the last
#   part's warp merging; lost: nomask_reg speedup 0.993, d64 kernel time -3% with the code compiled in) and
#   next_tailsplit2 (the same without d64; level: kernel time 0.998) from d90ceeb.
# - session 17's next_smembase (an edit of v31: the shared-memory base through an opaque move in every function;
#   measured in session 18's call 1: d64 kernel time +1.2%, d256 -1.2%) and session 18's next_sb192 (the same on
#   192-row tiles only; became v32) from 5acf034.


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

# Session 18: next_nocausal (an edit of v32): every launch of an instantiation without the half-width diagonal block
# (kHalfDiag false: unmasked d64, unmasked d256, the short unmasked 192-row d96/d128 tiles) is unmasked, so there the
# run-time `causal` becomes a compile-time 0. In d64's key loop that drops the causal half of the per-block mask test
# (two constant loads, four integer instructions); the mask code left is the s_k tail's.
NOCAUSAL_EDITS = [
    ("  if constexpr (kM == 192) asm volatile(\"mov.b32 %0, %0;\" : \"+r\"(base));\n",
     "  if constexpr (kM == 192) asm volatile(\"mov.b32 %0, %0;\" : \"+r\"(base));\n"
     "  // next_nocausal: the dispatch runs these instantiations for unmasked launches only\n"
     "  if constexpr (!kHalfDiag) causal = 0;\n"),
]

# Session 18 (compile-checked, not run): next_d256ostage (an edit of v32). Fitted over the unmasked launches of v32's
# full grid (results/2026-12-04-h200-s18-call3-v32-full-bench.json), a d256 tile costs 2.86-2.90 us a 128-key block
# plus 3.8-4.1 us a tile (1.3-1.4 block-times; d128's 128-row tiles pay 1.0-1.4): 26% of an s512 tile. Part of it: O is
# staged in the last key block's V stage (one stage, one Q buffer: no other room), so the next tile's first V loads
# only after both warpgroups' last P V, O's write and the store's read. 32 KB are free beside Q 64 KB + K 64 KB + V
# 64 KB; here each warpgroup stages O there in two rounds of 64 rows x 128 columns, and the V stage is released in
# the loop as every other block's is. Build: 0 spills; only the 4 d256 TMA-epilogue functions differ from v32. ptxas
# also took the shared-memory base rebuild (S2UR) out of the unmasked one's key loop (922 -> 906 instructions), as
# next_smembase did, which cost unmasked d256 2% there: the A/B reads both. Predicted: d256s +1..+4% (the most at
# s512, 4 blocks a tile). scripts/protocol_model.py plays it (3 x 1500 schedules, no hazard) and catches the control
# whose second round skips the wait for the first round's read. Command: `KS_ROUNDS=2 KS_BY=d,causal bash $S/device_run.sh groups "d256s v32=$K/kernel.cu
# ostage=$K/gen/next_d256ostage.cu"`, and the edge shapes with KS_EDGE_SOURCES=$K/gen/next_d256ostage.cu.
D256OSTAGE_EDITS = [
    ('constexpr uint32_t kD256EpiVBarrier = 8;\n',
     'constexpr uint32_t kD256EpiVBarrier = 8;\n// next_d256ostage: d256\'s TMA epilogue stages O in 32 KB of its own (after the K/V stages, before the barriers).\ntemplate <int Dp, bool kTmaEpi> constexpr uint32_t kOStageBytes = Dp == 256 && kTmaEpi ? 32768u : 0u;\n'),
    ('                  smem_bytes<256>() <= 227 * 1024 && smem_bytes<128, 128, 160>() <= 227 * 1024 &&\n',
     '                  smem_bytes<256>() + 32768 <= 227 * 1024 && smem_bytes<128, 128, 160>() <= 227 * 1024 &&\n'),
    ('  const uint32_t bars = sV + kStages * kKVBytes;    // see num_barriers()\n',
     '  const uint32_t bars = sV + kStages * kKVBytes + kOStageBytes<Dp, kTmaEpi>;  // see num_barriers()\n'),
    ('            if (lane == 0 && (!kTmaEpi || n_blocks > 1)) mbar_arrive(empty_v(s));\n',
     '            if (lane == 0) mbar_arrive(empty_v(s));  // next_d256ostage: O has its own staging area\n'),
    ("        if constexpr (Dp == 256 && kTmaEpi) {\n          // The last key block's V stage holds O for the TMA store: the epilogue releases it\n          // (4 arrivals per warpgroup, once the store has read it).\n          if (lane == 0 && i < n_blocks - 1) mbar_arrive(empty_v(s));\n        } else {\n          if (lane == 0) {  // V (and K unless split)\n            if constexpr (Dp == 64) mbar_arrive_count(empty(s), releases);\n            else mbar_arrive(kSplitKV<Dp> ? empty_v(s) : empty(s));\n          }\n        }\n",
     "        if (lane == 0) {  // V (and K unless split); next_d256ostage: d256's last V stage too\n          if constexpr (Dp == 64) mbar_arrive_count(empty(s), releases);\n          else mbar_arrive(kSplitKV<Dp> ? empty_v(s) : empty(s));\n        }\n"),
    ('          // d256 epilogue through shared memory, staged in the V stage of the tile\'s last key\n          // block, not in the Q buffer: there is only one Q buffer, and staging O there would hold\n          // back the next tile\'s Q load until the store had read it. The last V stage is free once\n          // BOTH warpgroups\' last P V have completed (each P V reads all 128 key rows of V, so\n          // neither warpgroup may overwrite any of it before the other is done): a barrier over the\n          // 256 consumer threads. The V tile is 128 rows x 4 panels of 64 columns, the same layout\n          // as a 128-row O tile, so warpgroup cw writes its 64 rows at + cw * 64 * 128 of each panel\n          // (128-byte swizzle, as below for d <= 128). One thread stores the 4 panels, waits until\n          // the store has read them and releases the V stage for its warpgroup\'s 4 warps (the loop\n          // skipped their per-warp arrive for this block): the producer\'s next V load into this\n          // stage waits only for the store\'s read.\n          static_assert(BN == Cfg::kBlockM, "O (kBlockM rows) staged in a V stage (BN rows)");\n          const int s_last = (stage + kStages - 1) % kStages;  // the loop advanced past it\n          const uint32_t o_half = sV + s_last * kKVBytes + cw * 64 * 128;\n          float inv[2];\n#pragma unroll\n          for (int r = 0; r < 2; ++r) {\n            float l = row_sum[r];\n            l += __shfl_xor_sync(0xffffffff, l, 1);\n            l += __shfl_xor_sync(0xffffffff, l, 2);\n            inv[r] = l > 0.f ? 1.f / l : 0.f;\n          }\n          named_sync(kD256EpiVBarrier, 256);  // both warpgroups\' last P V have completed\n          const uint32_t row_addr = o_half + (warp * 16 + g) * 128 + 4 * t;\n#pragma unroll\n          for (int r = 0; r < 2; ++r) {\n#pragma unroll\n            for (int j = 0; j < kDv<Dp, kQkSteps> / 8; ++j)\n              st_shared_u32(row_addr + r * 8 * 128 + (j / 8) * BN * 128 + (((j % 8) ^ g) << 4),\n                            pack2<T>(o_acc[4 * j + 2 * r] * inv[r], o_acc[4 * j + 2 * r + 1] * inv[r]));\n          }\n          fence_proxy_async_shared();              // these writes, before the TMA reads them\n          named_sync(kEpilogueBarrier + cw, 128);  // the warpgroup\'s 128 threads have written\n          if (threadIdx.x % 128 == 0) {\n            if (m0 + cw * 64 < s_q) {  // a slice wholly past s_q stores nothing (still releases V)\n#pragma unroll\n              for (int p = 0; p < kPanels; ++p)  // a panel wholly past d (136 <= d <= 192) stores nothing\n                if (p * 64 < d) tma_store(&tm_o, o_half + p * BN * 128, p * 64, w.head, m0 + cw * 64, w.batch);\n            }\n            bulk_commit();\n            bulk_wait_read<0>();                     // the store has read the V stage\n            mbar_arrive_count(empty_v(s_last), 4);   // for this warpgroup\'s 4 warps\n          }\n',
     "          // next_d256ostage: d256's epilogue through 32 KB of shared memory of its own, beside the one Q buffer and\n          // the one K/V stage: warpgroup cw stages its 64 rows x 128 columns (two 64-column panels, 8 KB each, in\n          // the TMA's 128-byte swizzle) at + cw * 16 KB, stores them, waits for the store to read them and stages\n          // the other 128 columns. The last key block's V stage went back to the producer in the loop, so the next\n          // tile's first V no longer waits for this store.\n          const uint32_t o_half = bars - kOStageBytes<Dp, kTmaEpi> + cw * 16384;\n          float inv[2];\n#pragma unroll\n          for (int r = 0; r < 2; ++r) {\n            float l = row_sum[r];\n            l += __shfl_xor_sync(0xffffffff, l, 1);\n            l += __shfl_xor_sync(0xffffffff, l, 2);\n            inv[r] = l > 0.f ? 1.f / l : 0.f;\n          }\n          const uint32_t row_addr = o_half + (warp * 16 + g) * 128 + 4 * t;\n#pragma unroll\n          for (int h = 0; h < 2; ++h) {\n            // The region is free once this warpgroup's previous store (the last tile's second half, or this\n            // tile's first) has read it.\n            if (threadIdx.x % 128 == 0) bulk_wait_read<0>();\n            named_sync(kEpilogueBarrier + cw, 128);\n#pragma unroll\n            for (int r = 0; r < 2; ++r) {\n#pragma unroll\n              for (int jj = 0; jj < 16; ++jj) {\n                const int j = 16 * h + jj;\n                st_shared_u32(row_addr + r * 8 * 128 + (jj / 8) * 64 * 128 + (((jj % 8) ^ g) << 4),\n                              pack2<T>(o_acc[4 * j + 2 * r] * inv[r], o_acc[4 * j + 2 * r + 1] * inv[r]));\n              }\n            }\n            fence_proxy_async_shared();              // these writes, before the TMA reads them\n            named_sync(kEpilogueBarrier + cw, 128);  // the warpgroup's 128 threads have written\n            if (threadIdx.x % 128 == 0) {\n              if (m0 + cw * 64 < s_q) {  // a slice wholly past s_q stores nothing\n#pragma unroll\n                for (int pp = 0; pp < 2; ++pp)  // a panel wholly past d (136 <= d <= 192) stores nothing\n                  if ((2 * h + pp) * 64 < d)\n                    tma_store(&tm_o, o_half + pp * 64 * 128, (2 * h + pp) * 64, w.head, m0 + cw * 64, w.batch);\n              }\n              bulk_commit();\n            }\n          }\n"),
    ('  constexpr int smem = smem_bytes<Dp, kM, kN>();\n',
     '  constexpr int smem = smem_bytes<Dp, kM, kN>() + kOStageBytes<Dp, kTmaEpi>;\n'),
]

# Session 18 (compile-checked, not run): next_qk1early (an edit of v32). Fitted over v32's unmasked launches, a 128-row
# d96/d128 tile at s_k <= 1024 costs 1.0-1.4 block-times besides its blocks (1.5 us a 128-key block, 1.6-2.1 us a tile):
# 20-26% of an s512 tile. One part: the FA3 order's first softmax runs with nothing of its warpgroup on the tensor
# cores, and both warpgroups reach it together. O is not live then if P_0 V_0's first k-step writes it (scale-d 0,
# output-only operands: _rs_first_wrappers), so a second S accumulator fits: S_0 and S_1 are issued together, softmax 0
# runs under Q K^T 1, then P_0 V_0 under softmax 1, and the loop goes on from block 2. Only the unmasked d128 launches
# at s_k <= 2048 on 128-row tiles take it, on 2 new instantiations (kHalfDiag false, so causal is a compile-time 0
# there; a tile with one key block keeps the old first block, in a branch whose wgmmas are waited for inside it). The
# 36 other functions' SASS is v32's; 0 spills, no serialised wgmma (d96 spilled 16 bytes and serialised its wgmmas
# this way, so it is left out; a copy of S_1 into the loop's accumulator serialised d128 too). protocol_model.py plays
# it and catches a control that releases V_0 before P_0 V_0 completes. next_qk1ctl is the control: the same new
# instantiations without the early S_1 (the compile-time causal alone, as next_nocausal, which was level elsewhere).
# Predicted: unmasked d128 s <= 1024 +3..+6% kernel time, s2048 +1..+2%. Command: `KS_ROUNDS=2 KS_BY=d,causal bash
# $S/device_run.sh groups "short128 v32=$K/kernel.cu qk1ctl=$K/gen/next_qk1ctl.cu qk1early=$K/gen/next_qk1early.cu"`
# and the edge shapes with KS_EDGE_SOURCES=$K/gen/next_qk1early.cu.
def _rs_first_wrappers() -> str:
    """next_qk1early: P V's first k-step with O as output only (scale-d 0), for m64n96 / m64n128, bf16 / f16, so O
    is not live (and holds no zeros) while the prologue's two S accumulators are."""
    out = []
    for n in (96, 128):
        for ty in ("bf16", "f16"):
            regs = n // 2
            dl = ", ".join(f"%{i}" for i in range(regs))
            outs = ", ".join(f'"=f"(d[{i}])' for i in range(regs))
            out.append(
                f"__device__ __forceinline__ void wgmma_rs_n{n}_{ty}_first(float (&d)[{regs}], const uint32_t (&a)[4], uint64_t db) {{\n"
                f"  asm volatile(\n"
                f"      \"{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{regs + 5}, 0;\\n\"\n"
                f"      \"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ty}.{ty} {{\"\n"
                f"      \"{dl}\"\n"
                f"      \"}}, {{%{regs}, %{regs + 1}, %{regs + 2}, %{regs + 3}}}, %{regs + 4}, p, 1, 1, 1;\\n}}\\n\"\n"
                f"      : {outs}\n"
                f"      : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"l\"(db), \"r\"(0));\n"
                f"}}\n")
    out.append(
        "// O(64 x N) = P V's first k-step: O's old values are not read (scale-d 0), so it needs no zeros before.\n"
        "template <typename T, int N>\n"
        "__device__ __forceinline__ void mma_pv_first(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t db) {\n"
        "  static_assert(N == 96 || N == 128);\n"
        "  if constexpr (N == 96) {\n"
        "    if constexpr (kIsBf16<T>) wgmma_rs_n96_bf16_first(d, a, db); else wgmma_rs_n96_f16_first(d, a, db);\n"
        "  } else {\n"
        "    if constexpr (kIsBf16<T>) wgmma_rs_n128_bf16_first(d, a, db); else wgmma_rs_n128_f16_first(d, a, db);\n"
        "  }\n"
        "}\n\n")
    return "".join(out)


# The parts of next_qk1early by name: next_qk1ctl takes the instantiations (causal 0, the dispatch) without the
# early S_1 and the output-only wrappers it needs.
QK1_CAUSAL0_EDIT = (
    '  if constexpr (kM == 192) asm volatile("mov.b32 %0, %0;" : "+r"(base));\n',
    '  if constexpr (kM == 192) asm volatile("mov.b32 %0, %0;" : "+r"(base));\n  if constexpr (!kHalfDiag && Dp == 128 && kM == 128) causal = 0;  // next_qk1early: its instantiations run unmasked only\n')
QK1_DISPATCH_EDIT = (
    '  if (d <= 96) return KS_LAUNCH(128, 128, 6);\n  if (d <= 128) return KS_LAUNCH(128, 128, 8);\n',
    '  if (d <= 96) return KS_LAUNCH(128, 128, 6);\n  // next_qk1early: short unmasked d128 launches on 128-row tiles run their own instantiations (S_0 and S_1 together)\n  if (d <= 128 && tma && !causal)\n    return launch<T, 128, 128, 8, true, 128, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);\n  if (d <= 128) return KS_LAUNCH(128, 128, 8);\n')
QK1EARLY_EDITS = [
    ('__device__ __forceinline__ float fast_exp2(float x) {\n',
     _rs_first_wrappers() + '__device__ __forceinline__ float fast_exp2(float x) {\n'),
    QK1_CAUSAL0_EDIT,
    ("        // First key block of the FA3 order (the diagonal / tail one, or the one after a half-width diagonal\n        // block): scores, softmax, P. O is zero (no rescale), or holds the diagonal block's P V (rescaled here).\n        int s = stage;\n        uint32_t parity = phase;\n        if (++stage == kStages) { stage = 0; phase ^= 1; }\n        mbar_wait(full_k(s), parity);\n        wgmma_fence();\n        issue_qk(s);\n        wgmma_wait<0>();\n        fence_regs(s_acc);\n        release(empty(s));  // K of this stage: its Q K^T has completed\n        if constexpr (kTmaEpi) release_staged();  // the previous tile's O store has had this Q K^T\n        mask(n_blocks - 1 - first);\n        softmax();\n        if (first && rescaled) rescale_o<kDv<Dp, kQkSteps>>(o_acc, alpha);\n        to_p();\n",
     "        // First key block of the FA3 order (the diagonal / tail one, or the one after a half-width diagonal\n        // block): scores, softmax, P. O is zero (no rescale), or holds the diagonal block's P V (rescaled here).\n        int s = stage;\n        uint32_t parity = phase;\n        if (++stage == kStages) { stage = 0; phase ^= 1; }\n        if constexpr (!kHalfDiag && kQkSteps == 8 && BN == 128) {\n          // next_qk1early (unmasked d128 at s_k <= 2048 on 128-row tiles): with two or more key blocks S_0 and S_1\n          // are issued together, the softmax of block 0 runs while S_1 is on the tensor cores (O is not live yet:\n          // P_0 V_0's first k-step writes it, so two S accumulators fit), then P_0 V_0 runs under the softmax of\n          // block 1 and the loop goes on from block 2. S_0 goes into a second accumulator and S_1 into the loop's,\n          // so nothing is copied. Every wgmma of the branch is waited for inside it. (d96 spills 16 bytes this way.)\n          if (n_blocks > 1) {\n            first = 1;\n            const int s0 = s;\n            const uint32_t parity0 = parity;\n            s = stage;\n            parity = phase;\n            if (++stage == kStages) { stage = 0; phase ^= 1; }\n            float s_acc0[BN / 2];\n            mbar_wait(full_k(s0), parity0);\n            mbar_wait(full_k(s), parity);\n            wgmma_fence();\n            {\n              const uint64_t k_desc = smem_desc(sK + __shfl_sync(0xffffffff, s0, 0) * kKVBytes, 16, 1024);\n#pragma unroll\n              for (int kk = 0; kk < kQkSteps; ++kk) {\n                const uint32_t off = (kk % 4) * 32;\n                const uint64_t da = smem_desc_at(q_desc, (kk / 4) * Cfg::kBlockM * 128 + off);\n                const uint64_t db = smem_desc_at(k_desc, (kk / 4) * BN * 128 + off);\n                mma_qk<T, BN>(s_acc0, da, db, kk > 0);\n              }\n              wgmma_commit();\n            }\n            issue_qk(s);\n            wgmma_wait<1>();  // S_0 has completed; S_1 may still run\n            fence_regs(s_acc0);\n            release(empty(s0));  // K_0: its Q K^T has completed\n            if constexpr (kTmaEpi) release_staged();  // the previous tile's O store has had this Q K^T\n            mask_scores<BN>(s_acc0, (n_blocks - 1) * BN, s_k, causal, m0, diag, row0, t);\n            online_softmax<BN>(s_acc0, row_max, row_sum, alpha, scale_log2);  // O is not live: no rescale\n            pack_p<T, BN>(s_acc0, p_frag);\n            mbar_wait(full_v(s0), parity0);\n            wgmma_fence();\n            {  // P_0 V_0: its first k-step writes O (scale-d 0)\n              const uint64_t v_desc = smem_desc_v(sV + __shfl_sync(0xffffffff, s0, 0) * kKVBytes, BN * kVRowBytes<Dp, kQkSteps>, 8 * kVRowBytes<Dp, kQkSteps>, kV64<Dp, kQkSteps>);\n              mma_pv_first<T, kDv<Dp, kQkSteps>>(o_acc, p_frag[0], v_desc);\n#pragma unroll\n              for (int kk = 1; kk < BN / 16; ++kk)\n                mma_pv<T, kDv<Dp, kQkSteps>>(o_acc, p_frag[kk], smem_desc_at(v_desc, kk * 16 * kVRowBytes<Dp, kQkSteps>));\n              wgmma_commit();\n            }\n            wgmma_wait<1>();  // S_1 has completed (committed before P_0 V_0); P_0 V_0 may still run\n            fence_regs(s_acc);\n            release(empty(s));  // K_1\n            mask(n_blocks - 2);\n            softmax();\n            named_sync(after_softmax_barrier_id(row_sum, 1 + cw), 128);  // the softmax stays ahead of the wait\n            wgmma_wait<0>();\n            fence_regs(o_acc);\n            fence_frag(p_frag);\n            release(empty_v(s0));  // V_0: P_0 V_0 has completed\n            if (rescaled) rescale_o<kDv<Dp, kQkSteps>>(o_acc, alpha);\n            to_p();\n          } else {\n            mbar_wait(full_k(s), parity);\n            wgmma_fence();\n            issue_qk(s);\n            wgmma_wait<0>();\n            fence_regs(s_acc);\n            release(empty(s));  // K of this stage: its Q K^T has completed\n            if constexpr (kTmaEpi) release_staged();  // the previous tile's O store has had this Q K^T\n            mask(n_blocks - 1 - first);\n            softmax();\n            if (first && rescaled) rescale_o<kDv<Dp, kQkSteps>>(o_acc, alpha);\n            to_p();\n          }\n        } else {\n          mbar_wait(full_k(s), parity);\n          wgmma_fence();\n          issue_qk(s);\n          wgmma_wait<0>();\n          fence_regs(s_acc);\n          release(empty(s));  // K of this stage: its Q K^T has completed\n          if constexpr (kTmaEpi) release_staged();  // the previous tile's O store has had this Q K^T\n          mask(n_blocks - 1 - first);\n          softmax();\n          if (first && rescaled) rescale_o<kDv<Dp, kQkSteps>>(o_acc, alpha);\n          to_p();\n        }\n"),
    QK1_DISPATCH_EDIT,
]

QK1CTL_EDITS = [QK1_CAUSAL0_EDIT, QK1_DISPATCH_EDIT]

# next_unmasked: next_qk1ctl's +1.7% (session 19, call 1) came from compiling causal = 0 into the unmasked short d128
# 128-row launch, which shared its function with the causal ones. Here every unmasked d96/d128 launch runs a function
# of its own (kHalfDiag false: causal 0 at compile time, as next_nocausal did for d64/d256), the long ones too; the never-called
# non-TMA 128-key 128-row d96/d128 functions go; and d256 takes next_d256ostage (+3.3% kernel time in the same call).
UNMASKED_DISPATCH_EDITS = [
    ("    if (d <= 96) return launch<T, 128, 192, 6, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);\n"
     "    return launch<T, 128, 192, 8, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);\n",
     "    if (d <= 96)\n"
     "      return causal ? launch<T, 128, 192, 6, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st)\n"
     "                    : launch<T, 128, 192, 6, false, 128, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);\n"
     "    return causal ? launch<T, 128, 192, 8, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st)\n"
     "                  : launch<T, 128, 192, 8, false, 128, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);\n"),
    ("    if (d <= 96) return launch<T, 128, 128, 6, false, 160>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);\n"
     "    return launch<T, 128, 128, 8, false, 160>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);\n",
     "    if (d <= 96)\n"
     "      return causal ? launch<T, 128, 128, 6, false, 160>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st)\n"
     "                    : launch<T, 128, 128, 6, false, 160, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);\n"
     "    return causal ? launch<T, 128, 128, 8, false, 160>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st)\n"
     "                  : launch<T, 128, 128, 8, false, 160, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);\n"),
    ("  if (d <= 96) return KS_LAUNCH(128, 128, 6);\n  if (d <= 128) return KS_LAUNCH(128, 128, 8);\n",
     "  // Only short keys reach here for d96/d128 (the TMA epilogue); unmasked launches run their own functions.\n"
     "  if (d <= 96)\n"
     "    return causal ? launch<T, 128, 128, 6, true>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st)\n"
     "                  : launch<T, 128, 128, 6, true, 128, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);\n"
     "  if (d <= 128)\n"
     "    return causal ? launch<T, 128, 128, 8, true>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st)\n"
     "                  : launch<T, 128, 128, 8, true, 128, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);\n"),
]
UNMASKED_EDITS = [
    ("  if constexpr (kM == 192) asm volatile(\"mov.b32 %0, %0;\" : \"+r\"(base));\n",
     "  if constexpr (kM == 192) asm volatile(\"mov.b32 %0, %0;\" : \"+r\"(base));\n"
     "  // next_unmasked: the dispatch runs the d96/d128 instantiations without kHalfDiag for unmasked launches only\n"
     "  // (d64 and d256 keep v32's code: next_nocausal measured them level)\n"
     "  if constexpr (!kHalfDiag && Dp == 128) causal = 0;\n"),
] + UNMASKED_DISPATCH_EDITS + D256OSTAGE_EDITS

# name -> (base file in best/, header lines, [(old, new) or (old, new, count), ...])
VARIANTS: dict[str, tuple[str, str, list[tuple]]] = {
    "next_r192diag": ("kernel.cu", "// next_r192diag: v30 + causal 192-row d96/d128 tiles skip / halve their diagonal block per warpgroup.\n",
                      R192DIAG_EDITS),
    "next_nocausal": ("kernel.cu", "// next_nocausal: v32 with causal = 0 at compile time in the unmasked-only instantiations.\n",
                      NOCAUSAL_EDITS),
    "next_d256ostage": ("kernel.cu", "// next_d256ostage: v32 with d256's TMA epilogue staging O in 32 KB of its own (V released in the loop).\n",
                        D256OSTAGE_EDITS),
    "next_qk1early": ("kernel.cu", "// next_qk1early: v32 with the unmasked short 128-row d128 tiles issuing S_0 and S_1 together.\n",
                      QK1EARLY_EDITS),
    "next_qk1ctl": ("kernel.cu", "// next_qk1ctl: v32 with the unmasked short 128-row d128 tiles on their own instantiations (causal 0).\n",
                    QK1CTL_EDITS),
    "next_unmasked": ("kernel.cu", "// next_unmasked: v32 with every unmasked d96/d128 launch on a function of its own (causal 0) + next_d256ostage.\n",
                      UNMASKED_EDITS),
    "probe_rows192": ("kernel.cu", "// probe_rows192: best/kernel.cu with every unmasked d96/d128 launch on 192-row tiles.\n",
                      ROWS192_EDITS),
    "probe_samekv": ("kernel.cu", "// probe_samekv (wrong output by design): best/kernel.cu loading every key block from block 0.\n",
                     SAMEKV_EDITS),
    "probe_noload": ("kernel.cu", "// probe_noload (wrong output by design): best/kernel.cu loading a tile's first kStages key blocks only.\n",
                     NOLOAD_EDITS),
}

# Kernel instantiations of a candidate whose count is not best/kernel.cu's (tests/flash/test_kernel_build.py checks it).
INSTANTIATIONS: dict[str, int] = {"next_r192diag": 40, "next_qk1early": 38, "next_qk1ctl": 38, "next_unmasked": 44}


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


def _git(repo: Path, *args: str) -> str:
    try:
        out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, encoding="utf-8", timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise VariantError(f"git {' '.join(args)}: {e}") from None
    if out.returncode != 0:
        raise VariantError(f"git {' '.join(args)}: {(out.stderr.strip().splitlines() or ['failed'])[-1]}")
    return out.stdout


def short_sha(commit: str, repo: Path = REPO) -> str:
    """COMMIT's abbreviated hash; VariantError if the repository has no such commit."""
    return _git(repo, "rev-parse", "--short=7", "--verify", f"{commit}^{{commit}}").strip()


def render_at(commit: str, name: str, repo: Path = REPO) -> str:
    """NAME as COMMIT's variants.py rendered it from COMMIT's best/ files ('kernel': COMMIT's best/kernel.cu)."""
    best_rel = BEST.relative_to(REPO).as_posix()
    short_sha(commit, repo)
    if name == "kernel":
        return _git(repo, "show", f"{commit}:{best_rel}/kernel.cu")
    with tempfile.TemporaryDirectory() as tmp:
        # The old module finds its base files beside itself, as it did in the repository: scripts/ and best/.
        (Path(tmp) / "scripts").mkdir()
        (Path(tmp) / "best").mkdir()
        script = Path(tmp) / "scripts" / "variants.py"
        script.write_text(_git(repo, "show", f"{commit}:{Path(__file__).relative_to(REPO).as_posix()}"))
        for path in _git(repo, "ls-tree", "--name-only", f"{commit}:{best_rel}").split():
            if path.endswith(".cu"):
                (Path(tmp) / "best" / path).write_text(_git(repo, "show", f"{commit}:{best_rel}/{path}"))
        spec = importlib.util.spec_from_file_location(f"variants_at_{commit}", script)
        old = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(old)
            if name not in old.VARIANTS:
                raise VariantError(f"no variant {name!r} at {commit} (there: {', '.join(old.VARIANTS) or 'none'})")
            return old.render(name)
        except VariantError:
            raise
        except Exception as e:  # the old module's own VariantError, or a file that no longer loads
            raise VariantError(f"{name} at {commit}: {e}") from None


def main(argv: list[str]) -> int:
    at = None
    if argv[:1] == ["--at"]:
        if len(argv) < 3:
            print("variants.py: --at COMMIT NAME [NAME ...] (NAME 'kernel': that commit's best/kernel.cu)",
                  file=sys.stderr)
            return 2
        at, argv = argv[1], argv[2:]
    names = argv or list(VARIANTS)
    try:
        if at is None:
            texts = {f"{name}.cu": render(name) for name in names}  # all or nothing
        else:
            sha = short_sha(at)
            texts = {f"{name}-{sha}.cu": render_at(at, name) for name in names}
    except VariantError as e:
        print(f"variants.py: {e}", file=sys.stderr)
        return 2
    OUT.mkdir(exist_ok=True)
    for file_name, text in texts.items():
        (OUT / file_name).write_text(text)
        print(OUT / file_name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
