// FlashAttention forward for Hopper (sm_90a), one self-contained file: the fastest kernel found for this task,
// kept as a worked example (its version history is in lab/flash_attn_fwd/HISTORY.md).
//
// Persistent: one CTA per SM takes tiles (query rows of one batch and head) from a global atomic counter, in an
// order that balances causal work across the wave. Warp-specialised: warpgroup 0 is the producer (one thread
// decodes tiles and issues TMA bulk copies of Q and of K/V blocks into a ring of shared-memory stages guarded by
// mbarriers; it gives most of its registers away with setmaxnreg); warpgroups 1..C are consumers of 64 query rows
// each. Per key block a consumer computes S = Q K^T with wgmma from shared memory, the online softmax in
// registers (exp2 with the scale folded in), then O += P V with P taken from registers, so one consumer's softmax
// overlaps another's matrix work. The epilogue stores O either through shared memory with TMA (short launches) or
// from registers.
//
// Tile shapes are picked per launch from the head dim, the mask and the lengths: 128 or 192 query rows, key blocks
// of 64 to 128, one or two K/V stages and Q buffers, within 227 KB of shared memory and the register file.
// Shared-memory tiles use the 128-byte swizzle (the TMA writes it, the wgmma descriptors read it).
// Head dims: d is padded to 64, 128 or 256 (the TMA zero-fills the extra columns; d96 runs the d128 code). Rows
// past s_q / s_k are zero-filled and keys past s_k masked. Causal masking is bottom-right aligned (query i sees
// key j when j <= i + s_k - s_q); a row that sees no key gets zeros. GQA: query head h reads kv head
// h / (h_q / h_kv). The C entry point returns non-zero, before touching memory, on a shape it does not support.

#include <cuda.h>  // CUtensorMap and its enums (types only; the encoder comes via the runtime)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

namespace {

// Tile shape per padded head dim: consumer warpgroups (64 query rows each), keys per tile,
// pipeline depth (shared memory bound), Q buffers and the setmaxnreg budgets.
template <int Consumers, int BlockN, int Stages, int QBufs, int ProducerRegs, int ConsumerRegs>
struct TileConfig {
  static constexpr int kConsumers = Consumers;
  static constexpr int kBlockM = 64 * Consumers;          // query rows per tile
  static constexpr int kThreads = 128 * (Consumers + 1);  // + the producer warpgroup
  static constexpr int kBlockN = BlockN, kStages = Stages, kQBufs = QBufs;
  static constexpr int kProducerRegs = ProducerRegs, kConsumerRegs = ConsumerRegs;
  // The CTA starts with 64K / kThreads registers per thread (rounded down to 8, as ptxas
  // does); setmaxnreg.dec must go down from there, .inc up, and the sum must fit 64K.
  static constexpr int kLaunchRegs = 65536 / kThreads / 8 * 8;
  // setmaxnreg moves registers only inside the CTA's launch allocation (kLaunchRegs per thread):
  // asking for more makes setmaxnreg.inc wait forever (a hang, not an error).
  static_assert(128 * ProducerRegs + 128 * Consumers * ConsumerRegs <= kLaunchRegs * kThreads,
                "register file: the CTA's launch allocation");
  static_assert(ProducerRegs % 8 == 0 && ConsumerRegs % 8 == 0, "setmaxnreg needs multiples of 8");
  static_assert(24 <= ProducerRegs && ProducerRegs <= kLaunchRegs, "setmaxnreg.dec range");
  static_assert(kLaunchRegs <= ConsumerRegs && ConsumerRegs <= 256, "setmaxnreg.inc range");
  static_assert(kBlockM <= 256 && BlockN <= 256, "TMA box rows <= 256");
};

// M: query rows per tile (64 per consumer warpgroup); the default is each head dim's usual tile.
// N: keys per block (128; d256's longer launches use 80 or 64, below).
template <int Dp> constexpr int kDefaultRows = Dp == 64 ? 192 : 128;
template <int Dp, int M = kDefaultRows<Dp>, int N = 128> struct Config;
// kQBufs: Q buffers (2 lets the next tile's Q land while this tile still reads its own;
// d256 has no room for a second 64 KB Q: 64 + 64 KB of K + 64 KB of V = 192 KB of 227 KB).
// Producer budget 40: the persistent producer spills at 24.
// d64: 192x128 tiles (3 consumers, 512 threads): 128*40 + 384*152 = 63488 <= 512*128.
template <> struct Config<64, 192> : TileConfig<3, 128, 3, 2, 40, 152> {};
// (d64 causal runs them at s_q <= 1024 too: the 192-row tiles' skipped / half-width first block beats 128x128
// tiles there.)
// d96/d128: 128-row tiles (2 consumers, 384 threads): 128*40 + 256*232 = 64512 = 384*168.
template <> struct Config<128, 128> : TileConfig<2, 128, 2, 2, 40, 232> {};
// d256's short launches (unmasked and causal s_k <= 512): 128x128 tiles in one K/V stage, K and V
// released apart (K_{i+1} loads under softmax_i and P_i V_i). Why 128 keys: at 64 a Q K^T wgmma reads as many
// shared-memory bytes per clock as the tensor cores can use (IDEAS.md, "d256 on 128-key blocks"); 128 cuts the bytes
// per key by 12.5% (measured +6%).
// Registers: 128*56 + 256*224 = 64512 (the producer spills 16 B at 40; 48 + 232 is over the
// launch allocation, which hung the kernel on the H200).
template <> struct Config<256, 128> : TileConfig<2, 128, 1, 1, 56, 224> {};
// d256's long launches on 128x80 tiles in two stages (64 + 2 x 80 KB = 224 KB), the FA3-order loop: O 128 + S 40
// + P 20 registers fit the 224 (at 128 keys the loop spilled 16 bytes).
template <> struct Config<256, 128, 80> : TileConfig<2, 80, 2, 1, 56, 224> {};
// d256's middle launches (unmasked 512 < s_k <= 1024, causal 512 < s_k <= 4096) on 128x64 tiles in two
// stages beside O's 32 KB (64 + 2 x 64 + 32 = 224 KB), the FA3-order loop and the TMA epilogue.
template <> struct Config<256, 128, 64> : TileConfig<2, 64, 2, 1, 56, 224> {};
// d96/d128 192x128 tiles (3 consumers on the in-order loop, 512 threads): 128*32 + 384*160 = 65536.
template <> struct Config<128, 192> : TileConfig<3, 128, 2, 2, 32, 160> {};

constexpr int kTileSlots = 2;  // shared-memory ring that hands decoded tiles to the consumers
constexpr int kSlotBytes = 16;  // m_block, head, batch, n_blocks (n_blocks < 0: the sentinel)
// Named barrier of consumer warpgroup cw before its TMA store of O: id kEpilogueBarrier + cw
// (0 is __syncthreads; 1 + cw is the FA3-order loop's softmax barrier).
constexpr uint32_t kEpilogueBarrier = 4;
// d256's TMA epilogue stages O in 32 KB of its own (after the K/V stages, before the barriers).
template <int Dp, bool kTmaEpi> constexpr uint32_t kOStageBytes = Dp == 256 && kTmaEpi ? 32768u : 0u;

// The P V / O width: d96 (Dp 128 with 6 Q K^T steps) runs m64n96 over V in 64-byte swizzle, three
// 32-column panels (m64n128 would spend a quarter of P V on zero columns); the others Dp.
template <int Dp, int Steps> constexpr int kDv = Dp == 128 && Steps == 6 ? 96 : Dp;
// A second producer thread loads V (so K of block i + 2 need not queue behind V of block i + 1): d96 on 128-row
// tiles and unmasked d256 on the register epilogue (the 80-key blocks of its launches past s_k 1024)
template <int Dp, int Steps, int Consumers, bool TmaEpi, bool HalfDiag>
constexpr bool kVThread = (Dp == 128 && Steps == 6 && Consumers == 2) || (Dp == 256 && !TmaEpi && !HalfDiag);
template <int Dp, int Steps> constexpr bool kV64 = kDv<Dp, Steps> == 96;
template <int Dp, int Steps> constexpr uint32_t kVRowBytes = kV64<Dp, Steps> ? 64 : 128;  // a V panel's row
template <int Dp, int Steps> constexpr int kVPanels = kV64<Dp, Steps> ? 3 : Dp / 64;

// Head dims whose K and V of a stage are released apart (empty guards K, emptyV guards V):
// d96/d128 (FA3 loop order) and d256 (one stage: K_{i+1} loads while P_i V_i still reads V_i).
template <int Dp> constexpr bool kSplitKV = Dp >= 128;
// The unmasked 192-row d96/d128 functions hand their last part-empty wave out as 64-row pieces (fewer idle SMs)
template <int Dp, int Consumers, bool HalfDiag> constexpr bool kSplitTail = Dp == 128 && Consumers == 3 && !HalfDiag;

// Barriers: fullK[S], fullV[S], empty[S], qFull[QB], qEmpty[QB], tileFull[TS], tileEmpty[TS].
template <int Dp, int M = kDefaultRows<Dp>, int N = 128> __host__ __device__ constexpr int num_barriers() {
  // kSplitKV adds emptyV[S] at the end.
  return 3 * Config<Dp, M, N>::kStages + 2 * Config<Dp, M, N>::kQBufs + 2 * kTileSlots +
         (kSplitKV<Dp> ? Config<Dp, M, N>::kStages : 0);
}

template <int Dp, int M = kDefaultRows<Dp>, int N = 128> constexpr int smem_bytes() {
  constexpr int BM = Config<Dp, M, N>::kBlockM, BN = Config<Dp, M, N>::kBlockN, S = Config<Dp, M, N>::kStages,
                QB = Config<Dp, M, N>::kQBufs;
  // Q buffers + stages x (K + V) + barriers + tile slots + slack to align the base to 1024
  return QB * BM * Dp * 2 + S * 2 * BN * Dp * 2 + num_barriers<Dp, M, N>() * 8 + kTileSlots * kSlotBytes + 1024;
}
static_assert(smem_bytes<64>() <= 227 * 1024 && smem_bytes<128>() <= 227 * 1024 &&
                  smem_bytes<256>() + 32768 <= 227 * 1024 &&
                  smem_bytes<128, 192>() <= 227 * 1024,
              "shared memory per CTA");

// Tile scheduler: the next tile index (after each CTA's first, blockIdx.x) comes from here.
// Zero at load; the last CTA of a launch zeroes it again (and g_ctas_done) for the next one: no memset per launch.
__device__ unsigned int g_tile_counter;
__device__ unsigned int g_ctas_done;  // CTAs past their last atomicAdd

// ---- PTX wrappers: shared memory addresses, mbarriers, TMA ------------------------------

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// One arrival from the threads where `pred` holds, as a predicated instruction: a branch around mbar_arrive in the
// dead warpgroups' loop below made ptxas add divergence handling (BRA.DIV) and 40 instructions to the key loop.
__device__ __forceinline__ void mbar_arrive_if(uint32_t bar, bool pred) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %1, 0;\n@p mbarrier.arrive.shared::cta.b64 _, [%0];\n}\n"
               ::"r"(bar), "r"(static_cast<int>(pred)) : "memory");
}
// n arrivals at once (one thread standing in for n warps).
__device__ __forceinline__ void mbar_arrive_count(uint32_t bar, uint32_t n) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(n) : "memory");
}
// Spin until the phase with the given parity has completed.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}

// One test of the phase (no spinning): true once it has completed.
__device__ __forceinline__ bool mbar_try(uint32_t bar, uint32_t parity) {
  uint32_t ok;
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%1], %2;\n"
      "selp.u32 %0, 1, 0, done;\n"
      "}\n"
      : "=r"(ok)
      : "r"(bar), "r"(parity)
      : "memory");
  return ok != 0;
}

// Plain 32-bit shared-memory store / load (the tile-index slots; ordered by the mbarriers).
__device__ __forceinline__ void st_shared_u32(uint32_t addr, uint32_t v) {
  asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ uint32_t ld_shared_u32(uint32_t addr) {
  uint32_t v;
  asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(addr) : "memory");
  return v;
}

// 4-d tiled copy global -> shared, completing on an mbarrier. Coordinates innermost first:
// (column, head, row, batch).
__device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap* map, uint32_t bar,
                                         int c0, int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5, %6}], [%2];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}

// 4-d tiled copy shared -> global (bulk-group completion), same coordinates as tma_load. Rows
// and columns outside the tensor (row >= s_q of the batch, column >= d) are not written.
__device__ __forceinline__ void tma_store(const CUtensorMap* map, uint32_t src, int c0, int c1,
                                          int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4, %5}], [%1];\n"
      ::"l"(reinterpret_cast<uint64_t>(map)), "r"(src), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}
__device__ __forceinline__ void bulk_commit() {
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
// Until at most N of this thread's bulk groups are pending: .read only until their shared-memory
// sources have been read (the buffer may be reused), plain until the writes are done.
template <int N> __device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
template <int N> __device__ __forceinline__ void bulk_wait() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}
// Makes this thread's generic-proxy shared-memory writes visible to the async proxy (TMA).
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// ---- wgmma ------------------------------------------------------------------------------

// Shared-memory matrix descriptor with the 128-byte swizzle. For K-major operands SBO is the
// distance between 8-row groups (1024 bytes) and LBO is unused; for MN-major operands LBO is
// the distance between 64-column panels and SBO between 8-row groups of the K dimension.
__device__ __forceinline__ uint64_t smem_desc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) |
         (static_cast<uint64_t>(lbo >> 4) << 16) | (static_cast<uint64_t>(sbo >> 4) << 32) |
         (1ull << 62);
}

// V's descriptor: the 128-byte swizzle, or the 64-byte one (layout type 2) for d96's 32-column panels.
__device__ __forceinline__ uint64_t smem_desc_v(uint32_t addr, uint32_t lbo, uint32_t sbo, bool sw64) {
  return sw64 ? (smem_desc(addr, lbo, sbo) & ~(3ull << 62)) | (2ull << 62) : smem_desc(addr, lbo, sbo);
}

// The descriptor of `base`'s buffer at a byte offset. The low word holds the start address >> 4 in its low
// 14 bits (shared memory is < 256 KB: no carry into the stride fields), so a plain 64-bit add is exact, and
// ptxas emits it as one UIADD3.64 that keeps the high word (a 32-bit add on the low word needs a move of it too).
__device__ __forceinline__ uint64_t smem_desc_at(uint64_t base, uint32_t byte_off) {
  return base + (byte_off >> 4);  // one 64-bit add (UIADD3.64); the low word cannot carry
}

// smem_desc_at as a 32-bit add on the low word (the high word masked back in), for d64: there
// the 64-bit add of smem_desc_at measured 0.6-0.9% slower.
__device__ __forceinline__ uint64_t smem_desc_at_lo(uint64_t base, uint32_t byte_off) {
  return (base & 0xFFFFFFFF00000000ull) | static_cast<uint32_t>(static_cast<uint32_t>(base) + (byte_off >> 4));
}

__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N> __device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Ties accumulator registers to this point so the compiler cannot move their uses across
// the asynchronous wgmma issue/wait.
template <int N> __device__ __forceinline__ void fence_regs(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}

// Inline-asm wrappers, one per (shape, type). The operand lists were generated by a script:
// wgmma takes every accumulator register as a separate operand.
// S(64x128) (+)= A(smem, K-major) * B(smem, K-major)^T
__device__ __forceinline__ void wgmma_ss_n128_bf16(float (&d)[64], uint64_t da, uint64_t db, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(da), "l"(db), "r"(accumulate));
}

// O(64x64) += A(registers) * B(smem, MN-major: V rows are keys, columns are d)
__device__ __forceinline__ void wgmma_rs_n64_bf16(float (&d)[32], const uint32_t (&a)[4], uint64_t db, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
}

// O(64x96) += A(registers) * B(smem, MN-major, 64-byte swizzle): d96's P V
__device__ __forceinline__ void wgmma_rs_n96_bf16(float (&d)[48], const uint32_t (&a)[4], uint64_t db, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %53, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n96k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47"
      "}, {%48, %49, %50, %51}, %52, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_rs_n96_f16(float (&d)[48], const uint32_t (&a)[4], uint64_t db, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %53, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n96k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47"
      "}, {%48, %49, %50, %51}, %52, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
}

// O(64x128) += A(registers) * B(smem, MN-major: V rows are keys, columns are d)
__device__ __forceinline__ void wgmma_rs_n128_bf16(float (&d)[64], const uint32_t (&a)[4], uint64_t db, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
}

// O(64x256) += A(registers) * B(smem, MN-major: V rows are keys, columns are d)
__device__ __forceinline__ void wgmma_rs_n256_bf16(float (&d)[128], const uint32_t (&a)[4], uint64_t db, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, {%128, %129, %130, %131}, %132, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
}


// S(64x128) (+)= A(smem, K-major) * B(smem, K-major)^T
__device__ __forceinline__ void wgmma_ss_n128_f16(float (&d)[64], uint64_t da, uint64_t db, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(da), "l"(db), "r"(accumulate));
}

// O(64x64) += A(registers) * B(smem, MN-major: V rows are keys, columns are d)
__device__ __forceinline__ void wgmma_rs_n64_f16(float (&d)[32], const uint32_t (&a)[4], uint64_t db, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
}

// O(64x128) += A(registers) * B(smem, MN-major: V rows are keys, columns are d)
__device__ __forceinline__ void wgmma_rs_n128_f16(float (&d)[64], const uint32_t (&a)[4], uint64_t db, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
}

// O(64x256) += A(registers) * B(smem, MN-major: V rows are keys, columns are d)
__device__ __forceinline__ void wgmma_rs_n256_f16(float (&d)[128], const uint32_t (&a)[4], uint64_t db, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, {%128, %129, %130, %131}, %132, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
}


// S(64x128) (+)= Q(registers) K^T, K in shared memory (K-major): d64's Q K^T.
__device__ __forceinline__ void wgmma_rs_kn128_bf16(float (&d)[64], const uint32_t (&a)[4], uint64_t db, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, {%64, %65, %66, %67}, %68, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
}
__device__ __forceinline__ void wgmma_rs_kn128_f16(float (&d)[64], const uint32_t (&a)[4], uint64_t db, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, {%64, %65, %66, %67}, %68, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
}
// Four 8x8 b16 matrices from shared memory, one row address a lane: a 16x16 tile as wgmma's A fragment.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr) : "memory");
}

// S(64x64) (+)= A(smem, K-major) * B(smem, K-major)^T: half a 128-key block (the d64 diagonal block's first half).
#define KS_WGMMA_SS_N64(NAME, TYPE)                                                                           \
  __device__ __forceinline__ void NAME(float (&d)[32], uint64_t da, uint64_t db, int accumulate) {          \
    asm volatile(                                                                                          \
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                                                     \
        "wgmma.mma_async.sync.aligned.m64n64k16.f32." TYPE "." TYPE " {"                                \
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                          \
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"                  \
        "}, %32, %33, p, 1, 1, 0, 0;\n}\n"                                                                \
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),          \
          "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),      \
          "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),   \
          "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),   \
          "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])                                           \
        : "l"(da), "l"(db), "r"(accumulate));                                                            \
  }
KS_WGMMA_SS_N64(wgmma_ss_n64_bf16, "bf16")
KS_WGMMA_SS_N64(wgmma_ss_n64_f16, "f16")
#undef KS_WGMMA_SS_N64
// S(64x80) (+)= A(smem, K-major) * B(smem, K-major)^T: an 80-key block (d256's long launches)
#define KS_WGMMA_SS_N80(NAME, TYPE)                                                              \
  __device__ __forceinline__ void NAME(float (&d)[40], uint64_t da, uint64_t db, int accumulate) { \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %42, 0;\n"                                \
                 "wgmma.mma_async.sync.aligned.m64n80k16.f32." TYPE "." TYPE " {"                \
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39"  \
                 "}, %40, %41, p, 1, 1, 0, 0;\n}\n"                                           \
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]) \
                 : "l"(da), "l"(db), "r"(accumulate));                                     \
  }
KS_WGMMA_SS_N80(wgmma_ss_n80_bf16, "bf16")
KS_WGMMA_SS_N80(wgmma_ss_n80_f16, "f16")
#undef KS_WGMMA_SS_N80

template <typename T> constexpr bool kIsBf16 = std::is_same_v<T, __nv_bfloat16>;

// S(64 x N) = Q K^T step (both operands in shared memory, K-major).
template <typename T, int N>
__device__ __forceinline__ void mma_qk(float (&d)[N / 2], uint64_t da, uint64_t db, int acc) {
  static_assert(N == 64 || N == 80 || N == 128, "128-key blocks, 64: half a block, 80: d256's long launches");
  if constexpr (N == 80) {
    if constexpr (kIsBf16<T>) wgmma_ss_n80_bf16(d, da, db, acc); else wgmma_ss_n80_f16(d, da, db, acc);
  } else if constexpr (N == 64) {
    if constexpr (kIsBf16<T>) wgmma_ss_n64_bf16(d, da, db, acc); else wgmma_ss_n64_f16(d, da, db, acc);
  } else {
    if constexpr (kIsBf16<T>) wgmma_ss_n128_bf16(d, da, db, acc); else wgmma_ss_n128_f16(d, da, db, acc);
  }
}
// O(64 x N) += P V step (P in registers, V in shared memory, MN-major).
template <typename T, int N>
__device__ __forceinline__ void mma_pv(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t db) {
  if constexpr (N == 256) {
    if constexpr (kIsBf16<T>) wgmma_rs_n256_bf16(d, a, db, 1); else wgmma_rs_n256_f16(d, a, db, 1);
  } else if constexpr (N == 96) {
    if constexpr (kIsBf16<T>) wgmma_rs_n96_bf16(d, a, db, 1); else wgmma_rs_n96_f16(d, a, db, 1);
  } else if constexpr (N == 128) {
    if constexpr (kIsBf16<T>) wgmma_rs_n128_bf16(d, a, db, 1); else wgmma_rs_n128_f16(d, a, db, 1);
  } else {
    static_assert(N == 64);
    if constexpr (kIsBf16<T>) wgmma_rs_n64_bf16(d, a, db, 1); else wgmma_rs_n64_f16(d, a, db, 1);
  }
}

__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

template <typename T> __device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  if constexpr (kIsBf16<T>) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&v);
  } else {
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&v);
  }
}


// ---- FA3-order consumer loop helpers (2-consumer configs only) ------------------------------
// Named barrier of one warpgroup (id 0 is __syncthreads).
__device__ __forceinline__ void named_sync(uint32_t id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
// Returns `id` (min(max(x, id), id) == id for unsigned x), but computed from the row sums,
// so an instruction that uses it cannot be scheduled before the softmax has finished.
__device__ __forceinline__ uint32_t after_softmax_barrier_id(const float (&row_sum)[2], uint32_t id) {
  uint32_t r;
  asm volatile("max.u32 %0, %1, %2;\nmin.u32 %0, %0, %2;\n"
               : "=r"(r)
               : "r"(__float_as_uint(row_sum[0]) ^ __float_as_uint(row_sum[1])), "r"(id));
  return r;
}
template <int R, int C>
__device__ __forceinline__ void fence_frag(uint32_t (&r)[R][C]) {
#pragma unroll
  for (int i = 0; i < R; ++i)
#pragma unroll
    for (int k = 0; k < C; ++k) asm volatile("" : "+r"(r[i][k])::"memory");
}

// ---- per key block, shared by both consumer loops ---------------------------------------------
// Masks the scores of key block col0.. when it crosses the end of the keys or the causal
// diagonal (row i sees key j when j <= i + diag). This thread's rows: row0, row0 + 8.
template <int BN>
__device__ __forceinline__ void mask_scores(float (&s_acc)[BN / 2], int col0, int s_k, int causal, int m0,
                                            int diag, int row0, int t) {
  const bool need_mask = (col0 + BN > s_k) || (causal && col0 + BN - 1 > m0 + diag);
  if (need_mask) {
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int col = col0 + 8 * j + 2 * t + (e & 1);
        const int row = row0 + (e >> 1) * 8;
        const bool ok = col < s_k && (!causal || col <= row + diag);
        if (!ok) s_acc[4 * j + e] = -INFINITY;
      }
    }
  }
}

// Online softmax of one key block: probabilities in place, and the rescale factor alpha of the rows
// whose running max moved. A warp moves its rows' maxima only when one of them grew by more than
// 2^kLazyRescaleLog2 (FlashAttention-4's conditional rescale): P then stays <= 2^8 and O needs no
// rescale for most blocks. Returns whether this warp rescaled (alpha is 1 otherwise).
constexpr float kLazyRescaleLog2 = 8.f;
template <int BN>
__device__ __forceinline__ bool online_softmax(float (&s_acc)[BN / 2], float (&row_max)[2], float (&row_sum)[2],
                                               float (&alpha)[2], float scale_log2) {
  float block_max[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float mx = row_max[r];
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) mx = fmaxf(mx, fmaxf(s_acc[4 * j + 2 * r], s_acc[4 * j + 2 * r + 1]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffff, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffff, mx, 2));
    block_max[r] = mx;
  }
  // -inf - -inf is NaN: a row that saw only masked keys so far and here does not ask for a rescale.
  const bool grew = (block_max[0] - row_max[0]) * scale_log2 > kLazyRescaleLog2 ||
                    (block_max[1] - row_max[1]) * scale_log2 > kLazyRescaleLog2;
  const bool rescale = __any_sync(0xffffffff, grew);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float mx = rescale ? block_max[r] : row_max[r];
    // A row that has seen only masked keys keeps max -inf: subtract 0 so exp2 gives 0.
    const float base_scaled = mx == -INFINITY ? 0.f : mx * scale_log2;
    alpha[r] = rescale ? fast_exp2(row_max[r] * scale_log2 - base_scaled) : 1.f;
    row_max[r] = mx;
    float sum = 0.f;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
      const float p0 = fast_exp2(s_acc[4 * j + 2 * r] * scale_log2 - base_scaled);
      const float p1 = fast_exp2(s_acc[4 * j + 2 * r + 1] * scale_log2 - base_scaled);
      s_acc[4 * j + 2 * r] = p0;
      s_acc[4 * j + 2 * r + 1] = p1;
      sum += p0 + p1;
    }
    row_sum[r] = rescale ? row_sum[r] * alpha[r] + sum : row_sum[r] + sum;
  }
  return rescale;
}

// O *= alpha per row (the running max moved): this thread's rows are the even / odd pairs.
template <int Dp>
__device__ __forceinline__ void rescale_o(float (&o_acc)[Dp / 2], const float (&alpha)[2]) {
#pragma unroll
  for (int j = 0; j < Dp / 8; ++j) {
    o_acc[4 * j + 0] *= alpha[0];
    o_acc[4 * j + 1] *= alpha[0];
    o_acc[4 * j + 2] *= alpha[1];
    o_acc[4 * j + 3] *= alpha[1];
  }
}

// P in the A-operand register layout of wgmma: 16 keys per k-step.
template <typename T, int BN>
__device__ __forceinline__ void pack_p(const float (&s_acc)[BN / 2], uint32_t (&p_frag)[BN / 16][4]) {
#pragma unroll
  for (int kk = 0; kk < BN / 16; ++kk) {
    p_frag[kk][0] = pack2<T>(s_acc[8 * kk + 0], s_acc[8 * kk + 1]);
    p_frag[kk][1] = pack2<T>(s_acc[8 * kk + 2], s_acc[8 * kk + 3]);
    p_frag[kk][2] = pack2<T>(s_acc[8 * kk + 4], s_acc[8 * kk + 5]);
    p_frag[kk][3] = pack2<T>(s_acc[8 * kk + 6], s_acc[8 * kk + 7]);
  }
}

// ---- work decomposition ----------------------------------------------------------------------
// Tiles are (batch, head, kBlockM-row query block); bh = batch * h_q + head.
// Non-causal (sec = 1): bh outer, query block inner, so the CTAs working at the same time share
// a head's K/V through L2.
// Causal: the tiles are cut into sections of `sec` consecutive bh (a multiple of the GQA group,
// sized on the host so a section's K/V fits in a slice of L2); inside a section the query block
// is outermost and descending (under the bottom-right mask the last query block sees the most
// keys: heaviest first), then bh. Short sequences get one section (global heaviest-first), very
// long ones one kv head per section (the order of a head-major schedule).
struct Tile {
  int m_block, head, batch, n_blocks;
};

template <int BN, int kBlockM, bool kTail>
__device__ __forceinline__ Tile decode_tile(int t, int num_m_blocks, int num_bh, int sec, int h_q,
                                            int s_q, int s_k, int causal) {
  // The causal tail (kTail only in the causal functions, where `causal` is 1 + cut): the query blocks cut ..
  // num_m_blocks - 1 go by sections as below, counted from block `cut` (s_q shortened to match, so each block sees the
  // same keys); then the `cut` lightest blocks of every head, as one section over all heads, so the launch ends on
  // short tiles in every CTA. The unmasked functions compile none of it.
  int first_m = 0;
  if constexpr (kTail) {
    const int cut = causal > 1 ? causal - 1 : 0;
    const int heavy = (num_m_blocks - cut) * num_bh;
    if (t >= heavy) {
      t -= heavy, num_m_blocks = cut, sec = num_bh;
    } else {
      num_m_blocks -= cut, s_q -= cut * kBlockM, first_m = cut;
    }
  }
  const int per_sec = sec * num_m_blocks;
  const int si = t / per_sec;
  const int rem = t - si * per_sec;
  const int width = min(sec, num_bh - si * sec);  // the last section may be narrower
  const int mi = rem / width;
  const int bh = si * sec + (rem - mi * width);
  Tile w;
  w.m_block = causal ? num_m_blocks - 1 - mi : mi;
  w.head = bh % h_q;
  w.batch = bh / h_q;
  int kv_end = s_k;
  if (causal) kv_end = min(s_k, w.m_block * kBlockM + kBlockM + s_k - s_q);
  w.n_blocks = kv_end > 0 ? (kv_end + BN - 1) / BN : 0;
  w.m_block += first_m;
  return w;
}

// ---- the kernel --------------------------------------------------------------------------------
// kHalfDiag: true in the causal launches' functions only. d256 compiles its half-width diagonal block only there (the
// block's code cost the unmasked ones 3% at s <= 2048 in shared functions), and so does the causal tail (decode_tile).
// causal: 0, or 1 + the tail's cut (the query blocks a head runs last; 0 where s_k <= 4096), read as a flag elsewhere.
template <typename T, int Dp, int kM, int kQkSteps, bool kTmaEpi, int kN = 128, bool kHalfDiag = true>
__global__ void __launch_bounds__(Config<Dp, kM, kN>::kThreads, 1)
    attn_fwd_sm90(const __grid_constant__ CUtensorMap tm_q, const __grid_constant__ CUtensorMap tm_k,
                  const __grid_constant__ CUtensorMap tm_v, const __grid_constant__ CUtensorMap tm_o,
                  T* __restrict__ out, int s_q, int s_k,
                  int h_q, int h_kv, int d, int causal, float scale_log2, int num_m_blocks,
                  int num_bh, int sec, int num_tiles) {
  // Cfg::kBlockM / Cfg::kConsumers through a type alias, not new constexpr locals: extra locals
  // renumber NVVM's values and change the d96/d128/d256 register allocation.
  using Cfg = Config<Dp, kM, kN>;
  constexpr int BN = Config<Dp, kM, kN>::kBlockN;
  constexpr int kStages = Config<Dp, kM, kN>::kStages;
  constexpr int kQBufs = Config<Dp, kM, kN>::kQBufs;
  constexpr int kPanels = Dp / 64;
  constexpr uint32_t kQBytes = Cfg::kBlockM * Dp * 2;
  constexpr uint32_t kKVBytes = BN * Dp * 2;

  extern __shared__ uint8_t smem_raw[];
  uint32_t base = (smem_u32(smem_raw) + 1023) & ~1023u;
  // An opaque copy on 192-row tiles, so ptxas keeps the base in a register there rather than rebuild it in the
  // key loop (in d256 the same cost 2% at s <= 2048)
  if constexpr (kM == 192) asm volatile("mov.b32 %0, %0;" : "+r"(base));
  // The d96/d128 instantiations without kHalfDiag (unmasked launches only) fix causal at 0 at compile time
  // (d64's and d256's keep the run-time flag: fixing it there measured level)
  if constexpr (!kHalfDiag && Dp == 128) causal = 0;
  const uint32_t sQ = base;                         // buffer b at sQ + b * kQBytes
  const uint32_t sK = sQ + kQBufs * kQBytes;        // stage s at sK + s * kKVBytes
  const uint32_t sV = sK + kStages * kKVBytes;      // stage s at sV + s * kKVBytes
  const uint32_t bars = sV + kStages * kKVBytes + kOStageBytes<Dp, kTmaEpi>;  // see num_barriers()
  auto full_k = [&](int s) { return bars + 8 * s; };
  auto full_v = [&](int s) { return bars + 8 * (kStages + s); };
  auto empty = [&](int s) { return bars + 8 * (2 * kStages + s); };
  auto q_full = [&](int b) { return bars + 8 * (3 * kStages + b); };
  auto q_empty = [&](int b) { return bars + 8 * (3 * kStages + kQBufs + b); };
  auto tile_full = [&](int i) { return bars + 8 * (3 * kStages + 2 * kQBufs + i); };
  auto tile_empty = [&](int i) { return bars + 8 * (3 * kStages + 2 * kQBufs + kTileSlots + i); };
  // kSplitKV: empty(s) guards K of stage s only, empty_v(s) its V.
  auto empty_v = [&](int s) { return bars + 8 * (3 * kStages + 2 * kQBufs + 2 * kTileSlots + s); };
  const uint32_t slots = bars + 8 * num_barriers<Dp, kM, kN>();  // kTileSlots x kSlotBytes: a decoded tile
  const int diag = s_k - s_q;  // bottom-right alignment: row i sees keys j <= i + diag
  const int group = h_q / h_kv;

  const int warpgroup = __shfl_sync(0xffffffff, threadIdx.x / 128, 0);  // warp-uniform, and provably so
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(full_k(s), 1);
      mbar_init(full_v(s), 1);
      mbar_init(empty(s), 4 * Cfg::kConsumers);  // one arrive per consumer warp
      if constexpr (kSplitKV<Dp>) mbar_init(empty_v(s), 4 * Cfg::kConsumers);
    }
    for (int b = 0; b < kQBufs; ++b) {
      mbar_init(q_full(b), 1);
      // kTmaEpi, kQBufs >= 2: one arrive per consumer warpgroup, once its TMA store of O has read the
      // buffer; kQBufs 1 (d256): per consumer warp, after the tile's last Q K^T.
      mbar_init(q_empty(b), kTmaEpi && kQBufs >= 2 ? Cfg::kConsumers : 4 * Cfg::kConsumers);
    }
    for (int i = 0; i < kTileSlots; ++i) {
      mbar_init(tile_full(i), 1);
      // per consumer warp, after reading the slot; and the V thread where there is one
      mbar_init(tile_empty(i), 4 * Cfg::kConsumers + (kVThread<Dp, kQkSteps, Cfg::kConsumers, kTmaEpi, kHalfDiag> ? 1 : 0));
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (warpgroup == 0) {
    // ------------------------------- producer ---------------------------------------------
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Cfg::kProducerRegs));
    if (threadIdx.x == 0) {
      int stage = 0;          // K/V ring position and phase, carried across tiles
      uint32_t phase = 0;
      // The tile slot's and the Q buffer's positions share one register: bits 0-1 count the tiles published,
      // bits 2-3 the tiles that loaded Q, each mod 4 (a buffer index and a phase for 2 buffers: count % N and
      // count / N % 2). The 192-row d96/d128 producer has 32 registers; with a buffer and a phase apiece
      // ptxas spilled 24 bytes.
      uint32_t ring = 0;
      uint32_t tile = blockIdx.x;  // first tile without the atomic; then the counter
      while (true) {
        // Publish the decoded tile (or the sentinel, n_blocks -1) to the consumers: they need no divisions.
        const bool last = tile >= static_cast<uint32_t>(num_tiles);
        Tile w{0, 0, 0, -1};
        if (!last) {
          int t = static_cast<int>(tile), part = -1;
          if constexpr (kSplitTail<Dp, Cfg::kConsumers, kHalfDiag>) {
            const int split_from = sec;  // unmasked launches have one section: `sec` carries the first split tile
            if (t >= split_from) {  // piece `part` of tile split_from + j / 3
              const int j = t - split_from;
              t = split_from + j / 3;
              part = j - j / 3 * 3;
            }
          }
          w = decode_tile<BN, Cfg::kBlockM, kHalfDiag>(t, num_m_blocks, num_bh,
                                                       kSplitTail<Dp, Cfg::kConsumers, kHalfDiag> ? 1 : sec, h_q, s_q,
                                                       s_k, causal);
          if constexpr (kSplitTail<Dp, Cfg::kConsumers, kHalfDiag>) {
            const int r0 = w.m_block * Cfg::kBlockM + (part > 0 ? 64 * part : 0);
            if (r0 >= s_q) {  // a piece wholly past s_q: none of its rows exist
              uint32_t grid;
              asm volatile("mov.u32 %0, %%nctaid.x;\n" : "=r"(grid));
              tile = atomicAdd(&g_tile_counter, 1u) + grid;
              continue;
            }
            w.m_block = static_cast<int>(static_cast<uint32_t>(r0) | (part >= 0 ? 0x80000000u : 0u));
          }
        }
        static_assert(kTileSlots == 2 && kQBufs <= 2, "2-bit counters");
        const uint32_t slot_count = ring & 3u;
        const uint32_t slot = slot_count % kTileSlots;
        mbar_wait(tile_empty(slot), (slot_count / kTileSlots & 1) ^ 1);
        st_shared_u32(slots + kSlotBytes * slot, static_cast<uint32_t>(w.m_block));
        st_shared_u32(slots + kSlotBytes * slot + 4, static_cast<uint32_t>(w.head));
        st_shared_u32(slots + kSlotBytes * slot + 8, static_cast<uint32_t>(w.batch));
        st_shared_u32(slots + kSlotBytes * slot + 12, static_cast<uint32_t>(w.n_blocks));
        mbar_arrive(tile_full(slot));
        ring = (ring & 12u) | ((ring + 1) & 3u);
        if (last) break;

        if (w.n_blocks > 0) {  // a tile that sees no key loads nothing (consumers store zeros)
          const int kv_head = w.head / group;
          const uint32_t q_count = ring >> 2;
          const uint32_t q_buf = q_count % kQBufs;
          mbar_wait(q_empty(q_buf), (q_count / kQBufs & 1) ^ 1);
          mbar_expect_tx(q_full(q_buf), kQBytes);
#pragma unroll
          for (int p = 0; p < kPanels; ++p)
            tma_load(sQ + q_buf * kQBytes + p * Cfg::kBlockM * 128, &tm_q, q_full(q_buf), p * 64,
                     w.head, kSplitTail<Dp, Cfg::kConsumers, kHalfDiag> ? (w.m_block & 0x7fffffff)
                                                                          : w.m_block * Cfg::kBlockM, w.batch);
          ring = (ring & 3u) | ((ring + 4) & 12u);
          for (int i = 0; i < w.n_blocks; ++i) {
            const int n = w.n_blocks - 1 - i;  // masked (diagonal / tail) tiles first
            mbar_wait(empty(stage), phase ^ 1);
            mbar_expect_tx(full_k(stage), kKVBytes);
#pragma unroll
            for (int p = 0; p < kPanels; ++p)
              tma_load(sK + stage * kKVBytes + p * BN * 128, &tm_k, full_k(stage), p * 64, kv_head,
                       n * BN, w.batch);
            if constexpr (!kVThread<Dp, kQkSteps, Cfg::kConsumers, kTmaEpi, kHalfDiag>) {  // else thread 32 loads V
            if constexpr (kSplitKV<Dp>) mbar_wait(empty_v(stage), phase ^ 1);
            mbar_expect_tx(full_v(stage), kVPanels<Dp, kQkSteps> * BN * kVRowBytes<Dp, kQkSteps>);
            // d96's three boxes in a loop: unrolled, the 32-register producer of the 192-row tiles spilled 4 B
#pragma unroll(kV64<Dp, kQkSteps> ? 1 : 4)
            for (int p = 0; p < kVPanels<Dp, kQkSteps>; ++p)
              tma_load(sV + stage * kKVBytes + p * BN * kVRowBytes<Dp, kQkSteps>, &tm_v, full_v(stage),
                       p * static_cast<int>(kVRowBytes<Dp, kQkSteps> / 2), kv_head,
                       n * BN, w.batch);
            }
            if (++stage == kStages) { stage = 0; phase ^= 1; }
          }
        }
        // gridDim.x read here: ptxas kept it in a register across the tile, and spilled it
        uint32_t grid;
        asm volatile("mov.u32 %0, %%nctaid.x;\n" : "=r"(grid));
        tile = atomicAdd(&g_tile_counter, 1u) + grid;
      }
      // This CTA's last atomicAdd on the counter is done; the launch's last CTA here resets both.
      __threadfence();
      uint32_t grid;
      asm volatile("mov.u32 %0, %%nctaid.x;\n" : "=r"(grid));
      if (atomicAdd(&g_ctas_done, 1u) == grid - 1) {
        atomicExch(&g_tile_counter, 0u);
        atomicExch(&g_ctas_done, 0u);
      }
    } else if constexpr (kVThread<Dp, kQkSteps, Cfg::kConsumers, kTmaEpi, kHalfDiag>) {
    if (threadIdx.x == 32) {
      // V's loads, block by block in thread 0's order, on stage counters of their own
      int stage = 0;
      uint32_t phase = 0;
      int slot = 0;
      uint32_t slot_phase = 0;
      while (true) {
        mbar_wait(tile_full(slot), slot_phase);
        Tile w;
        w.head = static_cast<int>(ld_shared_u32(slots + kSlotBytes * slot + 4));
        w.batch = static_cast<int>(ld_shared_u32(slots + kSlotBytes * slot + 8));
        w.n_blocks = static_cast<int>(ld_shared_u32(slots + kSlotBytes * slot + 12));
        mbar_arrive(tile_empty(slot));
        if (++slot == kTileSlots) { slot = 0; slot_phase ^= 1; }
        if (w.n_blocks < 0) break;
        const int kv_head = w.head / group;
        for (int i = 0; i < w.n_blocks; ++i) {
          const int n = w.n_blocks - 1 - i;
          // K and V share one empty barrier where kSplitKV is off (d64): thread 0 waits on it too
          if constexpr (kSplitKV<Dp>) mbar_wait(empty_v(stage), phase ^ 1);
          else mbar_wait(empty(stage), phase ^ 1);
          mbar_expect_tx(full_v(stage), kVPanels<Dp, kQkSteps> * BN * kVRowBytes<Dp, kQkSteps>);
          // d96's three boxes in a loop: unrolled, the 32-register producer of the 192-row tiles spilled 4 B
#pragma unroll(kV64<Dp, kQkSteps> ? 1 : 4)
          for (int p = 0; p < kVPanels<Dp, kQkSteps>; ++p)
            tma_load(sV + stage * kKVBytes + p * BN * kVRowBytes<Dp, kQkSteps>, &tm_v, full_v(stage),
                     p * static_cast<int>(kVRowBytes<Dp, kQkSteps> / 2), kv_head,
                     n * BN, w.batch);
          if (++stage == kStages) { stage = 0; phase ^= 1; }
        }
      }
    }
    }
    return;
  }

  // --------------------------------- consumers --------------------------------------------
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Cfg::kConsumerRegs));
  const int cw = warpgroup - 1;             // which 64-row slice of the Q tile
  const int warp = (threadIdx.x / 32) % 4;  // warp within the warpgroup: 16 rows each
  const int lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;     // accumulator fragment coordinates

  int stage = 0;  // the same counters as the producer's, advanced in the same order
  uint32_t phase = 0;
  int q_buf = 0;
  uint32_t q_phase = 0;
  int slot = 0;
  uint32_t slot_phase = 0;
  // kQBufs >= 2: the Q buffer that holds this warpgroup's last O tile (staged for its TMA store),
  // -1 if none. One thread per warpgroup waits until the store has read it and hands it back to
  // the producer, at the next tile's first S (the store has had a Q K^T to run).
  int staged_q = -1;
  auto release_staged = [&] {
    if (threadIdx.x % 128 == 0 && staged_q >= 0) {
      bulk_wait_read<0>();
      mbar_arrive(q_empty(staged_q));
    }
    staged_q = -1;
  };

  while (true) {
    mbar_wait(tile_full(slot), slot_phase);
    Tile w;
    w.m_block = static_cast<int>(ld_shared_u32(slots + kSlotBytes * slot));
    w.head = static_cast<int>(ld_shared_u32(slots + kSlotBytes * slot + 4));
    w.batch = static_cast<int>(ld_shared_u32(slots + kSlotBytes * slot + 8));
    w.n_blocks = static_cast<int>(ld_shared_u32(slots + kSlotBytes * slot + 12));
    __syncwarp();
    if (lane == 0) mbar_arrive(tile_empty(slot));
    if (++slot == kTileSlots) { slot = 0; slot_phase ^= 1; }
    if (w.n_blocks < 0) break;

    const int n_blocks = w.n_blocks;
    const int m0 = kSplitTail<Dp, Cfg::kConsumers, kHalfDiag> ? (w.m_block & 0x7fffffff) : w.m_block * Cfg::kBlockM;
    const bool lone = kSplitTail<Dp, Cfg::kConsumers, kHalfDiag> && w.m_block < 0;  // a 64-row piece: warpgroup 0 alone
    const int row0 = m0 + cw * 64 + warp * 16 + g;  // this thread's two rows: row0, row0 + 8

    float o_acc[kDv<Dp, kQkSteps> / 2];
#pragma unroll
    for (int i = 0; i < kDv<Dp, kQkSteps> / 2; ++i) o_acc[i] = 0.f;
    float row_max[2] = {-INFINITY, -INFINITY};
    float row_sum[2] = {0.f, 0.f};  // per-thread partial sums; reduced across the quad at the end

    const int qb = q_buf;
    const uint32_t q_half = sQ + qb * kQBytes + cw * 64 * 128;
    if (n_blocks > 0) {
      mbar_wait(q_full(qb), q_phase);
      if (++q_buf == kQBufs) { q_buf = 0; q_phase ^= 1; }
    }

    if constexpr ((Dp == 128 || BN < 128) && Cfg::kConsumers == 2) {  // d96, d128 on 128-row tiles; d256 on 80, 64 keys
      // FlashAttention-3's intra-warpgroup order: S_{i+1} = Q K_{i+1}^T and O += P_i V_i are
      // issued together, the warpgroup waits for S_{i+1} only (wait_group 1) and runs the
      // softmax of block i+1 while P_i V_i is still on the tensor cores; then it waits for
      // P_i V_i, releases stage i (both of its wgmmas have completed), rescales O and packs
      // P_{i+1}. One S accumulator is live during the softmax (O + S + P: 0 spills at 232
      // registers). d256 on 128-key blocks runs the in-order loop below (with this order it spills 16 bytes); on
      // 80-key blocks it runs this one: O 128 + S 40 + P 20; on 64-key blocks O 128 + S 32 + P 16.
      if (n_blocks > 0) {
        float s_acc[BN / 2];
        uint32_t p_frag[BN / 16][4];
        float alpha[2];
        // S = Q K^T for the K tile in stage st (issued and committed, not waited for). The step
        // count is a template parameter: a run-time test between wgmmas would make ptxas wait
        // for each one at the branch.
        const uint64_t q_desc = smem_desc(q_half, 16, 1024);
        auto issue_qk = [&](int st) {
          const uint64_t k_desc = smem_desc(sK + __shfl_sync(0xffffffff, st, 0) * kKVBytes, 16, 1024);
#pragma unroll
          for (int kk = 0; kk < kQkSteps; ++kk) {
            const uint32_t off = (kk % 4) * 32;  // 16 columns = 32 bytes inside a 128-byte row
            const uint64_t da = smem_desc_at(q_desc, (kk / 4) * Cfg::kBlockM * 128 + off);
            const uint64_t db = smem_desc_at(k_desc, (kk / 4) * BN * 128 + off);
            mma_qk<T, BN>(s_acc, da, db, kk > 0);
          }
          wgmma_commit();
        };
        // O += P V for the V tile in stage st (issued and committed, not waited for).
        auto issue_pv = [&](int st) {
          const uint64_t v_desc = smem_desc_v(sV + __shfl_sync(0xffffffff, st, 0) * kKVBytes, BN * kVRowBytes<Dp, kQkSteps>, 8 * kVRowBytes<Dp, kQkSteps>, kV64<Dp, kQkSteps>);
#pragma unroll
          for (int kk = 0; kk < BN / 16; ++kk) {
            const uint64_t db = smem_desc_at(v_desc, kk * 16 * kVRowBytes<Dp, kQkSteps>);
            mma_pv<T, kDv<Dp, kQkSteps>>(o_acc, p_frag[kk], db);
          }
          wgmma_commit();
        };
        auto mask = [&](int n) { mask_scores<BN>(s_acc, n * BN, s_k, causal, m0, diag, row0, t); };
        bool rescaled = true;
        auto softmax = [&] { rescaled = online_softmax<BN>(s_acc, row_max, row_sum, alpha, scale_log2); };
        auto to_p = [&] { pack_p<T, BN>(s_acc, p_frag); };
        auto release = [&](uint32_t bar) {
          __syncwarp();
          if (lane == 0) mbar_arrive(bar);
        };

        // Causal 128-key blocks: where this warpgroup's 64 rows see none of the diagonal block's last 64 keys
        // (s_q = s_k: warpgroup 0) and the tile has more key blocks, the diagonal block runs first, whole and at
        // half width: Q K^T as m64n64, the softmax over 64 columns, P V over 64 keys, each waited for.
        int first = 0;  // key blocks done before the FA3-order code below
        // Causal 64-key blocks: where every key of the diagonal-most block lies past this warpgroup's
        // last row (s_q = s_k: warpgroup 0's last 64-key block), the warpgroup waits for the block's loads and
        // releases K and V without computing; O stays zero (no rescale at the next block).
        if constexpr (BN == 64 && kHalfDiag) {
          const bool skip = __shfl_sync(0xffffffff, static_cast<int>(causal && n_blocks > 1 &&
                                            (n_blocks - 1) * BN > m0 + cw * 64 + 63 + diag), 0) != 0;
          if (skip) {
            first = 1;
            const int sh = stage;
            const uint32_t parity_h = phase;
            if (++stage == kStages) { stage = 0; phase ^= 1; }
            mbar_wait(full_k(sh), parity_h);
            release(empty(sh));
            mbar_wait(full_v(sh), parity_h);
            release(empty_v(sh));
          }
        }
        if constexpr (BN == 128) {
          const bool half = __shfl_sync(0xffffffff, static_cast<int>(causal && n_blocks > 1 &&
                                            (n_blocks - 1) * BN + BN / 2 > m0 + cw * 64 + 63 + diag), 0) != 0;
          if (half) {
            first = 1;
            const int sh = stage;
            const uint32_t parity_h = phase;
            if (++stage == kStages) { stage = 0; phase ^= 1; }
            float s_half[BN / 4];
            mbar_wait(full_k(sh), parity_h);
            wgmma_fence();
            const uint64_t k_desc = smem_desc(sK + __shfl_sync(0xffffffff, sh, 0) * kKVBytes, 16, 1024);
#pragma unroll
            for (int kk = 0; kk < kQkSteps; ++kk) {  // the K stage's first 64 rows: the same descriptors
              const uint32_t off = (kk % 4) * 32;
              const uint64_t da = smem_desc_at(q_desc, (kk / 4) * Cfg::kBlockM * 128 + off);
              const uint64_t db = smem_desc_at(k_desc, (kk / 4) * BN * 128 + off);
              mma_qk<T, BN / 2>(s_half, da, db, kk > 0);
            }
            wgmma_commit();
            wgmma_wait<0>();
            fence_regs(s_half);
            release(empty(sh));  // K of this stage: its Q K^T has completed
            if constexpr (kTmaEpi) release_staged();  // the previous tile's O store has had this Q K^T
            mask_scores<BN / 2>(s_half, (n_blocks - 1) * BN, s_k, causal, m0, diag, row0, t);
            online_softmax<BN / 2>(s_half, row_max, row_sum, alpha, scale_log2);  // O is zero: no rescale
            uint32_t p_half[BN / 32][4];
            pack_p<T, BN / 2>(s_half, p_half);
            mbar_wait(full_v(sh), parity_h);
            fence_regs(o_acc);
            wgmma_fence();
            const uint64_t v_desc = smem_desc_v(sV + __shfl_sync(0xffffffff, sh, 0) * kKVBytes, BN * kVRowBytes<Dp, kQkSteps>, 8 * kVRowBytes<Dp, kQkSteps>, kV64<Dp, kQkSteps>);
#pragma unroll
            for (int kk = 0; kk < BN / 32; ++kk) mma_pv<T, kDv<Dp, kQkSteps>>(o_acc, p_half[kk], smem_desc_at(v_desc, kk * 16 * kVRowBytes<Dp, kQkSteps>));
            wgmma_commit();
            wgmma_wait<0>();
            fence_regs(o_acc);
            release(empty_v(sh));  // V of this stage: its P V has completed
          }
        }

        // First key block of the FA3 order (the diagonal / tail one, or the one after a half-width diagonal
        // block): scores, softmax, P. O is zero (no rescale), or holds the diagonal block's P V (rescaled here).
        int s = stage;
        uint32_t parity = phase;
        if (++stage == kStages) { stage = 0; phase ^= 1; }
        mbar_wait(full_k(s), parity);
        wgmma_fence();
        issue_qk(s);
        wgmma_wait<0>();
        fence_regs(s_acc);
        release(empty(s));  // K of this stage: its Q K^T has completed
        if constexpr (kTmaEpi) release_staged();  // the previous tile's O store has had this Q K^T
        mask(n_blocks - 1 - first);
        softmax();
        if (BN == 128 && first && rescaled) rescale_o<kDv<Dp, kQkSteps>>(o_acc, alpha);
        to_p();

        // Steady state: S_{i} and P_{i-1} V_{i-1} together; softmax i overlaps P_{i-1} V_{i-1}.
        for (int i = 1 + first; i < n_blocks; ++i) {
          const int prev = s;
          const uint32_t prev_parity = parity;
          s = stage;
          parity = phase;
          if (++stage == kStages) { stage = 0; phase ^= 1; }
          const int n = n_blocks - 1 - i;
          mbar_wait(full_k(s), parity);
          mbar_wait(full_v(prev), prev_parity);
          fence_regs(o_acc);
          wgmma_fence();
          issue_qk(s);
          issue_pv(prev);
          wgmma_wait<1>();  // S_i has completed; P_{i-1} V_{i-1} may still run
          fence_regs(s_acc);
          release(empty(s));  // K of this stage: its Q K^T has completed
          mask(n);
          softmax();
          // ptxas hoists a plain wgmma.wait_group above independent work; a barrier of this
          // warpgroup whose id it must compute from the row sums (always 1 + cw) keeps the
          // whole softmax ahead of the wait, so it overlaps this warpgroup's P V product.
          named_sync(after_softmax_barrier_id(row_sum, 1 + cw), 128);
          wgmma_wait<0>();
          fence_regs(o_acc);
          fence_frag(p_frag);
          release(empty_v(prev));  // V of the previous stage: P_{i-1} V_{i-1} has completed
          if (rescaled) rescale_o<kDv<Dp, kQkSteps>>(o_acc, alpha);
          to_p();
        }
        // Every S = Q K^T of this tile has completed, the producer may load the next
        // tile's Q. (With the TMA epilogue and two Q buffers, the O store releases it: release_staged. d256's TMA
        // epilogue stages O in a region of its own, so its one Q buffer goes here too.)
        if constexpr (!(kTmaEpi && kQBufs >= 2)) release(q_empty(qb));
        // Last P V.
        mbar_wait(full_v(s), parity);
        fence_regs(o_acc);
        wgmma_fence();
        issue_pv(s);
        wgmma_wait<0>();
        fence_regs(o_acc);
        fence_frag(p_frag);
        release(empty_v(s));
      }
    } else {
      // The in-order loop (per key block: Q K^T, softmax, P V). 192-row tiles (d64, d96/d128): warpgroups whose rows
      // all lie past s_q (the last tile of a head) run no key block; each waits for its blocks' loads and releases
      // their stages itself (releases by warpgroup 0 on its behalf would let a dead warpgroup's parity tests run two
      // phases ahead of the loads: lab/flash_attn_fwd/scripts/protocol_model.py), K and V apart where they are
      // released apart.
      int live_blocks = n_blocks;
      uint32_t releases = 1;
      if constexpr (Dp == 64 || Cfg::kConsumers == 3) {
        const int dead_wgs =
            __shfl_sync(0xffffffff, max(lone ? Cfg::kConsumers - 1 : 0, Cfg::kConsumers - (s_q - m0 + 63) / 64), 0);
        if (cw >= Cfg::kConsumers - dead_wgs && n_blocks > 0) {
          live_blocks = 0;
          for (int i = 0; i < n_blocks; ++i) {
            const int s = stage;
            const uint32_t parity = phase;
            if (++stage == kStages) { stage = 0; phase ^= 1; }
            mbar_wait(full_k(s), parity);
            mbar_wait(full_v(s), parity);
            __syncwarp();
            mbar_arrive_if(empty(s), lane == 0);  // this warp's share of the stage's release
            if constexpr (kSplitKV<Dp>) mbar_arrive_if(empty_v(s), lane == 0);  // and V's
          }
          if constexpr (kTmaEpi && kQBufs >= 2) {
            release_staged();
          } else {
            __syncwarp();
            if (lane == 0) mbar_arrive(q_empty(qb));  // its Q load has landed (q_full above)
          }
        }
      }
      // Causal d64 / d256: the tile's first key block is its diagonal-most one. Where this warpgroup's 64 rows see
      // none of that block's last 64 keys, the block runs at half width: Q K^T as m64n64, the softmax over 64
      // columns, P V over 64 keys. Peeled off the loop, whose body is unchanged; every wgmma here is waited for on
      // this path (a wait after the join would serialise them all: C7515).
      int first_block = 0;
      if constexpr ((Dp == 64 || Dp == 256) && kHalfDiag) {  // kHalfDiag: causal launches only
        const bool half = __shfl_sync(0xffffffff, static_cast<int>(causal && live_blocks > 0 &&
                                          (n_blocks - 1) * BN + BN / 2 > m0 + cw * 64 + 63 + diag), 0) != 0;
        // d64 (192-row tiles): a warpgroup whose rows end before the first block's first key skips the block. It
        // waits for the stage's loads as the loop would (a release before them could count toward the stage's
        // previous round, which the other warpgroups may still read), then releases it.
        bool skip = false;
        if constexpr (Dp == 64)
          skip = __shfl_sync(0xffffffff, static_cast<int>(causal && live_blocks > 0 &&
                                 (n_blocks - 1) * BN > m0 + cw * 64 + 63 + diag), 0) != 0;
        if (skip) {
          first_block = 1;
          const int s = stage;
          const uint32_t parity = phase;
          if (++stage == kStages) { stage = 0; phase ^= 1; }
          mbar_wait(full_k(s), parity);
          mbar_wait(full_v(s), parity);
          if constexpr (kTmaEpi && kQBufs >= 2) {
            release_staged();  // no Q K^T here: the previous tile's O store is waited for now
          } else if (n_blocks == 1) {
            __syncwarp();
            mbar_arrive_if(q_empty(qb), lane == 0);  // this tile reads Q no more
          }
          __syncwarp();
          mbar_arrive_if(empty(s), lane == 0);  // predicated: a branch here cost the key loop (BRA.DIV)
        } else if (half) {
          first_block = 1;
          const int s = stage;
          const uint32_t parity = phase;
          if (++stage == kStages) { stage = 0; phase ^= 1; }
          float s_half[BN / 4];
          const bool k_ready = mbar_try(full_k(s), parity);
          const bool v_ready = mbar_try(full_v(s), parity);
          if (!k_ready) mbar_wait(full_k(s), parity);
          wgmma_fence();
#pragma unroll
          for (int kk = 0; kk < kQkSteps; ++kk) {
            const uint32_t off = (kk % 4) * 32;  // the first 64 key rows of the K stage: the same descriptors
            const uint64_t da = smem_desc_at_lo(smem_desc(q_half, 16, 1024), (kk / 4) * Cfg::kBlockM * 128 + off);
            const uint64_t db = smem_desc_at_lo(smem_desc(sK + s * kKVBytes, 16, 1024), (kk / 4) * BN * 128 + off);
            mma_qk<T, BN / 2>(s_half, da, db, kk > 0);
          }
          wgmma_commit();
          wgmma_wait<0>();
          fence_regs(s_half);
          if constexpr (kSplitKV<Dp>) {  // K of this stage: its Q K^T has completed
            __syncwarp();
            if (lane == 0) mbar_arrive(empty(s));
          }
          if constexpr (kTmaEpi && kQBufs >= 2) {
            release_staged();  // the previous tile's O store has had this Q K^T to read its buffer
          } else if (n_blocks == 1) {
            __syncwarp();
            if (lane == 0) mbar_arrive(q_empty(qb));  // the tile's last Q K^T has completed
          }
          mask_scores<BN / 2>(s_half, (n_blocks - 1) * BN, s_k, causal, m0, diag, row0, t);
          float alpha[2];
          online_softmax<BN / 2>(s_half, row_max, row_sum, alpha, scale_log2);  // O is still zero: no rescale
          uint32_t p_half[BN / 32][4];
          pack_p<T, BN / 2>(s_half, p_half);
          if (!v_ready) mbar_wait(full_v(s), parity);
          fence_regs(o_acc);
          wgmma_fence();
#pragma unroll
          for (int kk = 0; kk < BN / 32; ++kk) {  // V's first 64 key rows
            const uint64_t db = smem_desc_at_lo(smem_desc_v(sV + s * kKVBytes, BN * kVRowBytes<Dp, kQkSteps>, 8 * kVRowBytes<Dp, kQkSteps>, kV64<Dp, kQkSteps>), kk * 16 * kVRowBytes<Dp, kQkSteps>);
            mma_pv<T, kDv<Dp, kQkSteps>>(o_acc, p_half[kk], db);
          }
          wgmma_commit();
          wgmma_wait<0>();
          fence_regs(o_acc);
          __syncwarp();
          if constexpr (Dp == 256) {
            // V of the stage; with the TMA epilogue a tile's only key block's V stage holds O for the store, and
            // the epilogue releases it (as in the loop).
            if (lane == 0) mbar_arrive(empty_v(s));  // O has its own staging area
          } else {
            mbar_arrive_if(empty(s), lane == 0);  // K and V of the stage (one mbarrier), one arrival per warp
          }
        }
      }
      // d64's Q rows of this warpgroup as A fragments, loaded once a tile (Q has landed: q_full above)
      uint32_t q_frag[Dp == 64 ? kQkSteps : 1][4];
      if constexpr (Dp == 64) {
        if (first_block < live_blocks) {
#pragma unroll
          for (int kk = 0; kk < kQkSteps; ++kk) {
            const int r = warp * 16 + lane % 16, c = kk * 16 + (lane / 16) * 8;
            ldmatrix_x4(q_frag[kk], q_half + (c / 64) * Cfg::kBlockM * 128 + r * 128 + (((c % 64) / 8) ^ (r % 8)) * 16);
          }
        }
      }
      for (int i = first_block; i < live_blocks; ++i) {
        const int n = n_blocks - 1 - i;
        const int s = stage;
        const uint32_t parity = phase;
        const int s_u = Dp == 64 ? s : __shfl_sync(0xffffffff, s, 0);  // d64: vector register (smem_desc_at_lo)
        auto desc_at = [](uint64_t b, uint32_t off) { return Dp == 64 ? smem_desc_at_lo(b, off) : smem_desc_at(b, off); };
        if (++stage == kStages) { stage = 0; phase ^= 1; }

        // S = Q K^T
        float s_acc[BN / 2];
        // K's and V's tests overlap (one ~80-cycle round trip instead of two); V's result is kept for the
        // P V below: a completed phase stays completed until this warpgroup releases the stage.
        const bool k_ready = mbar_try(full_k(s), parity);
        const bool v_ready = mbar_try(full_v(s), parity);  // used at the P V below
        if (!k_ready) mbar_wait(full_k(s), parity);
        wgmma_fence();
#pragma unroll
        // The step count is a template parameter: a run-time test between wgmmas would make
        // ptxas wait for each one at the branch.
        for (int kk = 0; kk < kQkSteps; ++kk) {
          const uint32_t off = (kk % 4) * 32;  // 16 columns = 32 bytes inside a 128-byte row
          const uint64_t db = desc_at(smem_desc(sK + s_u * kKVBytes, 16, 1024), (kk / 4) * BN * 128 + off);
          if constexpr (Dp == 64) {  // Q from registers
            if constexpr (kIsBf16<T>) wgmma_rs_kn128_bf16(s_acc, q_frag[kk], db, kk > 0);
            else wgmma_rs_kn128_f16(s_acc, q_frag[kk], db, kk > 0);
          } else {
            const uint64_t da = desc_at(smem_desc(q_half, 16, 1024), (kk / 4) * Cfg::kBlockM * 128 + off);
            mma_qk<T, BN>(s_acc, da, db, kk > 0);
          }
        }
        wgmma_commit();
        wgmma_wait<0>();
        fence_regs(s_acc);
        if constexpr (kSplitKV<Dp>) {  // K of this stage: its Q K^T has completed
          __syncwarp();
          if (lane == 0) mbar_arrive(empty(s));
        }
        if constexpr (kTmaEpi && kQBufs >= 2) {
          // The previous tile's O store has had this tile's first Q K^T to read its buffer.
          if (i == 0) release_staged();
        } else {
          // The tile's last Q K^T has completed: the producer may load the next tile's Q here.
          if (i == n_blocks - 1) {
            __syncwarp();
            if (lane == 0) mbar_arrive(q_empty(qb));
          }
        }

        mask_scores<BN>(s_acc, n * BN, s_k, causal, m0, diag, row0, t);
        float alpha[2];
        if (online_softmax<BN>(s_acc, row_max, row_sum, alpha, scale_log2)) rescale_o<kDv<Dp, kQkSteps>>(o_acc, alpha);

        uint32_t p_frag[BN / 16][4];
        pack_p<T, BN>(s_acc, p_frag);

        // O += P V
        if (!v_ready) mbar_wait(full_v(s), parity);
        fence_regs(o_acc);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BN / 16; ++kk) {
          const uint64_t db = desc_at(smem_desc_v(sV + s_u * kKVBytes, BN * kVRowBytes<Dp, kQkSteps>, 8 * kVRowBytes<Dp, kQkSteps>, kV64<Dp, kQkSteps>), kk * 16 * kVRowBytes<Dp, kQkSteps>);
          mma_pv<T, kDv<Dp, kQkSteps>>(o_acc, p_frag[kk], db);
        }
        wgmma_commit();
        wgmma_wait<0>();
        fence_regs(o_acc);
        __syncwarp();
        if (lane == 0) {  // V (and K unless split); d256's last V stage too
          if constexpr (Dp == 64) mbar_arrive_count(empty(s), releases);
          else mbar_arrive(kSplitKV<Dp> ? empty_v(s) : empty(s));
        }
      }

    }

    if constexpr (kTmaEpi && (kQBufs >= 2 || Dp == 256)) {
      if (n_blocks > 0) {
        if constexpr (Dp == 256) {
          // d256's epilogue through 32 KB of shared memory of its own, beside the one Q buffer and
          // the one K/V stage: warpgroup cw stages its 64 rows x 128 columns (two 64-column panels, 8 KB each, in
          // the TMA's 128-byte swizzle) at + cw * 16 KB, stores them, waits for the store to read them and stages
          // the other 128 columns. The last key block's V stage went back to the producer in the loop, so the next
          // tile's first V no longer waits for this store.
          const uint32_t o_half = bars - kOStageBytes<Dp, kTmaEpi> + cw * 16384;
          float inv[2];
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            float l = row_sum[r];
            l += __shfl_xor_sync(0xffffffff, l, 1);
            l += __shfl_xor_sync(0xffffffff, l, 2);
            inv[r] = l > 0.f ? 1.f / l : 0.f;
          }
          const uint32_t row_addr = o_half + (warp * 16 + g) * 128 + 4 * t;
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            // The region is free once this warpgroup's previous store (the last tile's second half, or this
            // tile's first) has read it.
            if (threadIdx.x % 128 == 0) bulk_wait_read<0>();
            named_sync(kEpilogueBarrier + cw, 128);
#pragma unroll
            for (int r = 0; r < 2; ++r) {
#pragma unroll
              for (int jj = 0; jj < 16; ++jj) {
                const int j = 16 * h + jj;
                st_shared_u32(row_addr + r * 8 * 128 + (jj / 8) * 64 * 128 + (((jj % 8) ^ g) << 4),
                              pack2<T>(o_acc[4 * j + 2 * r] * inv[r], o_acc[4 * j + 2 * r + 1] * inv[r]));
              }
            }
            fence_proxy_async_shared();              // these writes, before the TMA reads them
            named_sync(kEpilogueBarrier + cw, 128);  // the warpgroup's 128 threads have written
            if (threadIdx.x % 128 == 0) {
              if (m0 + cw * 64 < s_q) {  // a slice wholly past s_q stores nothing
#pragma unroll
                for (int pp = 0; pp < 2; ++pp)  // a panel wholly past d (136 <= d <= 192) stores nothing
                  if ((2 * h + pp) * 64 < d)
                    tma_store(&tm_o, o_half + pp * 64 * 128, (2 * h + pp) * 64, w.head, m0 + cw * 64, w.batch);
              }
              bulk_commit();
            }
          }
        } else {
          // Epilogue through shared memory: finish the row sums across the quad, normalise, pack
          // and write O into this warpgroup's 64-row slice of the tile's Q buffer (every Q K^T of
          // the tile has completed), in the TMA's 128-byte-swizzled layout: row r, 16-byte chunk c
          // of a panel at r * 128 + ((c ^ r % 8) << 4); this thread's rows are 8 apart, both with
          // r % 8 == g. One thread then stores each 64-column panel with a bulk tensor copy, which
          // clips rows past s_q and columns past d; the buffer goes back to the producer once the
          // copy has read it (release_staged).
          const uint32_t row_addr = q_half + (warp * 16 + g) * 128 + 4 * t;
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            float l = row_sum[r];
            l += __shfl_xor_sync(0xffffffff, l, 1);
            l += __shfl_xor_sync(0xffffffff, l, 2);
            const float inv = l > 0.f ? 1.f / l : 0.f;
#pragma unroll
            for (int j = 0; j < kDv<Dp, kQkSteps> / 8; ++j)
              st_shared_u32(row_addr + r * 8 * 128 + (j / 8) * Cfg::kBlockM * 128 + (((j % 8) ^ g) << 4),
                            pack2<T>(o_acc[4 * j + 2 * r] * inv, o_acc[4 * j + 2 * r + 1] * inv));
          }
          fence_proxy_async_shared();          // these writes, before the TMA reads them
          named_sync(kEpilogueBarrier + cw, 128);  // the warpgroup's 128 threads have written
          if (threadIdx.x % 128 == 0) {
            if (m0 + cw * 64 < s_q && !(lone && cw > 0)) {  // a slice past s_q, or a lone piece's dead ones: nothing
#pragma unroll
              for (int p = 0; p < kPanels; ++p)
                tma_store(&tm_o, q_half + p * Cfg::kBlockM * 128, p * 64, w.head, m0 + cw * 64, w.batch);
            }
            bulk_commit();
          }
          staged_q = qb;
        }
      } else {
        // A tile that sees no key loaded no Q (no buffer to stage in): store its zeros directly.
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const int row = row0 + 8 * r;
          if (row < s_q) {
            T* dst = out + ((static_cast<size_t>(w.batch) * s_q + row) * h_q + w.head) * static_cast<size_t>(d);
#pragma unroll
            for (int j = 0; j < kDv<Dp, kQkSteps> / 8; ++j) {
              const int col = 8 * j + 2 * t;
              if (col < d) *reinterpret_cast<uint32_t*>(dst + col) = 0u;
            }
          }
        }
      }
    } else {
      // Epilogue: finish the row sums across the quad, normalise, store the rows inside s_q.
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float l = row_sum[r];
        l += __shfl_xor_sync(0xffffffff, l, 1);
        l += __shfl_xor_sync(0xffffffff, l, 2);
        const float inv = l > 0.f ? 1.f / l : 0.f;
        const int row = row0 + 8 * r;
        if (row < s_q) {
          T* dst = out + ((static_cast<size_t>(w.batch) * s_q + row) * h_q + w.head) * static_cast<size_t>(d);
#pragma unroll
          for (int j = 0; j < kDv<Dp, kQkSteps> / 8; ++j) {
            const int col = 8 * j + 2 * t;
            if (col < d)
              *reinterpret_cast<uint32_t*>(dst + col) =
                  pack2<T>(o_acc[4 * j + 2 * r] * inv, o_acc[4 * j + 2 * r + 1] * inv);
          }
        }
      }
    }
    // Reconverge after the per-row stores: without it ptxas cannot prove the warp converged
    // at the next tile's shuffles and adds a divergent copy of the softmax (BRA.DIV).
    __syncwarp();
  }
  // The last O stores must have read shared memory (and finished) before the CTA exits.
  if constexpr (kTmaEpi && (kQBufs >= 2 || Dp == 256)) {
    if (threadIdx.x % 128 == 0) bulk_wait<0>();
  }
}

// ---- host side ---------------------------------------------------------------------------

using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                 const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                 const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                 CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// The driver's tensor-map encoder, fetched through the runtime so no -lcuda is needed.
EncodeTiled encoder() {
  static EncodeTiled fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault,
                                         &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      p = nullptr;
    return reinterpret_cast<EncodeTiled>(p);
  }();
  return fn;
}

// [b, s, h, d] tensor viewed as 4-d (d, h, s, b) with a box of 64 columns x 1 head x rows x 1.
bool make_map(CUtensorMap* map, const void* ptr, int dtype, int b, int s, int h, int d, int rows,
              bool sw64 = false) {
  const cuuint64_t dims[4] = {cuuint64_t(d), cuuint64_t(h), cuuint64_t(s), cuuint64_t(b)};
  const cuuint64_t strides[3] = {cuuint64_t(d) * 2, cuuint64_t(h) * d * 2, cuuint64_t(s) * h * d * 2};
  const cuuint32_t box[4] = {sw64 ? 32u : 64u, 1, cuuint32_t(rows), 1};
  const cuuint32_t elem_strides[4] = {1, 1, 1, 1};
  return encoder()(map, dtype == 0 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                   4, const_cast<void*>(ptr), dims, strides, box, elem_strides,
                   CU_TENSOR_MAP_INTERLEAVE_NONE, sw64 ? CU_TENSOR_MAP_SWIZZLE_64B : CU_TENSOR_MAP_SWIZZLE_128B,
                   CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                   CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// Multiprocessors of the current device (one persistent CTA each).
int num_sms() {
  static const int n = [] {
    int dev = 0, count = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
      count = 0;
    return count > 0 ? count : 132;
  }();
  return n;
}

// Causal tile order: K/V bytes one section of heads may keep in L2 at a time (see decode_tile).
constexpr long long kSectionL2Bytes = 16ll << 20;
// Causal launches: the light query blocks that go last over every head fill this many waves (the tail).
constexpr int kTailWaves = 4;
// ... and only past this many keys (at s_k <= 2048 it lost 1.7%, at s4096 it read level).
constexpr int kTailMinSk = 4096;
// Causal launches up to kShortSectionMaxSk keys: sections of 4 MB (s_k <= 512: +4.8..+5.0% kernel time).
constexpr long long kShortSectionL2Bytes = 4ll << 20;
constexpr int kShortSectionMaxSk = 1024;

template <typename T, int Dp, int kM, int kQkSteps, bool kTmaEpi, int kN = 128, bool kHalfDiag = true>
int launch(const void* q, const void* k, const void* v, void* o, int b, int s_q, int s_k, int h_q,
           int h_kv, int d, int causal, float scale, int dtype, cudaStream_t stream) {
  constexpr int BN = Config<Dp, kM, kN>::kBlockN;
  constexpr int kBlockM = Config<Dp, kM, kN>::kBlockM;
  CUtensorMap tq, tk, tv, to;  // to: O, stored 64 rows x 64 columns at a time (TMA epilogue)
  if (!make_map(&tq, q, dtype, b, s_q, h_q, d, kBlockM) || !make_map(&tk, k, dtype, b, s_k, h_kv, d, BN) ||
      !make_map(&tv, v, dtype, b, s_k, h_kv, d, BN, kV64<Dp, kQkSteps>) || !make_map(&to, o, dtype, b, s_q, h_q, d, 64))
    return 5;
  constexpr int smem = smem_bytes<Dp, kM, kN>() + kOStageBytes<Dp, kTmaEpi>;
  static const cudaError_t attr = cudaFuncSetAttribute(
      attn_fwd_sm90<T, Dp, kM, kQkSteps, kTmaEpi, kN, kHalfDiag>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (attr != cudaSuccess) return 3;
  const int num_m_blocks = (s_q + kBlockM - 1) / kBlockM;
  const long long bh = static_cast<long long>(h_q) * b;
  const long long tiles = bh * num_m_blocks;
  // Tile indices and the counter (which runs up to num_tiles + grid) stay inside an int.
  if (tiles > (1ll << 30)) return 1;
  const int num_tiles = static_cast<int>(tiles);
  const int num_bh = static_cast<int>(bh);
  int sec = 1, cut = 0;
  if (causal) {
    const int group = h_q / h_kv;
    const long long kv_bytes = 2ll * s_k * d * 2;  // K and V of one kv head
    long long kv_heads = (s_k <= kShortSectionMaxSk ? kShortSectionL2Bytes : kSectionL2Bytes) / kv_bytes;
    if (kv_heads < 1) kv_heads = 1;
    const long long heads = kv_heads * group;
    sec = heads < num_bh ? static_cast<int>(heads) : num_bh;
    // d256's square short causal launches hold ~64 tiles (half a wave) a section, not a byte count (4 MB: 32-128 tiles)
    if (Dp == 256 && s_k <= kShortSectionMaxSk && s_q == s_k) {
      const int h64 = 64 / num_m_blocks > 1 ? 64 / num_m_blocks : 1;
      sec = h64 < num_bh ? h64 : num_bh;
    }
    // The tail: the lightest query blocks of every head go last, over all heads: as many as fill kTailWaves waves
    // of tiles and hold at most half the heaviest block's keys (the prefill shapes' blocks all see most keys: none)
    const auto blocks = [&](int m) {
      const int end = m * kBlockM + kBlockM + s_k - s_q;
      const int kv_end = end < s_k ? end : s_k;
      return kv_end > 0 ? (kv_end + BN - 1) / BN : 0;
    };
    const int heaviest = blocks(num_m_blocks - 1);
    // Not for d256, whose light blocks would re-read every head's long K/V last
    while (Dp != 256 && s_k > kTailMinSk && cut < num_m_blocks - 1 &&
           (cut + 1ll) * num_bh <= static_cast<long long>(kTailWaves) * num_sms() && 2 * blocks(cut) <= heaviest)
      ++cut;
  }
  const int grid = num_tiles < num_sms() ? num_tiles : num_sms();
  int split_from = num_tiles, run_tiles = num_tiles;  // the last part-empty wave in 64-row pieces
  if (kSplitTail<Dp, Config<Dp, kM, kN>::kConsumers, kHalfDiag> && num_tiles > grid && num_tiles % grid > 0 &&
      3 * (num_tiles % grid) <= grid) {
    split_from = num_tiles - num_tiles % grid;
    run_tiles = num_tiles + 2 * (num_tiles % grid);
  }
  const float scale_log2 = scale * 1.4426950408889634f;
  attn_fwd_sm90<T, Dp, kM, kQkSteps, kTmaEpi, kN, kHalfDiag><<<grid, Config<Dp, kM, kN>::kThreads, smem, stream>>>(
      tq, tk, tv, to, static_cast<T*>(o), s_q, s_k, h_q, h_kv, d, causal ? 1 + cut : 0, scale_log2, num_m_blocks,
      num_bh, kSplitTail<Dp, Config<Dp, kM, kN>::kConsumers, kHalfDiag> ? split_from : sec, run_tiles);
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}

template <typename T>
int dispatch(const void* q, const void* k, const void* v, void* o, int b, int s_q, int s_k, int h_q,
             int h_kv, int d, int causal, float scale, int dtype, cudaStream_t st) {
  // <padded head dim, 16-column steps of Q K^T>; columns past d are zero-filled by the TMA.
  // The O epilogue through shared memory and a TMA store pays off where tiles are short (few key
  // blocks; measured +8% at s <= 1024). Unmasked d64 uses it up to kTmaEpilogueMaxSk keys (past that it lost 1-4%
  // on h32-8), d96/d128 at every s_k (+2..+3% on their long launches); d256 (O staged in 32 KB of its own) on its
  // 128- and 64-key blocks, i.e. unmasked up to s_k 1024 and causal up to 4096 (80-key blocks leave no room for O).
  constexpr int kTmaEpilogueMaxSk = 2048;
  const bool tma = s_k <= kTmaEpilogueMaxSk;
  // d64 causal: 192-row tiles at every s_q (see Config<64, 192>), TMA epilogue at
  // every s_k (+1% kernel time on the long causal launches)
  if (d <= 64 && causal) return launch<T, 64, 192, 4, true>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);
  // unmasked d64: the instantiations without the skipped / half-width first block
  if (d <= 64)
    return tma ? launch<T, 64, 192, 4, true, 128, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st)
               : launch<T, 64, 192, 4, false, 128, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);
  // d96/d128 on 192x128 tiles (the in-order loop, 3 consumers: a third fewer K/V copies per FLOP), else 128-row tiles.
  // Unmasked tiles all cost the same, so a launch takes ceil(tiles / SMs) tile-times: 192 rows where those
  // wave-rows are at most 3.5% above 128's (on the grid: every unmasked s_q 2031-4096 and s_q >= 8175 launch
  // but q8192-k32768's 16 heads). A 192-row tile's dead warpgroups cost nothing, so it counts in live 64-row
  // units, three a tile (the square short launches s495-s1024 take 192 rows). Causal tiles differ in cost and the
  // scheduler hands out the heavy ones first, so causal launches go by padding: 192 rows where they pad s_q by at
  // most 1% more than 128-row tiles (s_k > 2048 only), and every square one past s_k 2048 (s4079-s4096: the
  // padding is dead warpgroups).
  const long long bh = static_cast<long long>(b) * h_q, sms = num_sms();
  const long long waves192 = (bh * ((s_q + 63) / 64) + 3 * sms - 1) / (3 * sms) * 192;  // dead warpgroups skip
  const long long waves128 = (bh * ((s_q + 127) / 128) + sms - 1) / sms * 128;
  const bool rows192 = causal ? s_q == s_k || (s_q + 191) / 192 * 192 * 100 <= (s_q + 127) / 128 * 128 * 101
                              : waves192 * 1000 <= waves128 * 1035;
  // Long keys (s_k > 2048) on the TMA epilogue too; every other d96/d128 launch below, on 128-key blocks
  if (d <= 128 && !tma && rows192) {
    if (d <= 96)
      return causal ? launch<T, 128, 192, 6, true>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st)
                    : launch<T, 128, 192, 6, true, 128, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);
    return causal ? launch<T, 128, 192, 8, true>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st)
                  : launch<T, 128, 192, 8, true, 128, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);
  }
  // Short keys, unmasked, by the wave rule: TMA epilogue with O staged in the Q buffer, as d64's 192-row tiles.
  if (d <= 128 && !causal && rows192) {
    if (d <= 96) return launch<T, 128, 192, 6, true, 128, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);
    return launch<T, 128, 192, 8, true, 128, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);
  }
  // Every other d96/d128 launch: 128-row tiles at any s_k; unmasked launches run their own functions.
  if (d <= 96)
    return causal ? launch<T, 128, 128, 6, true>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st)
                  : launch<T, 128, 128, 6, true, 128, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);
  if (d <= 128)
    return causal ? launch<T, 128, 128, 8, true>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st)
                  : launch<T, 128, 128, 8, true, 128, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);
  // d256: 80-key blocks, the FA3 order and the register epilogue for causal launches past s_k 4096 (s8192-s32768
  // +3.5..+11.7% kernel time, s4096 level, s_k <= 2048 -16%: the TMA epilogue and the half-width diagonal block
  // pay there) and unmasked ones past 1024 (s2048 +4..+5%, s1024 -1..-4%, s512 -13..-18%). 64-key blocks, the
  // FA3 order and the TMA epilogue for causal 1024 < s_k <= 4096 (+1..+6%) and unmasked 512 < s_k <= 1024 (+2..+8%);
  // the shortest keep the 128-key functions (there the 64-key form read -11..+2%). With warpgroup 0's masked
  // diagonal block skipped, causal 512 < s_k <= 1024 on 64 keys too (s495-s512 read -4..+1% so, and stay on 128).
  if (causal)
    return s_k > 4096 ? launch<T, 256, 128, 16, false, 80>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st)
         : s_k > 512 ? launch<T, 256, 128, 16, true, 64>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st)
                      : launch<T, 256, 128, 16, true>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);
  // unmasked d256: the instantiations without the half-width diagonal block
  return s_k > 1024 ? launch<T, 256, 128, 16, false, 80, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st)
       : s_k > 512 ? launch<T, 256, 128, 16, true, 64, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st)
                    : launch<T, 256, 128, 16, true, 128, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

}  // namespace

extern "C" int flash_attn_fwd(const void* q, const void* k, const void* v, void* o, int b, int s_q,
                              int s_k, int h_q, int h_kv, int d, int causal, float scale, int dtype,
                              void* stream) {
  if (b <= 0 || s_q <= 0 || s_k <= 0 || h_q <= 0 || h_kv <= 0 || h_q % h_kv != 0) return 1;
  // TMA needs 16-byte aligned bases and row strides; the padded tile needs d <= 256.
  if (d <= 0 || d > 256 || d % 8 != 0) return 1;
  if (!aligned16(q) || !aligned16(k) || !aligned16(v) || !aligned16(o)) return 1;
  if (b > 65535 || h_q > 65535) return 1;  // grid y/z limits
  if (encoder() == nullptr) return 6;
  cudaStream_t st = static_cast<cudaStream_t>(stream);
  if (dtype == 0) return dispatch<__nv_bfloat16>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);
  if (dtype == 1) return dispatch<__half>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);
  return 1;
}
