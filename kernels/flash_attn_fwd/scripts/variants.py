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


# Session 14: probes, not candidates (their output is wrong by design; only scripts/clock_log.py runs them). Long
# shapes run at the 700 W cap (session 9), so the energy a byte of K/V costs on its way in decides how fast they
# run. Against v28 at the same power: probe_samekv loads every key block from the head's block 0 (L2 hits: the
# HBM reads go, the L2 -> SM traffic stays); probe_noload loads a tile's first kStages blocks only and completes
# the later blocks' full barriers by a plain arrive (the consumers reread stale stages: neither traffic is left).
# v28 - samekv is what the HBM reads cost; samekv - noload what the L2 -> SM copies cost, the part a two-CTA
# cluster with TMA multicast of K/V would halve.
_K_LOAD = ("              tma_load(sK + stage * kKVBytes + p * BN * 128, &tm_k, full_k(stage), p * 64, kv_head,\n"
           "                       n * BN, w.batch);\n")
_V_LOAD = ("              tma_load(sV + stage * kKVBytes + p * BN * 128, &tm_v, full_v(stage), p * 64, kv_head,\n"
           "                       n * BN, w.batch);\n")
SAMEKV_EDITS = [(_K_LOAD, _K_LOAD.replace("n * BN", "0")), (_V_LOAD, _V_LOAD.replace("n * BN", "0"))]
NOLOAD_EDITS = [
    ("            mbar_expect_tx(full_k(stage), kKVBytes);\n#pragma unroll\n            for (int p = 0; p < kPanels; ++p)\n" + _K_LOAD,
     "            if (i >= kStages) mbar_arrive(full_k(stage));  // probe: no load after the first kStages blocks\n"
     "            else {\n"
     "            mbar_expect_tx(full_k(stage), kKVBytes);\n#pragma unroll\n            for (int p = 0; p < kPanels; ++p)\n" + _K_LOAD +
     "            }\n"),
    ("            mbar_expect_tx(full_v(stage), kKVBytes);\n#pragma unroll\n            for (int p = 0; p < kPanels; ++p)\n" + _V_LOAD,
     "            if (i >= kStages) mbar_arrive(full_v(stage));\n"
     "            else {\n"
     "            mbar_expect_tx(full_v(stage), kKVBytes);\n#pragma unroll\n            for (int p = 0; p < kPanels; ++p)\n" + _V_LOAD +
     "            }\n"),
]


# Session 14 (an edit of v28). The probes above (call 2, d128-h16-16-s16384, 5 s phases, both rounds alike): v28
# 6.92 ms at 1650 MHz, samekv 6.82 ms at 1665, noload 5.89 ms at 1890, all at 690 W. The L2 -> SM copies of K/V cost
# ~14% of a long d128 shape's time at the power cap (d128-h32-1 the same; d256 8%, d64 3%). A two-CTA cluster on
# adjacent 128-row query blocks of one head shares each K/V copy: each CTA copies half the panels of a stage and
# multicasts them into both CTAs, so each byte crosses from L2 once for two tiles. Both CTAs' consumers release a
# stage to both producers (the empty barriers count 2 x 8 arrivals); the tiles go round-robin (blockIdx.x + k *
# gridDim.x), so a cluster's CTAs always hold the same head; cluster barriers after the mbarrier init and before exit.
# First form: unmasked d96/d128 at s_k > 2048 with an even number of query blocks. Predicted +4-7% there (half the
# copies: about half of noload's gain), level elsewhere (the other launches compile as before: SASS SAME).
_CLUSTER_PTX = """\
// Two-CTA clusters (kCluster): this CTA's rank in its cluster; an arrival on the peer CTA's mbarrier at the same
// shared-memory offset; a barrier over every thread of the cluster.
__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\\n" : "=r"(r));
  return r;
}
// The default (.release at CTA scope): the stage was read by wgmmas that have completed, there are no writes of this
// thread's to order, and the .cluster scope put MEMBAR.ALL.GPU before every arrival (next_cluster: -20%).
__device__ __forceinline__ void mbar_arrive_peer(uint32_t bar, uint32_t peer) {
  asm volatile("{\\n.reg .b32 ra;\\nmapa.shared::cluster.u32 ra, %0, %1;\\n"
               "mbarrier.arrive.shared::cluster.b64 _, [ra];\\n}\\n" ::"r"(bar), "r"(peer) : "memory");
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\\nbarrier.cluster.wait.acquire;\\n" ::: "memory");
}
"""
_MC_LOAD = """\
// The same copy, written into the shared memory of every CTA of the cluster in `mask` (same offset in each), each
// CTA's mbarrier at `bar` counting its bytes.
__device__ __forceinline__ void tma_load_mc(uint32_t dst, const CUtensorMap* map, uint32_t bar,
                                            int c0, int c1, int c2, int c3, uint16_t mask) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%3, %4, %5, %6}], [%2], %7;\\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "h"(mask)
      : "memory");
}

"""
_TPL = "template <typename T, int Dp, int kM, int kQkSteps, bool kTmaEpi, int kN = 128, bool kHalfDiag = true>\n"
_TPLC = "template <typename T, int Dp, int kM, int kQkSteps, bool kTmaEpi, int kN = 128, bool kHalfDiag = true,\n          bool kCluster = false>\n"
_KLOOP = """\
            mbar_expect_tx(full_{x}(stage), kKVBytes);
#pragma unroll
            for (int p = 0; p < kPanels; ++p)
              tma_load(s{X} + stage * kKVBytes + p * BN * 128, &tm_{x}, full_{x}(stage), p * 64, kv_head,
                       n * BN, w.batch);
"""
_KLOOPC = """\
            mbar_expect_tx(full_{x}(stage), kKVBytes);  // in a cluster: half from this CTA's copies, half from the peer's
            if constexpr (kCluster) {{
#pragma unroll
              for (int j = 0; j < kPanels / 2; ++j) {{
                const int p = rank * (kPanels / 2) + j;
                tma_load_mc(s{X} + stage * kKVBytes + p * BN * 128, &tm_{x}, full_{x}(stage), p * 64, kv_head,
                            n * BN, w.batch, 3);
              }}
            }} else {{
#pragma unroll
              for (int p = 0; p < kPanels; ++p)
                tma_load(s{X} + stage * kKVBytes + p * BN * 128, &tm_{x}, full_{x}(stage), p * 64, kv_head,
                         n * BN, w.batch);
            }}
"""
_ARGS = "(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st)"


def cluster_edits(multicast: bool = True, coupled: bool = True) -> list[tuple[str, str]]:
    """next_cluster2's edits; multicast=False copies whole stages locally, coupled=False also leaves the empty
    barriers local (for the controls that split its cost: cluster launch and static tiles, then the coupling)."""
    assert coupled or not multicast, "a multicast copy needs both CTAs' releases"
    kloopc = _KLOOPC if multicast else _KLOOP
    n_empty = "(kCluster ? 2 : 1)" if coupled else "1"
    return [
    ("// Spin until the phase with the given parity has completed.\n",
     _CLUSTER_PTX + "\n// Spin until the phase with the given parity has completed.\n"),
    ("// 4-d tiled copy shared -> global (bulk-group completion), same coordinates as tma_load.",
     _MC_LOAD + "// 4-d tiled copy shared -> global (bulk-group completion), same coordinates as tma_load."),
    (_TPL + "__global__ void __launch_bounds__", _TPLC + "__global__ void __launch_bounds__"),
    (_TPL + "int launch(", _TPLC + "int launch("),
    ("      mbar_init(empty(s), 4 * Cfg::kConsumers);  // one arrive per consumer warp\n"
     "      if constexpr (kSplitKV<Dp>) mbar_init(empty_v(s), 4 * Cfg::kConsumers);\n",
     "      // one arrive per consumer warp, of both CTAs in a cluster (both read what either copies)\n"
     f"      mbar_init(empty(s), 4 * Cfg::kConsumers * {n_empty});\n"
     f"      if constexpr (kSplitKV<Dp>) mbar_init(empty_v(s), 4 * Cfg::kConsumers * {n_empty});\n"),
    ("  __syncthreads();\n\n  if (warpgroup == 0) {\n",
     "  if constexpr (kCluster) cluster_sync();  // the peer copies into and arrives on this CTA's barriers\n"
     "  else __syncthreads();\n\n  if (warpgroup == 0) {\n"),
    ("      uint32_t tile = blockIdx.x;  // first tile without the atomic; then the counter\n",
     "      uint32_t tile = blockIdx.x;  // first tile without the atomic; then the counter\n"
     "      const int rank = kCluster ? static_cast<int>(cluster_rank()) : 0;  // which half of each stage it copies\n"),
    (_KLOOP.format(x="k", X="K"), kloopc.format(x="k", X="K")),
    (_KLOOP.format(x="v", X="V"), kloopc.format(x="v", X="V")),
    ("        tile = atomicAdd(&g_tile_counter, 1u) + gridDim.x;\n",
     "        // a cluster's two CTAs take tiles 2c + rank (+ k x grid): adjacent query blocks of one head, in step\n"
     "        if constexpr (kCluster) tile += gridDim.x;\n"
     "        else tile = atomicAdd(&g_tile_counter, 1u) + gridDim.x;\n"),
    ("      }\n    }\n    return;\n  }\n",
     "      }\n    }\n    if constexpr (kCluster) cluster_sync();  // (every thread of the cluster: see the end)\n    return;\n  }\n"),
    ("  const int g = lane / 4, t = lane % 4;     // accumulator fragment coordinates\n",
     "  const int g = lane / 4, t = lane % 4;     // accumulator fragment coordinates\n"
     "  const uint32_t peer = kCluster ? cluster_rank() ^ 1u : 0u;  // the other CTA of a two-CTA cluster\n"),
    ("        auto release = [&](uint32_t bar) {\n          __syncwarp();\n          if (lane == 0) mbar_arrive(bar);\n        };\n",
     "        // A K/V stage. In a cluster both CTAs' copies write it, so both producers wait for this release.\n"
     "        auto release = [&](uint32_t bar) {\n          __syncwarp();\n          if (lane == 0) mbar_arrive(bar);\n"
     + ("          if constexpr (kCluster)\n            if (lane == 0) mbar_arrive_peer(bar, peer);\n" if coupled else "")
     + "        };\n"),
    ("        if constexpr (!kTmaEpi) release(q_empty(qb));\n",
     "        if constexpr (!kTmaEpi) {  // this CTA's own Q buffer\n          __syncwarp();\n"
     "          if (lane == 0) mbar_arrive(q_empty(qb));\n        }\n"),
    ("    if (threadIdx.x % 128 == 0) bulk_wait<0>();\n  }\n}\n",
     "    if (threadIdx.x % 128 == 0) bulk_wait<0>();\n  }\n"
     "  // The peer may still arrive on this CTA's empty barriers (and this one on its): neither leaves before both are done.\n"
     "  if constexpr (kCluster) cluster_sync();\n}\n"),
    ("      attn_fwd_sm90<T, Dp, kM, kQkSteps, kTmaEpi, kN, kHalfDiag>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);\n",
     "      attn_fwd_sm90<T, Dp, kM, kQkSteps, kTmaEpi, kN, kHalfDiag, kCluster>, cudaFuncAttributeMaxDynamicSharedMemorySize,\n"
     "      smem);\n"),
    ("  const int grid = num_tiles < num_sms() ? num_tiles : num_sms();\n",
     "  int grid = num_tiles < num_sms() ? num_tiles : num_sms();\n"),
    ("  attn_fwd_sm90<T, Dp, kM, kQkSteps, kTmaEpi, kN, kHalfDiag><<<grid, Config<Dp, kM, kN>::kThreads, smem, stream>>>(\n"
     "      tq, tk, tv, to, static_cast<T*>(o), s_q, s_k, h_q, h_kv, d, causal, scale_log2, num_m_blocks,\n"
     "      num_bh, sec, num_tiles);\n",
     "  if constexpr (kCluster) {\n"
     "    // two-CTA clusters; the grid as many whole clusters as fit at once (num_tiles is even here)\n"
     "    const auto kernel = attn_fwd_sm90<T, Dp, kM, kQkSteps, kTmaEpi, kN, kHalfDiag, kCluster>;\n"
     "    cudaLaunchAttribute attr_cluster[1];\n"
     "    attr_cluster[0].id = cudaLaunchAttributeClusterDimension;\n"
     "    attr_cluster[0].val.clusterDim.x = 2;\n"
     "    attr_cluster[0].val.clusterDim.y = 1;\n"
     "    attr_cluster[0].val.clusterDim.z = 1;\n"
     "    cudaLaunchConfig_t cfg = {};\n"
     "    cfg.gridDim = dim3(2);\n"
     "    cfg.blockDim = dim3(Config<Dp, kM, kN>::kThreads);\n"
     "    cfg.dynamicSmemBytes = smem;\n"
     "    cfg.stream = stream;\n"
     "    cfg.attrs = attr_cluster;\n"
     "    cfg.numAttrs = 1;\n"
     "    static const int clusters = [&] {\n"
     "      int n = 0;\n"
     "      return cudaOccupancyMaxActiveClusters(&n, kernel, &cfg) == cudaSuccess ? n : 0;\n"
     "    }();\n"
     "    if (clusters < 1) return 3;\n"
     "    if (grid > 2 * clusters) grid = 2 * clusters;\n"
     "    grid -= grid % 2;\n"
     "    cfg.gridDim = dim3(grid);\n"
     "    if (cudaLaunchKernelEx(&cfg, kernel, tq, tk, tv, to, static_cast<T*>(o), s_q, s_k, h_q, h_kv, d, causal,\n"
     "                           scale_log2, num_m_blocks, num_bh, sec, num_tiles) != cudaSuccess)\n"
     "      return 4;\n"
     "  } else {\n"
     "  attn_fwd_sm90<T, Dp, kM, kQkSteps, kTmaEpi, kN, kHalfDiag><<<grid, Config<Dp, kM, kN>::kThreads, smem, stream>>>(\n"
     "      tq, tk, tv, to, static_cast<T*>(o), s_q, s_k, h_q, h_kv, d, causal, scale_log2, num_m_blocks,\n"
     "      num_bh, sec, num_tiles);\n"
     "  }\n"),
    ("  if (d <= 128 && !tma) {\n",
     "  if (d <= 128 && !tma) {\n"
     "    // unmasked, an even number of query blocks: two-CTA clusters share each K/V copy (multicast)\n"
     "    if (!causal && (s_q + 127) / 128 % 2 == 0) {\n"
     "      if (d <= 96) return launch<T, 128, 128, 6, false, 160, true, true>" + _ARGS + ";\n"
     "      return launch<T, 128, 128, 8, false, 160, true, true>" + _ARGS + ";\n"
     "    }\n"),
    ]


CLUSTER_EDITS = cluster_edits()


# Session 14, after call 4: next_cluster2 (cluster scope of the remote arrivals fixed) still lost, kernel time 0.983 of
# v28 on nomask_long (1 round), worse at longer s (d128 s16384-32768 -3..-7%). Its parts, to be measured apart in the
# next call before another form is built: next_clstatic (cluster launch and round-robin tiles, nothing shared),
# next_clcoupled (+ both CTAs release each stage to both producers, still copying whole stages: the coupling of four
# warpgroups on two SMs through a 2-stage ring), next_cluster2 (+ the multicast: the energy). next_cluster3s gives the
# coupling more slack: 128-key blocks in 3 stages beside one Q buffer (225 KB; the 160-key blocks fit only 2 stages).
# Predicted: clstatic level with v28, clcoupled below it by what cluster2 lost plus the energy it saved (~-5%),
# cluster3s above cluster2 if the coupling is the cost.
CLUSTER3S_EDITS = cluster_edits() + [
    ("template <> struct Config<128, 128, 160> : TileConfig<2, 160, 2, 2, 40, 232> {};\n",
     "template <> struct Config<128, 128, 160> : TileConfig<2, 160, 2, 2, 40, 232> {};\n"
     "// next_cluster3s: the two-CTA cluster's ring (key M = 256 names it; its tiles are 128 rows): 128-key blocks in 3\n"
     "// stages beside one Q buffer, 32 + 3 x 64 KB, so a stage waits for four warpgroups on two SMs with two blocks of slack.\n"
     "template <> struct Config<128, 256, 128> : TileConfig<2, 128, 3, 1, 40, 232> {};\n"),
    ("                  smem_bytes<256>() <= 227 * 1024 && smem_bytes<128, 128, 160>() <= 227 * 1024,\n",
     "                  smem_bytes<256>() <= 227 * 1024 && smem_bytes<128, 128, 160>() <= 227 * 1024 &&\n"
     "                  smem_bytes<128, 256, 128>() <= 227 * 1024,\n"),
    ("launch<T, 128, 128, 6, false, 160, true, true>", "launch<T, 128, 256, 6, false, 128, true, true>"),
    ("launch<T, 128, 128, 8, false, 160, true, true>", "launch<T, 128, 256, 8, false, 128, true, true>"),
]


# next_cluster2d: next_cluster2 with the tiles handed out as v28 does (an atomic counter: a CTA that runs ahead takes
# more), not round-robin, for the case the controls blame the static order (all CTAs held to the slowest one's pace).
# The cluster's leader takes a pair of tiles from the counter and posts it to a mailbox in its peer's shared memory
# (one store and one arrival at cluster scope per tile, not per key block); the peer posts back that it has read it.
_MAILBOX_PTX = """\
// next_cluster2d's tile mailbox: a store into the peer CTA's shared memory, an arrival on its mbarrier that publishes
// it (cluster scope: it orders that store), and a wait that acquires at cluster scope.
__device__ __forceinline__ void st_peer_u32(uint32_t addr, uint32_t peer, uint32_t v) {
  asm volatile("{\\n.reg .b32 ra;\\nmapa.shared::cluster.u32 ra, %0, %1;\\nst.shared::cluster.u32 [ra], %2;\\n}\\n"
               ::"r"(addr), "r"(peer), "r"(v) : "memory");
}
__device__ __forceinline__ void mbar_arrive_peer_publish(uint32_t bar, uint32_t peer) {
  asm volatile("{\\n.reg .b32 ra;\\nmapa.shared::cluster.u32 ra, %0, %1;\\n"
               "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [ra];\\n}\\n" ::"r"(bar), "r"(peer) : "memory");
}
__device__ __forceinline__ void mbar_wait_cluster(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\\n"
      ".reg .pred done;\\n"
      "WAIT_%=:\\n"
      "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%0], %1;\\n"
      "@!done bra WAIT_%=;\\n"
      "}\\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}

"""
CLUSTER2D_EDITS = cluster_edits() + [
    ("// Spin until the phase with the given parity has completed.\n",
     _MAILBOX_PTX + "// Spin until the phase with the given parity has completed.\n"),
    ("  return QB * BM * Dp * 2 + S * 2 * BN * Dp * 2 + num_barriers<Dp, M, N>() * 8 + kTileSlots * kSlotBytes + 1024;\n",
     "  // (+ 32: next_cluster2d's tile mailbox)\n"
     "  return QB * BM * Dp * 2 + S * 2 * BN * Dp * 2 + num_barriers<Dp, M, N>() * 8 + kTileSlots * kSlotBytes + 32 + 1024;\n"),
    ("  const uint32_t slots = bars + 8 * num_barriers<Dp, kM, kN>();  // kTileSlots x kSlotBytes: a decoded tile\n",
     "  const uint32_t slots = bars + 8 * num_barriers<Dp, kM, kN>();  // kTileSlots x kSlotBytes: a decoded tile\n"
     "  // The cluster's tile mailbox: pair_full (waited on in the peer), pair_empty (in the leader), the pair index.\n"
     "  const uint32_t pair_full = slots + kTileSlots * kSlotBytes, pair_empty = pair_full + 8, pair_slot = pair_full + 16;\n"),
    ("      mbar_init(tile_empty(i), 4 * Cfg::kConsumers);  // per consumer warp, after reading the slot\n    }\n",
     "      mbar_init(tile_empty(i), 4 * Cfg::kConsumers);  // per consumer warp, after reading the slot\n    }\n"
     "    if constexpr (kCluster) {\n      mbar_init(pair_full, 1);\n      mbar_init(pair_empty, 1);\n    }\n"),
    ("      const int rank = kCluster ? static_cast<int>(cluster_rank()) : 0;  // which half of each stage it copies\n",
     "      const int rank = kCluster ? static_cast<int>(cluster_rank()) : 0;  // which half of each stage it copies\n"
     "      uint32_t pair_phase = 0;  // the mailbox's phase\n"),
    ("        if constexpr (kCluster) tile += gridDim.x;\n",
     "        if constexpr (kCluster) {  // pairs from the counter: the leader takes one, its peer reads it from the mailbox\n"
     "          if (rank == 0) {\n"
     "            const uint32_t pair = atomicAdd(&g_tile_counter, 1u) + gridDim.x / 2;\n"
     "            mbar_wait(pair_empty, pair_phase ^ 1);  // the peer has read the last one\n"
     "            st_peer_u32(pair_slot, 1, pair);\n"
     "            mbar_arrive_peer_publish(pair_full, 1);\n"
     "            tile = 2 * pair;\n"
     "          } else {\n"
     "            mbar_wait_cluster(pair_full, pair_phase);\n"
     "            const uint32_t pair = ld_shared_u32(pair_slot);\n"
     "            mbar_arrive_peer(pair_empty, 0);\n"
     "            tile = 2 * pair + 1;\n"
     "          }\n"
     "          pair_phase ^= 1;\n"
     "        }\n"),
]


# next_cluster2dc: next_cluster2d on causal d96/d128 at s_k > 2048 too, where the GQA group is even. The causal tile
# order (decode_tile) puts the heads of a section innermost, and a section is a whole number of GQA groups, so tiles
# 2p and 2p + 1 are one query block of two heads that read the same kv head: the same key blocks, the same mask, the
# same count, in the same heavy-first order the counter hands out. (Pairs of adjacent query blocks, as the unmasked
# launches use, differ by up to one key block under the causal mask.) 12 scenarios: d128 h32-8, h64-8, h32-1 at
# s4096-32768; MHA (h16-16) keeps v28's launch. Its own functions are next_cluster2d's (causal is a run-time flag).
CLUSTER2DC_EDITS = CLUSTER2D_EDITS + [
    ("    // unmasked, an even number of query blocks: two-CTA clusters share each K/V copy (multicast)\n"
     "    if (!causal && (s_q + 127) / 128 % 2 == 0) {\n",
     "    // two-CTA clusters share each K/V copy (multicast): unmasked, pairs of query blocks (an even number of them);\n"
     "    // causal, pairs of heads of one GQA group (an even group)\n"
     "    if ((!causal && (s_q + 127) / 128 % 2 == 0) || (causal && h_q / h_kv % 2 == 0)) {\n"),
]


# Session 15 (an edit of v28). Call 1 split the cluster loss: the cluster launch with round-robin tiles alone costs
# 1.4% kernel time (clstatic), the cross-CTA releases 1.8% more (clcoupled), and the shared copies win back under 1%
# (cluster2, cluster2d). The other way to copy fewer K/V bytes per FLOP is a taller query tile: 192 rows (three
# consumer warpgroups, as d64 has run since v6) read each K/V stage for 1.5x the rows, so the L2 -> SM copies per
# FLOP drop by a third (probe_noload: those copies are ~14% of a long d128 shape's energy at the 700 W cap).
# Registers: 512 threads, 32 + 3 x 160 (65536). FA3's loop order (S_{i+1} beside P_i and O) does not fit in 160,
# so the 192-row tiles run v6's loop (as d64 does): the third warpgroup, not the loop order, keeps the tensor cores
# busy during a softmax. 128-key blocks in 2 stages beside 2 Q buffers of 48 KB: 224 KB.
_R192_CONFIG = ("template <> struct Config<128, 128, 160> : TileConfig<2, 160, 2, 2, 40, 232> {};\n",
                "template <> struct Config<128, 128, 160> : TileConfig<2, 160, 2, 2, 40, 232> {};\n"
                "// d96/d128 192x128 tiles (3 consumers on v6's loop, 512 threads): 128*32 + 384*160 = 65536.\n"
                "template <> struct Config<128, 192> : TileConfig<3, 128, 2, 2, 32, 160> {};\n")
_R192_SMEM = ("smem_bytes<256>() <= 227 * 1024 && smem_bytes<128, 128, 160>() <= 227 * 1024,",
              "smem_bytes<256>() <= 227 * 1024 && smem_bytes<128, 128, 160>() <= 227 * 1024 &&\n"
              "                  smem_bytes<128, 192>() <= 227 * 1024,")
_R192_LOOP = ("    if constexpr (Dp == 128) {  // d96, d128",
              "    if constexpr (Dp == 128 && Cfg::kConsumers == 2) {  // d96, d128 on 128-row tiles")

# Call 2 (nomask8, causal_gqa: kernel time +2.8%, +2.9%) lost only where 192-row tiles pad s_q by more than 128-row
# ones do (q2048-k8192 -6%, s4096 causal -1%: 3.1% more rows). next_r192p takes 192 rows only where they pad at most
# 1% more rows than 128 would.
_R192P_ALL = ("  if (d <= 128 && !tma) {\n",
              "  // next_r192p: 192-row tiles on v6's loop where they pad s_q by at most 1% more rows than 128-row tiles\n"
              "  if (d <= 128 && !tma && (s_q + 191) / 192 * 192 * 100 <= (s_q + 127) / 128 * 128 * 101) {\n"
              "    if (d <= 96) return launch<T, 128, 192, 6, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);\n"
              "    return launch<T, 128, 192, 8, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);\n"
              "  }\n"
              "  if (d <= 128 && !tma) {\n")
R192P_EDITS = [_R192_CONFIG, _R192_SMEM, _R192_LOOP, _R192P_ALL]

# A 32-register producer (the 192-row d96/d128 tiles) spilled 24 bytes: the tile slot's and the Q buffer's index
# and phase (four registers), and gridDim.x, which ptxas loaded once and spilled rather than reload. Both are
# per-tile state, off the key loop; with them in one register and gridDim.x read where it is used, 0 spills.
_PRODUCER32_EDITS = [
    ("""      int q_buf = 0;          // Q buffer and phase, advanced per tile that loads Q
      uint32_t q_phase = 0;
      int slot = 0;           // tile-index slot and phase
      uint32_t slot_phase = 0;
""", """      // The tile slot's and the Q buffer's positions share one register: bits 0-1 count the tiles published,
      // bits 2-3 the tiles that loaded Q, each mod 4 (a buffer index and a phase for 2 buffers: count % N and
      // count / N % 2). The 192-row d96/d128 producer has 32 registers; with a buffer and a phase apiece
      // ptxas spilled 24 bytes.
      uint32_t ring = 0;
"""),
    ("""        mbar_wait(tile_empty(slot), slot_phase ^ 1);
""", """        static_assert(kTileSlots == 2 && kQBufs <= 2, "2-bit counters");
        const uint32_t slot_count = ring & 3u;
        const uint32_t slot = slot_count % kTileSlots;
        mbar_wait(tile_empty(slot), (slot_count / kTileSlots & 1) ^ 1);
"""),
    ("""        mbar_arrive(tile_full(slot));
        if (++slot == kTileSlots) { slot = 0; slot_phase ^= 1; }
        if (last) break;
""", """        mbar_arrive(tile_full(slot));
        ring = (ring & 12u) | ((ring + 1) & 3u);
        if (last) break;
"""),
    ("""          mbar_wait(q_empty(q_buf), q_phase ^ 1);
""", """          const uint32_t q_count = ring >> 2;
          const uint32_t q_buf = q_count % kQBufs;
          mbar_wait(q_empty(q_buf), (q_count / kQBufs & 1) ^ 1);
"""),
    ("""                     w.head, w.m_block * Cfg::kBlockM, w.batch);
          if (++q_buf == kQBufs) { q_buf = 0; q_phase ^= 1; }
""", """                     w.head, w.m_block * Cfg::kBlockM, w.batch);
          ring = (ring & 3u) | ((ring + 4) & 12u);
"""),
    ("""        tile = atomicAdd(&g_tile_counter, 1u) + gridDim.x;
""", """        // gridDim.x read here: ptxas kept it in a register across the tile, and spilled it
        uint32_t grid;
        asm volatile("mov.u32 %0, %%nctaid.x;\\n" : "=r"(grid));
        tile = atomicAdd(&g_tile_counter, 1u) + grid;
"""),
]
R192P_EDITS = R192P_EDITS + _PRODUCER32_EDITS

# name -> (base file in best/, header lines, [(old, new), ...])
VARIANTS: dict[str, tuple[str, str, list[tuple[str, str]]]] = {
    "next_cluster2": ("kernel.cu", "// next_cluster2: v28 + two-CTA clusters sharing K/V copies (unmasked d96/d128, s_k > 2048).\n",
                      CLUSTER_EDITS),
    "next_clstatic": ("kernel.cu", "// next_clstatic (a control): next_cluster2's cluster launch and round-robin tiles, no sharing.\n",
                      cluster_edits(multicast=False, coupled=False)),
    "next_clcoupled": ("kernel.cu", "// next_clcoupled (a control): next_clstatic + both CTAs release each stage to both producers.\n",
                       cluster_edits(multicast=False, coupled=True)),
    "next_cluster2d": ("kernel.cu", "// next_cluster2d: next_cluster2 with its tile pairs from the atomic counter (a mailbox to the peer).\n",
                       CLUSTER2D_EDITS),
    "next_cluster2dc": ("kernel.cu", "// next_cluster2dc: next_cluster2d, and causal GQA launches paired by head.\n",
                        CLUSTER2DC_EDITS),
    "next_cluster3s": ("kernel.cu", "// next_cluster3s: next_cluster2 on 128-key blocks in 3 stages beside one Q buffer.\n",
                       CLUSTER3S_EDITS),
    "next_r192p": ("kernel.cu", "// next_r192p: next_r192c where 192-row tiles pad s_q by at most 1% more rows than 128-row tiles; 0-spill producer.\n",
                   R192P_EDITS),
    "probe_samekv": ("kernel.cu", "// probe_samekv (wrong output by design): v28 loading every key block from block 0.\n",
                     SAMEKV_EDITS),
    "probe_noload": ("kernel.cu", "// probe_noload (wrong output by design): v28 loading a tile's first kStages key blocks only.\n",
                     NOLOAD_EDITS),
}

# Kernel instantiations of a candidate whose count is not best/kernel.cu's (tests/flash/test_kernel_build.py checks it).
INSTANTIATIONS: dict[str, int] = {"next_cluster2": 32, "next_clstatic": 32, "next_clcoupled": 32, "next_cluster3s": 32, "next_cluster2d": 32, "next_cluster2dc": 32, "next_r192p": 32}


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
