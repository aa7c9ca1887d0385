// FlashAttention forward, seed kernel: FA2-style tiled attention with an online softmax.
//
// One thread block owns kBlockM query rows of one (batch, head); each warp owns 16 of those
// rows. The block walks the key/value sequence in tiles of kBlockN rows, double-buffered in
// shared memory with cp.async. Both matrix products run on the tensor cores through
// mma.sync m16n8k16 (bf16/fp16 in, fp32 accumulate), with operands fetched by ldmatrix.
// The probabilities P never leave registers: the accumulator layout of S = Q K^T is exactly
// the A-operand layout of the next product P V.
//
// Layout: q [b, s_q, h_q, d], k and v [b, s_k, h_kv, d], o like q; all contiguous.
// Causal masking is bottom-right aligned: query i sees key j when j <= i + s_k - s_q.
// A query row that sees no key at all gets zeros.
//
// This is a clear starting point, not a tuned kernel: no warp specialisation, no wgmma,
// no TMA, and the output goes straight from registers to global memory.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace {

constexpr float kLog2e = 1.4426950408889634f;

// Tile sizes per head dimension. Rows are padded by 8 elements (16 bytes) in shared memory
// so that the 8 row addresses of one ldmatrix fall in different banks.
// kMinBlocks asks ptxas to fit that many blocks per multiprocessor (caps registers).
template <int D> struct Tiles;
template <> struct Tiles<64>  { static constexpr int kBlockM = 128, kBlockN = 64, kWarps = 8, kMinBlocks = 2; };
template <> struct Tiles<96>  { static constexpr int kBlockM = 128, kBlockN = 64, kWarps = 8, kMinBlocks = 1; };
template <> struct Tiles<128> { static constexpr int kBlockM = 128, kBlockN = 64, kWarps = 8, kMinBlocks = 1; };
template <> struct Tiles<256> { static constexpr int kBlockM = 64,  kBlockN = 32, kWarps = 4, kMinBlocks = 2; };

template <int D> __host__ __device__ constexpr int smem_stride() { return D + 8; }

template <int D> constexpr size_t smem_bytes() {
  using Tl = Tiles<D>;
  // Q tile + two stages of (K tile, V tile), 2 bytes per element.
  return size_t(Tl::kBlockM + 4 * Tl::kBlockN) * smem_stride<D>() * 2;
}

// ---- thin wrappers over the PTX we use --------------------------------------------------

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16-byte async copy global -> shared; when `valid` is false the 16 bytes are zero-filled
// (src-size 0), which keeps rows past the end of the sequence finite.
__device__ __forceinline__ void cp_async_16(void* dst, const void* src, bool valid) {
  int src_size = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)),
               "l"(src), "r"(src_size));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::); }

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

// c += a * b for one 16x8x16 tile; a: 4 regs, b: 2 regs, c: 4 fp32.
template <typename T>
__device__ __forceinline__ void mma_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                          uint32_t b1) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

template <typename T> __device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&v);
  } else {
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&v);
  }
}

// Copy `rows` x D elements (row stride `gstride` in global memory) into a padded shared tile;
// rows at or past `valid_rows` are zero-filled.
template <typename T, int D, int kThreads>
__device__ __forceinline__ void load_tile(T* sdst, const T* gsrc, int rows, int valid_rows,
                                          int64_t gstride) {
  constexpr int kChunksPerRow = D / 8;  // 8 elements = 16 bytes
  for (int c = threadIdx.x; c < rows * kChunksPerRow; c += kThreads) {
    int r = c / kChunksPerRow, col = (c % kChunksPerRow) * 8;
    bool valid = r < valid_rows;
    const T* src = valid ? gsrc + r * gstride + col : gsrc;  // any mapped address when invalid
    cp_async_16(sdst + r * smem_stride<D>() + col, src, valid);
  }
}

// ---- the kernel -------------------------------------------------------------------------

template <typename T, int D>
__global__ void __launch_bounds__(Tiles<D>::kWarps * 32, Tiles<D>::kMinBlocks)
    flash_fwd_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                     T* __restrict__ o, int s_q, int s_k, int h_q, int h_kv, int causal,
                     float scale_log2) {
  constexpr int kBlockM = Tiles<D>::kBlockM, kBlockN = Tiles<D>::kBlockN;
  constexpr int kThreads = Tiles<D>::kWarps * 32;
  constexpr int kStride = smem_stride<D>();
  constexpr int kNTiles = kBlockN / 8;  // 8-wide column tiles of S per warp
  constexpr int kDTiles = D / 8;        // 8-wide column tiles of O per warp

  extern __shared__ __align__(16) unsigned char smem_raw[];
  // Shared memory: Q tile, then K stage 0, K stage 1, V stage 0, V stage 1.
  T* sQ = reinterpret_cast<T*>(smem_raw);
  auto sK = [&](int stage) { return sQ + (kBlockM + stage * kBlockN) * kStride; };
  auto sV = [&](int stage) { return sQ + (kBlockM + (2 + stage) * kBlockN) * kStride; };

  // Heaviest causal blocks (last query rows) are launched first.
  const int m_block = gridDim.x - 1 - blockIdx.x;
  const int head = blockIdx.y, batch = blockIdx.z;
  const int kv_head = head / (h_q / h_kv);
  const int m0 = m_block * kBlockM;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;  // mma fragment coordinates

  const int64_t q_row_stride = int64_t(h_q) * D, kv_row_stride = int64_t(h_kv) * D;
  const T* q_base = q + (int64_t(batch) * s_q + m0) * q_row_stride + int64_t(head) * D;
  const T* k_base = k + int64_t(batch) * s_k * kv_row_stride + int64_t(kv_head) * D;
  const T* v_base = v + int64_t(batch) * s_k * kv_row_stride + int64_t(kv_head) * D;
  T* o_base = o + (int64_t(batch) * s_q + m0) * q_row_stride + int64_t(head) * D;

  // Key tiles this block needs: all of them, or under the causal mask only those at or left
  // of the diagonal of its last row.
  const int diag = s_k - s_q;  // query i sees keys j <= i + diag
  int n_end = s_k;
  if (causal) n_end = min(s_k, m0 + kBlockM + diag);
  const int n_tiles = n_end > 0 ? (n_end + kBlockN - 1) / kBlockN : 0;

  float acc_o[kDTiles][4];
#pragma unroll
  for (int i = 0; i < kDTiles; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc_o[i][j] = 0.f;
  float row_max[2] = {-INFINITY, -INFINITY};  // rows g and g+8 of this warp, in log2 units
  float row_sum[2] = {0.f, 0.f};              // this thread's partial sums (quad-reduced at end)

  if (n_tiles > 0) {
    load_tile<T, D, kThreads>(sQ, q_base, kBlockM, s_q - m0, q_row_stride);
    load_tile<T, D, kThreads>(sK(0), k_base, kBlockN, s_k, kv_row_stride);
    load_tile<T, D, kThreads>(sV(0), v_base, kBlockN, s_k, kv_row_stride);
    cp_async_commit();
  }

  const int warp_row0 = m0 + warp * 16;  // first query row of this warp

  for (int nt = 0; nt < n_tiles; ++nt) {
    const int n0 = nt * kBlockN;
    const int buf = nt & 1;
    cp_async_wait_all();
    __syncthreads();  // tile nt is in shared memory, and everyone is done with tile nt-1
    if (nt + 1 < n_tiles) {
      const int n1 = n0 + kBlockN;
      load_tile<T, D, kThreads>(sK(buf ^ 1), k_base + n1 * kv_row_stride, kBlockN, s_k - n1,
                                kv_row_stride);
      load_tile<T, D, kThreads>(sV(buf ^ 1), v_base + n1 * kv_row_stride, kBlockN, s_k - n1,
                                kv_row_stride);
    }
    cp_async_commit();

    // S = Q K^T for this warp's 16 rows and kBlockN keys.
    float s[kNTiles][4];
#pragma unroll
    for (int i = 0; i < kNTiles; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) s[i][j] = 0.f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      uint32_t a[4];
      ldmatrix_x4(a, sQ + (warp * 16 + (lane & 15)) * kStride + kk * 16 + (lane >> 4) * 8);
#pragma unroll
      for (int np = 0; np < kNTiles / 2; ++np) {
        uint32_t b[4];  // b[0..1]: key tile 2np, b[2..3]: key tile 2np+1
        ldmatrix_x4(b, sK(buf) + (np * 16 + (lane & 7) + ((lane >> 4) << 3)) * kStride +
                           kk * 16 + ((lane >> 3) & 1) * 8);
        mma_16816<T>(s[2 * np], a, b[0], b[1]);
        mma_16816<T>(s[2 * np + 1], a, b[2], b[3]);
      }
    }

    // Mask keys past the end and, under causal, keys right of the diagonal. Only tiles that
    // reach past either boundary for some row of this warp need the per-element test.
    const bool tail = n0 + kBlockN > s_k;
    const bool crosses_diag = causal && (n0 + kBlockN - 1 > warp_row0 + diag);
    if (tail || crosses_diag) {
#pragma unroll
      for (int i = 0; i < kNTiles; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int col = n0 + i * 8 + 2 * t + (j & 1);
          const int row = warp_row0 + g + (j >> 1) * 8;
          if (col >= s_k || (causal && col > row + diag)) s[i][j] = -INFINITY;
        }
    }

    // Online softmax in base 2: p = 2^(s * scale * log2e - running max).
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float mx = -INFINITY;
#pragma unroll
      for (int i = 0; i < kNTiles; ++i) mx = fmaxf(mx, fmaxf(s[i][2 * r], s[i][2 * r + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffff, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffff, mx, 2));
      const float new_max = fmaxf(row_max[r], mx * scale_log2);
      // A row that has seen only masked keys keeps max -inf; subtract 0 then so exp2 gives 0.
      const float base = new_max == -INFINITY ? 0.f : new_max;
      const float correction = exp2f(row_max[r] - base);  // 0 on the first visible tile
      row_max[r] = new_max;
      float sum = 0.f;
#pragma unroll
      for (int i = 0; i < kNTiles; ++i) {
        s[i][2 * r] = exp2f(s[i][2 * r] * scale_log2 - base);
        s[i][2 * r + 1] = exp2f(s[i][2 * r + 1] * scale_log2 - base);
        sum += s[i][2 * r] + s[i][2 * r + 1];
      }
      row_sum[r] = row_sum[r] * correction + sum;
#pragma unroll
      for (int i = 0; i < kDTiles; ++i) {
        acc_o[i][2 * r] *= correction;
        acc_o[i][2 * r + 1] *= correction;
      }
    }

    // O += P V. P's fragments come straight from the S accumulators.
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk) {
      uint32_t a[4];
      a[0] = pack2<T>(s[2 * kk][0], s[2 * kk][1]);
      a[1] = pack2<T>(s[2 * kk][2], s[2 * kk][3]);
      a[2] = pack2<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]);
      a[3] = pack2<T>(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
      for (int dp = 0; dp < kDTiles / 2; ++dp) {
        uint32_t b[4];  // b[0..1]: d tile 2dp, b[2..3]: d tile 2dp+1
        ldmatrix_x4_trans(b, sV(buf) + (kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * kStride +
                                 dp * 16 + (lane >> 4) * 8);
        mma_16816<T>(acc_o[2 * dp], a, b[0], b[1]);
        mma_16816<T>(acc_o[2 * dp + 1], a, b[2], b[3]);
      }
    }
  }

  // Normalise and write this thread's pieces of its two rows.
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float sum = row_sum[r];
    sum += __shfl_xor_sync(0xffffffff, sum, 1);
    sum += __shfl_xor_sync(0xffffffff, sum, 2);
    const float inv = sum > 0.f ? 1.f / sum : 0.f;
    const int row = warp_row0 + g + r * 8;
    if (row < s_q) {
      T* dst = o_base + int64_t(row - m0) * q_row_stride;
#pragma unroll
      for (int i = 0; i < kDTiles; ++i) {
        *reinterpret_cast<uint32_t*>(dst + i * 8 + 2 * t) =
            pack2<T>(acc_o[i][2 * r] * inv, acc_o[i][2 * r + 1] * inv);
      }
    }
  }
}

template <typename T, int D>
int launch(const void* q, const void* k, const void* v, void* o, int b, int s_q, int s_k,
           int h_q, int h_kv, int causal, float scale, cudaStream_t stream) {
  constexpr int kBlockM = Tiles<D>::kBlockM;
  constexpr size_t kSmem = smem_bytes<D>();
  auto kernel = flash_fwd_kernel<T, D>;
  // Above 48 KB of dynamic shared memory a kernel must opt in; once per process is enough.
  static const cudaError_t attr_status =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kSmem));
  if (attr_status != cudaSuccess) return 3;
  dim3 grid((s_q + kBlockM - 1) / kBlockM, h_q, b);
  kernel<<<grid, Tiles<D>::kWarps * 32, kSmem, stream>>>(
      static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v),
      static_cast<T*>(o), s_q, s_k, h_q, h_kv, causal, scale * kLog2e);
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}

template <typename T>
int dispatch_d(const void* q, const void* k, const void* v, void* o, int b, int s_q, int s_k,
               int h_q, int h_kv, int d, int causal, float scale, cudaStream_t stream) {
  switch (d) {
    case 64: return launch<T, 64>(q, k, v, o, b, s_q, s_k, h_q, h_kv, causal, scale, stream);
    case 96: return launch<T, 96>(q, k, v, o, b, s_q, s_k, h_q, h_kv, causal, scale, stream);
    case 128: return launch<T, 128>(q, k, v, o, b, s_q, s_k, h_q, h_kv, causal, scale, stream);
    case 256: return launch<T, 256>(q, k, v, o, b, s_q, s_k, h_q, h_kv, causal, scale, stream);
    default: return 1;  // unsupported head dimension
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

}  // namespace

extern "C" int flash_attn_fwd(const void* q, const void* k, const void* v, void* o, int b,
                              int s_q, int s_k, int h_q, int h_kv, int d, int causal,
                              float scale, int dtype, void* stream) {
  if (b <= 0 || s_q <= 0 || s_k <= 0 || h_q <= 0 || h_kv <= 0) return 1;
  if (h_q % h_kv != 0) return 1;
  if (!aligned16(q) || !aligned16(k) || !aligned16(v) || !aligned16(o)) return 1;
  if (b > 65535 || h_q > 65535) return 1;  // grid y/z limits
  auto st = static_cast<cudaStream_t>(stream);
  if (dtype == 0)
    return dispatch_d<__nv_bfloat16>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, st);
  if (dtype == 1)
    return dispatch_d<__half>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, st);
  return 1;  // unsupported dtype
}
