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

# Session 11: next_tilepipe again, on v23. Session 10's form (an edit of v21) lost 3.6% on short128 (s512 -6%) in
# session 11's call 1. Its wait profile at d128-h16-16-s512 (results/2026-12-03-h200-s11-call2-wait-*.txt): the
# consumers' waits fell by ~625 cycles a warpgroup-tile (the first Q K^T's 473 and the last P V's 434 were gone), but
# their other cycles rose by ~1080: the peek at the next tile decoded its index (five more integer divisions, IABS
# 21 -> 37 in the SASS) and the first Q K^T has extra issue sites. On v23 the slot holds the decoded tile, so the peek
# and the first-tile test read its n_blocks word instead: the d128 TMA-epilogue functions grow by 128-136
# instructions over v23's (session 10's form: +368 over v21's); the other 22 compile to v23's SASS. Same protocol as
# session 10's form (scripts/protocol_model.py, "tilepipe"). Predicted: +1-2% on d96/d128 at s = 512, level at 2048
# (the ~625 saved cycles against ~300-400 of remaining extra issue, of a ~15700-cycle tile).
TILEPIPE2_EDITS = [
    (
     "//                  store has read it (checked at the next tile's first S, or at exit).\n",
     "//                  store has read it (checked at the next tile's first S, or at exit; d96/d128: after\n"
     "//                  the next tile's first softmax, that tile's first S having run under this epilogue).\n"),
    (
     "// Barriers: fullK[S], fullV[S], empty[S], qFull[QB], qEmpty[QB], tileFull[TS], tileEmpty[TS].\n",
     "// d96/d128 with the TMA epilogue: each tile's first S = Q K^T is issued under the previous tile's last\n"
     "// P V and epilogue (into an accumulator that outlives the tile), not at the tile's start.\n"
     "template <int Dp, bool kTmaEpi> constexpr bool kQkAhead = Dp == 128 && kTmaEpi;\n"
     "\n"
     "// Barriers: fullK[S], fullV[S], empty[S], qFull[QB], qEmpty[QB], tileFull[TS], tileEmpty[TS].\n"),
    (
     "__device__ __forceinline__ float fast_exp2(float x) {\n",
     "// S = Q K^T of one key block, both operands in shared memory (K-major, 128-byte swizzle): issued and\n"
     "// committed, not waited for. q_desc / k_desc: the descriptors of the Q slice's and the K stage's first panel.\n"
     "template <typename T, int BN, int kQkSteps, int kBlockM>\n"
     "__device__ __forceinline__ void issue_qk_smem(float (&s)[BN / 2], uint64_t q_desc, uint64_t k_desc) {\n"
     "#pragma unroll\n"
     "  for (int kk = 0; kk < kQkSteps; ++kk) {\n"
     "    const uint32_t off = (kk % 4) * 32;  // 16 columns = 32 bytes inside a 128-byte row\n"
     "    mma_qk<T, BN>(s, smem_desc_at(q_desc, (kk / 4) * kBlockM * 128 + off), smem_desc_at(k_desc, (kk / 4) * BN * 128 + off),\n"
     "                  kk > 0);\n"
     "  }\n"
     "  wgmma_commit();\n"
     "}\n"
     "\n"
     "__device__ __forceinline__ float fast_exp2(float x) {\n"),
    (
     "\n"
     "  while (true) {\n",
     "  // kQkAhead: each tile's first S = Q K^T, issued before the tile starts (see the tile loop).\n"
     "  float s_ahead[BN / 2];\n"
     "  if constexpr (kQkAhead<Dp, kTmaEpi>) {  // the first tile's, waited for at once (nothing to overlap)\n"
     "    mbar_wait(tile_full(slot), slot_phase);\n"
     "    if (static_cast<int>(ld_shared_u32(slots + kSlotBytes * slot + 12)) > 0) {  // its n_blocks (the sentinel's: -1)\n"
     "      mbar_wait(q_full(q_buf), q_phase);\n"
     "      mbar_wait(full_k(stage), phase);\n"
     "    }\n"
     "    wgmma_fence();\n"
     "    issue_qk_smem<T, BN, kQkSteps, Cfg::kBlockM>(s_ahead, smem_desc(sQ + cw * 64 * 128, 16, 1024),\n"
     "                                                 smem_desc(sK, 16, 1024));  // buffer 0, stage 0\n"
     "    wgmma_wait<0>();\n"
     "    fence_regs(s_ahead);\n"
     "  }\n"
     "\n"
     "  while (true) {\n"),
    (
     "      mbar_wait(q_full(qb), q_phase);\n"
     "      if (++q_buf == kQBufs) { q_buf = 0; q_phase ^= 1; }\n"
     "    }\n"
     "\n"
     "    if constexpr (Dp == 128) {  // d96, d128 (d256 with this loop spills 16 bytes: kept on v6's loop)\n",
     "      if constexpr (!kQkAhead<Dp, kTmaEpi>) mbar_wait(q_full(qb), q_phase);  // kQkAhead: by peek_next\n"
     "      if (++q_buf == kQBufs) { q_buf = 0; q_phase ^= 1; }\n"
     "    }\n"
     "\n"
     "    if constexpr (kQkAhead<Dp, kTmaEpi>) {\n"
     "      // d96/d128 with the TMA epilogue: the FA3-order loop below, but the tile's first S = Q K^T was issued\n"
     "      // (and has completed) under the previous tile's last P V and epilogue: this tile's last P V runs\n"
     "      // together with the next tile's first Q K^T, which also overlaps this tile's O normalisation and its\n"
     "      // writes to shared memory. The tile's epilogue is in this branch (not the shared one after the key\n"
     "      // loops), so that every issue of s_ahead's wgmmas and the wait for it lie on one straight path: ptxas\n"
     "      // serialises every wgmma of the function (C7515) when a wgmma issued on one side of a branch is\n"
     "      // waited for after the join, even where the other side is never taken at run time.\n"
     "      // Whether the next tile (read from the tile ring, not taken: the loop's top takes it) has keys; if\n"
     "      // so, its Q and first K have landed (Q buffer q_buf, K stage `stage`: the counters are past this tile).\n"
     "      auto peek_next = [&] {\n"
     "        mbar_wait(tile_full(slot), slot_phase);\n"
     "        if (static_cast<int>(ld_shared_u32(slots + kSlotBytes * slot + 12)) > 0) {  // the next tile's n_blocks\n"
     "          mbar_wait(q_full(q_buf), q_phase);\n"
     "          mbar_wait(full_k(stage), phase);\n"
     "        }\n"
     "      };\n"
     "      // The next tile's first S = Q K^T into s_ahead, issued unconditionally (see above): without a next\n"
     "      // tile with keys (the sentinel, or a tile that sees no key) it reads whatever Q buffer q_buf and stage\n"
     "      // `stage` hold, and the result is never read. Both indices are broadcast from lane 0 (uniform datapath).\n"
     "      auto issue_next_qk = [&] {\n"
     "        issue_qk_smem<T, BN, kQkSteps, Cfg::kBlockM>(\n"
     "            s_ahead, smem_desc(sQ + __shfl_sync(0xffffffff, q_buf, 0) * kQBytes + cw * 64 * 128, 16, 1024),\n"
     "            smem_desc(sK + __shfl_sync(0xffffffff, stage, 0) * kKVBytes, 16, 1024));\n"
     "      };\n"
     "      if (n_blocks > 0) {\n"
     "        float (&s_acc)[BN / 2] = s_ahead;\n"
     "        uint32_t p_frag[BN / 16][4];\n"
     "        float alpha[2];\n"
     "        // Q's descriptor from the buffer index broadcast from lane 0 (provably warp-uniform: it stays on the\n"
     "        // uniform datapath through the key loop).\n"
     "        const uint64_t q_desc = smem_desc(sQ + __shfl_sync(0xffffffff, qb, 0) * kQBytes + cw * 64 * 128, 16, 1024);\n"
     "        auto issue_qk = [&](int st) {\n"
     "          issue_qk_smem<T, BN, kQkSteps, Cfg::kBlockM>(\n"
     "              s_acc, q_desc, smem_desc(sK + __shfl_sync(0xffffffff, st, 0) * kKVBytes, 16, 1024));\n"
     "        };\n"
     "        auto issue_pv = [&](int st) {\n"
     "          const uint64_t v_desc = smem_desc(sV + __shfl_sync(0xffffffff, st, 0) * kKVBytes, BN * 128, 1024);\n"
     "#pragma unroll\n"
     "          for (int kk = 0; kk < BN / 16; ++kk) {\n"
     "            const uint64_t db = smem_desc_at(v_desc, kk * 16 * 128);\n"
     "            mma_pv<T, Dp>(o_acc, p_frag[kk], db);\n"
     "          }\n"
     "          wgmma_commit();\n"
     "        };\n"
     "        auto mask = [&](int n) { mask_scores<BN>(s_acc, n * BN, s_k, causal, m0, diag, row0, t); };\n"
     "        bool rescaled = true;\n"
     "        auto softmax = [&] { rescaled = online_softmax<BN>(s_acc, row_max, row_sum, alpha, scale_log2); };\n"
     "        auto to_p = [&] { pack_p<T, BN>(s_acc, p_frag); };\n"
     "        auto release = [&](uint32_t bar) {\n"
     "          __syncwarp();\n"
     "          if (lane == 0) mbar_arrive(bar);\n"
     "        };\n"
     "\n"
     "        // First key block: its S has completed (under the previous tile's epilogue, or before the loop).\n"
     "        int s = stage;\n"
     "        uint32_t parity = phase;\n"
     "        if (++stage == kStages) { stage = 0; phase ^= 1; }\n"
     "        fence_regs(s_acc);\n"
     "        release(empty(s));  // K of this stage: its Q K^T has completed\n"
     "        mask(n_blocks - 1);\n"
     "        softmax();\n"
     "        to_p();\n"
     "        // The previous tile's O store (issued at the end of its epilogue, after this tile's first Q K^T) has\n"
     "        // had this block's softmax to read its Q buffer: hand the buffer back (for the Q of the next tile).\n"
     "        release_staged();\n"
     "\n"
     "        for (int i = 1; i < n_blocks; ++i) {\n"
     "          const int prev = s;\n"
     "          const uint32_t prev_parity = parity;\n"
     "          s = stage;\n"
     "          parity = phase;\n"
     "          if (++stage == kStages) { stage = 0; phase ^= 1; }\n"
     "          const int n = n_blocks - 1 - i;\n"
     "          mbar_wait(full_k(s), parity);\n"
     "          mbar_wait(full_v(prev), prev_parity);\n"
     "          fence_regs(o_acc);\n"
     "          wgmma_fence();\n"
     "          issue_qk(s);\n"
     "          issue_pv(prev);\n"
     "          wgmma_wait<1>();  // S_i has completed; P_{i-1} V_{i-1} may still run\n"
     "          fence_regs(s_acc);\n"
     "          release(empty(s));  // K of this stage: its Q K^T has completed\n"
     "          mask(n);\n"
     "          softmax();\n"
     "          // Keeps the softmax ahead of the wait (see the loop below for the other configurations).\n"
     "          named_sync(after_softmax_barrier_id(row_sum, 1 + cw), 128);\n"
     "          wgmma_wait<0>();\n"
     "          fence_regs(o_acc);\n"
     "          fence_frag(p_frag);\n"
     "          release(empty_v(prev));  // V of the previous stage: P_{i-1} V_{i-1} has completed\n"
     "          if (rescaled) rescale_o<Dp>(o_acc, alpha);\n"
     "          to_p();\n"
     "        }\n"
     "        // The rows' 1 / sum now: its IEEE reciprocal has a slow path (a branch) that must not lie between\n"
     "        // the wgmma issues below and their waits.\n"
     "        float inv[2];\n"
     "#pragma unroll\n"
     "        for (int r = 0; r < 2; ++r) {\n"
     "          float l = row_sum[r];\n"
     "          l += __shfl_xor_sync(0xffffffff, l, 1);\n"
     "          l += __shfl_xor_sync(0xffffffff, l, 2);\n"
     "          inv[r] = l > 0.f ? 1.f / l : 0.f;\n"
     "        }\n"
     "        // Last P V, and the next tile's first Q K^T behind it.\n"
     "        mbar_wait(full_v(s), parity);\n"
     "        fence_regs(o_acc);\n"
     "        wgmma_fence();\n"
     "        issue_pv(s);\n"
     "        peek_next();  // under the last P V\n"
     "        wgmma_fence();\n"
     "        issue_next_qk();\n"
     "        wgmma_wait<1>();  // the last P V has completed; the next tile's Q K^T may still run\n"
     "        fence_regs(o_acc);\n"
     "        fence_frag(p_frag);\n"
     "        release(empty_v(s));\n"
     "        // Epilogue through shared memory (as below for the other configurations): normalised O into this\n"
     "        // warpgroup's 64-row slice of the tile's Q buffer, 128-byte swizzled; one thread stores it by TMA.\n"
     "        const uint32_t row_addr = q_half + (warp * 16 + g) * 128 + 4 * t;\n"
     "#pragma unroll\n"
     "        for (int r = 0; r < 2; ++r) {\n"
     "#pragma unroll\n"
     "          for (int j = 0; j < Dp / 8; ++j)\n"
     "            st_shared_u32(row_addr + r * 8 * 128 + (j / 8) * Cfg::kBlockM * 128 + (((j % 8) ^ g) << 4),\n"
     "                          pack2<T>(o_acc[4 * j + 2 * r] * inv[r], o_acc[4 * j + 2 * r + 1] * inv[r]));\n"
     "        }\n"
     "        fence_proxy_async_shared();              // these writes, before the TMA reads them\n"
     "        named_sync(kEpilogueBarrier + cw, 128);  // the warpgroup's 128 threads have written\n"
     "        wgmma_wait<0>();  // the next tile's first S, before the one-thread (divergent) store below\n"
     "        fence_regs(s_ahead);\n"
     "        if (threadIdx.x % 128 == 0) {\n"
     "          if (m0 + cw * 64 < s_q) {  // a slice wholly past s_q stores nothing\n"
     "#pragma unroll\n"
     "            for (int p = 0; p < kPanels; ++p)\n"
     "              tma_store(&tm_o, q_half + p * Cfg::kBlockM * 128, p * 64, w.head, m0 + cw * 64, w.batch);\n"
     "          }\n"
     "          bulk_commit();\n"
     "        }\n"
     "        staged_q = qb;\n"
     "      } else {\n"
     "        // A tile that sees no key (loaded no Q): the next tile's first S first (nothing to overlap it\n"
     "        // with but these stores, which branch per row), then zeros stored directly.\n"
     "        peek_next();\n"
     "        wgmma_fence();\n"
     "        issue_next_qk();\n"
     "        wgmma_wait<0>();\n"
     "        fence_regs(s_ahead);\n"
     "#pragma unroll\n"
     "        for (int r = 0; r < 2; ++r) {\n"
     "          const int row = row0 + 8 * r;\n"
     "          if (row < s_q) {\n"
     "            T* dst = out + ((static_cast<size_t>(w.batch) * s_q + row) * h_q + w.head) * static_cast<size_t>(d);\n"
     "#pragma unroll\n"
     "            for (int j = 0; j < Dp / 8; ++j) {\n"
     "              const int col = 8 * j + 2 * t;\n"
     "              if (col < d) *reinterpret_cast<uint32_t*>(dst + col) = 0u;\n"
     "            }\n"
     "          }\n"
     "        }\n"
     "      }\n"
     "    } else if constexpr (Dp == 128) {  // d96, d128 (d256 with this loop spills 16 bytes: kept on v6's loop)\n"),
    (
     "    if constexpr (kTmaEpi && (kQBufs >= 2 || Dp == 256)) {\n",
     "    if constexpr (kQkAhead<Dp, kTmaEpi>) {\n"
     "      // its own epilogue, above\n"
     "    } else if constexpr (kTmaEpi && (kQBufs >= 2 || Dp == 256)) {\n"),
]

# Session 11 (compile-checked, not yet run): d64 causal at s_q <= 1024 runs 128-row tiles (2 consumer warpgroups, v6's
# loop), and there the four lowest scenarios of the grid sit (0.94-0.97). The tile's first key block is its diagonal
# block, and where the 64 rows of warpgroup 0 see none of that block's last 64 keys (s_q = s_k: always), its Q K^T, its
# softmax and its P V need only half the width: Q K^T as m64n64 (32 accumulators), P V over 64 keys (4 k-steps instead
# of 8). That block is peeled off the key loop for those warpgroups (the loop itself then starts at 1: its body is
# unchanged); each wgmma issued there is waited for on the same path (no C7515). The stage is released as in the loop
# (one arrive a warp), so the protocol is the same. Predicted +3-5% on the four s512/s1024 d64 causal scenarios
# (warpgroup 0 does 10-20% less of its tile; the tensor cores 5-10% less), ~+0.1% on the grid.
DIAG64_EDITS = [
    ("template <typename T> constexpr bool kIsBf16 = std::is_same_v<T, __nv_bfloat16>;\n",
     "// S(64x64) (+)= A(smem, K-major) * B(smem, K-major)^T: half a 128-key block (the d64 diagonal block's first half).\n"
     "#define KS_WGMMA_SS_N64(NAME, TYPE)                                                                           \\\n"
     "  __device__ __forceinline__ void NAME(float (&d)[32], uint64_t da, uint64_t db, int accumulate) {          \\\n"
     "    asm volatile(                                                                                          \\\n"
     "        \"{\\n.reg .pred p;\\nsetp.ne.b32 p, %34, 0;\\n\"                                                     \\\n"
     "        \"wgmma.mma_async.sync.aligned.m64n64k16.f32.\" TYPE \".\" TYPE \" {\"                                \\\n"
     "        \"%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, \"                          \\\n"
     "        \"%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31\"                  \\\n"
     "        \"}, %32, %33, p, 1, 1, 0, 0;\\n}\\n\"                                                                \\\n"
     "        : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3]), \"+f\"(d[4]), \"+f\"(d[5]), \"+f\"(d[6]),          \\\n"
     "          \"+f\"(d[7]), \"+f\"(d[8]), \"+f\"(d[9]), \"+f\"(d[10]), \"+f\"(d[11]), \"+f\"(d[12]), \"+f\"(d[13]),      \\\n"
     "          \"+f\"(d[14]), \"+f\"(d[15]), \"+f\"(d[16]), \"+f\"(d[17]), \"+f\"(d[18]), \"+f\"(d[19]), \"+f\"(d[20]),   \\\n"
     "          \"+f\"(d[21]), \"+f\"(d[22]), \"+f\"(d[23]), \"+f\"(d[24]), \"+f\"(d[25]), \"+f\"(d[26]), \"+f\"(d[27]),   \\\n"
     "          \"+f\"(d[28]), \"+f\"(d[29]), \"+f\"(d[30]), \"+f\"(d[31])                                           \\\n"
     "        : \"l\"(da), \"l\"(db), \"r\"(accumulate));                                                            \\\n"
     "  }\n"
     "KS_WGMMA_SS_N64(wgmma_ss_n64_bf16, \"bf16\")\n"
     "KS_WGMMA_SS_N64(wgmma_ss_n64_f16, \"f16\")\n"
     "#undef KS_WGMMA_SS_N64\n"
     "\n"
     "template <typename T> constexpr bool kIsBf16 = std::is_same_v<T, __nv_bfloat16>;\n"),
    ("  static_assert(N == 128 || N == 160, \"128-key blocks, or 160 for d96/d128 without a mask\");\n"
     "  if constexpr (N == 160) {\n",
     "  static_assert(N == 64 || N == 128 || N == 160, \"128-key blocks, 160 for d96/d128 without a mask, 64: half a block\");\n"
     "  if constexpr (N == 64) {\n"
     "    if constexpr (kIsBf16<T>) wgmma_ss_n64_bf16(d, da, db, acc); else wgmma_ss_n64_f16(d, da, db, acc);\n"
     "  } else if constexpr (N == 160) {\n"),
    ("      for (int i = 0; i < live_blocks; ++i) {\n",
     "      // d64 causal on 128-row tiles: the tile's first key block is its diagonal block. Where this warpgroup's 64\n"
     "      // rows see none of that block's last 64 keys (s_q = s_k: warpgroup 0), the block runs at half width: Q K^T\n"
     "      // as m64n64, the softmax over 64 columns, P V over 64 keys. Peeled off the loop, whose body is unchanged;\n"
     "      // every wgmma here is waited for on this path (a wait after the join would serialise them all: C7515).\n"
     "      int first_block = 0;\n"
     "      if constexpr (Dp == 64 && Cfg::kConsumers == 2) {\n"
     "        const bool half = __shfl_sync(0xffffffff, static_cast<int>(causal && live_blocks > 0 &&\n"
     "                                          (n_blocks - 1) * BN + BN / 2 > m0 + cw * 64 + 63 + diag), 0) != 0;\n"
     "        if (half) {\n"
     "          first_block = 1;\n"
     "          const int s = stage;\n"
     "          const uint32_t parity = phase;\n"
     "          if (++stage == kStages) { stage = 0; phase ^= 1; }\n"
     "          float s_half[BN / 4];\n"
     "          const bool k_ready = mbar_try(full_k(s), parity);\n"
     "          const bool v_ready = mbar_try(full_v(s), parity);\n"
     "          if (!k_ready) mbar_wait(full_k(s), parity);\n"
     "          wgmma_fence();\n"
     "#pragma unroll\n"
     "          for (int kk = 0; kk < kQkSteps; ++kk) {\n"
     "            const uint32_t off = (kk % 4) * 32;  // the first 64 key rows of the K stage: the same descriptors\n"
     "            const uint64_t da = smem_desc_at_lo(smem_desc(q_half, 16, 1024), (kk / 4) * Cfg::kBlockM * 128 + off);\n"
     "            const uint64_t db = smem_desc_at_lo(smem_desc(sK + s * kKVBytes, 16, 1024), (kk / 4) * BN * 128 + off);\n"
     "            mma_qk<T, BN / 2>(s_half, da, db, kk > 0);\n"
     "          }\n"
     "          wgmma_commit();\n"
     "          wgmma_wait<0>();\n"
     "          fence_regs(s_half);\n"
     "          if constexpr (kTmaEpi && kQBufs >= 2) {\n"
     "            release_staged();  // the previous tile's O store has had this Q K^T to read its buffer\n"
     "          } else if (n_blocks == 1) {\n"
     "            __syncwarp();\n"
     "            if (lane == 0) mbar_arrive(q_empty(qb));  // the tile's last Q K^T has completed\n"
     "          }\n"
     "          mask_scores<BN / 2>(s_half, (n_blocks - 1) * BN, s_k, causal, m0, diag, row0, t);\n"
     "          float alpha[2];\n"
     "          online_softmax<BN / 2>(s_half, row_max, row_sum, alpha, scale_log2);  // O is still zero: no rescale\n"
     "          uint32_t p_half[BN / 32][4];\n"
     "          pack_p<T, BN / 2>(s_half, p_half);\n"
     "          if (!v_ready) mbar_wait(full_v(s), parity);\n"
     "          fence_regs(o_acc);\n"
     "          wgmma_fence();\n"
     "#pragma unroll\n"
     "          for (int kk = 0; kk < BN / 32; ++kk) {  // V's first 64 key rows\n"
     "            const uint64_t db = smem_desc_at_lo(smem_desc(sV + s * kKVBytes, BN * 128, 1024), kk * 16 * 128);\n"
     "            mma_pv<T, Dp>(o_acc, p_half[kk], db);\n"
     "          }\n"
     "          wgmma_commit();\n"
     "          wgmma_wait<0>();\n"
     "          fence_regs(o_acc);\n"
     "          __syncwarp();\n"
     "          if (lane == 0) mbar_arrive(empty(s));  // K and V of the stage (d64: one mbarrier)\n"
     "        }\n"
     "      }\n"
     "      for (int i = first_block; i < live_blocks; ++i) {\n"),
]

# name -> (base file in best/, header lines, [(old, new), ...])
VARIANTS: dict[str, tuple[str, str, list[tuple[str, str]]]] = {
    "next_tilepipe2": (
        "kernel.cu",
        "// next_tilepipe2: v23 + d96/d128 (TMA epilogue) issue the next tile's first Q K^T behind this tile's last P V.\n",
        TILEPIPE2_EDITS),
    "next_diag64": (
        "kernel.cu",
        "// next_diag64: v23 + d64 causal 128-row tiles run warpgroup 0's diagonal block at half width.\n",
        DIAG64_EDITS),
}


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
