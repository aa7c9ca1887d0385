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

# Session 9: the steady d128 block is ~530 instructions a warp, and 84 of them are the FADDs of the row sum. With P
# already in the A-operand registers of the P V wgmmas, a m64n8k16 wgmma of P and a 16 x 8 block of ones in
# shared memory adds the row sums on the tensor cores: every column of its 4-register accumulator is the sum of
# P's row as rounded for P V (the numerator's own P). Ten such wgmmas a 160-key block (8 for 128) replace ~80 FADDs;
# their tensor work is 8/128 of P V's. The sums are rescaled with O. d96/d128 (the FA3-order loop) only.
TCSUM_EDITS = [
    ("constexpr int kTileSlots = 2;  // shared-memory ring that hands tile indices to the consumers\n",
     "constexpr int kTileSlots = 2;  // shared-memory ring that hands tile indices to the consumers\n"
     "// d96/d128: 16 keys x 8 columns of ones (K-major, no swizzle: two 128-byte core matrices), the B operand of\n"
     "// the row-sum wgmmas. After the tile slots, 16-byte aligned.\n"
     "constexpr int kOnesBytes = 256;\n"),
    ("num_barriers<Dp, M, N>() * 8 + kTileSlots * 4 + 1024;\n",
     "num_barriers<Dp, M, N>() * 8 + kTileSlots * 4 + 16 + kOnesBytes + 1024;\n"),
    ("// O(64 x N) += P V step (P in registers, V in shared memory, MN-major).\n",
     "// L(64 x 8) += P ones: P from registers (as for P V), B a K-major 16 x 8 block of ones without swizzle, so\n"
     "// every column of L is P's row sum.\n"
     "template <typename T>\n"
     "__device__ __forceinline__ void mma_rowsum(float (&d)[4], const uint32_t (&a)[4], uint64_t db) {\n"
     "  if constexpr (kIsBf16<T>)\n"
     "    asm volatile(\"{\\n.reg .pred p;\\nsetp.eq.u32 p, 1, 1;\\n\"\n"
     "                 \"wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, {%4, %5, %6, %7}, %8, p, 1, 1, 0;\\n}\\n\"\n"
     "                 : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3])\n"
     "                 : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"l\"(db));\n"
     "  else\n"
     "    asm volatile(\"{\\n.reg .pred p;\\nsetp.eq.u32 p, 1, 1;\\n\"\n"
     "                 \"wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0, %1, %2, %3}, {%4, %5, %6, %7}, %8, p, 1, 1, 0;\\n}\\n\"\n"
     "                 : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3])\n"
     "                 : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"l\"(db));\n"
     "}\n"
     "// O(64 x N) += P V step (P in registers, V in shared memory, MN-major).\n"),
    ("  const uint32_t slots = bars + 8 * num_barriers<Dp, kM, kN>();  // kTileSlots x u32 tile index\n",
     "  const uint32_t slots = bars + 8 * num_barriers<Dp, kM, kN>();  // kTileSlots x u32 tile index\n"
     "  const uint32_t ones = (slots + 4 * kTileSlots + 15) & ~15u;     // d96/d128: kOnesBytes of ones\n"),
    ("    asm volatile(\"fence.mbarrier_init.release.cluster;\\n\" ::: \"memory\");\n  }\n  __syncthreads();\n",
     "    asm volatile(\"fence.mbarrier_init.release.cluster;\\n\" ::: \"memory\");\n  }\n"
     "  if constexpr (Dp == 128) {  // the row-sum wgmmas' ones, written before the async proxy reads them\n"
     "    if (threadIdx.x < kOnesBytes / 4) {\n"
     "      st_shared_u32(ones + 4 * threadIdx.x, kIsBf16<T> ? 0x3F803F80u : 0x3C003C00u);\n"
     "      fence_proxy_async_shared();\n"
     "    }\n"
     "  }\n"
     "  __syncthreads();\n"),
    ("      if (n_blocks > 0) {\n        float s_acc[BN / 2];\n",
     "      if (n_blocks > 0) {\n"
     "        // Row sums on the tensor cores (mma_rowsum): this thread's row r sum is l_acc[2 r] (all 8 columns\n"
     "        // of a row hold it); rescaled with O.\n"
     "        float l_acc[4] = {0.f, 0.f, 0.f, 0.f};\n"
     "        // No swizzle: start >> 4, LBO (the next 8 keys) and SBO 128 bytes (all inside the ones).\n"
     "        const uint64_t ones_desc = static_cast<uint64_t>((ones & 0x3FFFF) >> 4) | (static_cast<uint64_t>(128 >> 4) << 16) |\n"
     "                                   (static_cast<uint64_t>(128 >> 4) << 32);\n"
     "        float s_acc[BN / 2];\n"),
    ("            mma_pv<T, Dp>(o_acc, p_frag[kk], db);\n          }\n          wgmma_commit();\n",
     "            mma_pv<T, Dp>(o_acc, p_frag[kk], db);\n          }\n"
     "#pragma unroll\n"
     "          for (int kk = 0; kk < BN / 16; ++kk) mma_rowsum<T>(l_acc, p_frag[kk], ones_desc);\n"
     "          wgmma_commit();\n"),
    ("template <int R, int C>\n__device__ __forceinline__ void fence_frag(",
     "// The same without row sums on the CUDA cores (mma_rowsum): the id is computed from every probability,\n"
     "// xor-ed (LOP3 takes three at a time: half the instructions of the sum's FADDs). A subset is not enough:\n"
     "// ptxas then sinks the other exponentials below the barrier, after this warpgroup's P V wait.\n"
     "template <int N>\n"
     "__device__ __forceinline__ uint32_t after_exps_barrier_id(const float (&p)[N], uint32_t id) {\n"
     "  uint32_t x = 0;\n"
     "#pragma unroll\n"
     "  for (int i = 0; i < N; ++i) x ^= __float_as_uint(p[i]);\n"
     "  uint32_t r;\n"
     "  asm volatile(\"max.u32 %0, %1, %2;\\nmin.u32 %0, %0, %2;\\n\" : \"=r\"(r) : \"r\"(x), \"r\"(id));\n"
     "  return r;\n"
     "}\n"
     "template <int R, int C>\n__device__ __forceinline__ void fence_frag("),
    # the steady loop: fences, barrier, rescale
    ("          mbar_wait(full_v(prev), prev_parity);\n          fence_regs(o_acc);\n",
     "          mbar_wait(full_v(prev), prev_parity);\n          fence_regs(o_acc);\n          fence_regs(l_acc);\n"),
    ("          named_sync(after_softmax_barrier_id(row_sum, 1 + cw), 128);\n          wgmma_wait<0>();\n          fence_regs(o_acc);\n",
     "          named_sync(after_exps_barrier_id(s_acc, 1 + cw), 128);\n          wgmma_wait<0>();\n          fence_regs(o_acc);\n          fence_regs(l_acc);\n"),
    ("          if (rescaled) rescale_o<Dp>(o_acc, alpha);\n          to_p();\n",
     "          if (rescaled) {\n"
     "            rescale_o<Dp>(o_acc, alpha);\n"
     "            l_acc[0] *= alpha[0];  // columns 1 and 3 are never read\n"
     "            l_acc[2] *= alpha[1];\n"
     "          }\n"
     "          to_p();\n"),
    ("        mbar_wait(full_v(s), parity);\n        fence_regs(o_acc);\n        wgmma_fence();\n",
     "        mbar_wait(full_v(s), parity);\n        fence_regs(o_acc);\n        fence_regs(l_acc);\n        wgmma_fence();\n"),
    ("        wgmma_wait<0>();\n        fence_regs(o_acc);\n        fence_frag(p_frag);\n        release(empty_v(s));\n      }\n",
     "        wgmma_wait<0>();\n        fence_regs(o_acc);\n        fence_regs(l_acc);\n        fence_frag(p_frag);\n        release(empty_v(s));\n"
     "        // The epilogue adds the quad's four partial sums; here every thread holds its rows' whole sums\n"
     "        // (x 0.25 and four adds are exact).\n"
     "        row_sum[0] = 0.25f * l_acc[0];\n"
     "        row_sum[1] = 0.25f * l_acc[2];\n"
     "      }\n"),
]

# name -> (base file in best/, header lines, [(old, new), ...])
VARIANTS: dict[str, tuple[str, str, list[tuple[str, str]]]] = {
    "next_stageu": (
        "kernel.cu",
        "// next_stageu: v19 + the K/V stage index broadcast from lane 0 for the wgmma descriptors (uniform datapath).\n",
        STAGEU_EDITS),
    "next_tcsum": (
        "kernel.cu",
        "// next_tcsum: next_stageu + the d96/d128 row sums on the tensor cores (P times a block of ones).\n",
        STAGEU_EDITS + TCSUM_EDITS),
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
