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

# Measured candidates leave this file; each is rebuilt byte for byte from a commit whose best/kernel.cu was its base:
# - session 7's (next_deadu, next_wait2, next_wait2w, next_w3, next_v6try, edits of v16; next_v6try became v17)
#   from cdb870c;
# - session 8's (next_exp2fma, next_tree, next_tilestart, next_lazyrs, edits of v17; next_lazyrs became v18,
#   the others lost: NOTES.md, "Session 8") from 1cb84c9:
#   git worktree add /tmp/ks-s8 1cb84c9 && python3 /tmp/ks-s8/kernels/flash_attn_fwd/scripts/variants.py NAME

# Session 8: short tiles are issue-bound (v18's ~60 fewer instructions a block gave short d128 +3%, long
# shapes nothing). A masked (diagonal or tail) block spends per score an add, two compares and a select in
# mask_scores. With each of the thread's two rows' limit computed once, relative to its first column, the
# test per score is one compare against a compile-time constant and a select. At causal s = 512 with
# 128-key blocks 40% of the blocks are diagonal ones. Compile-checked only; not yet measured.
CHEAPMASK_EDITS = [
    ("  if (need_mask) {\n"
     "#pragma unroll\n"
     "    for (int j = 0; j < BN / 8; ++j) {\n"
     "#pragma unroll\n"
     "      for (int e = 0; e < 4; ++e) {\n"
     "        const int col = col0 + 8 * j + 2 * t + (e & 1);\n"
     "        const int row = row0 + (e >> 1) * 8;\n"
     "        const bool ok = col < s_k && (!causal || col <= row + diag);\n"
     "        if (!ok) s_acc[4 * j + e] = -INFINITY;\n"
     "      }\n"
     "    }\n"
     "  }\n",
     "  if (need_mask) {\n"
     "    // Per row: how many columns from this thread's first one (col0 + 2t) it may see; the test per\n"
     "    // score is then one compare against the constant 8j + (e & 1).\n"
     "    int seen[2];\n"
     "#pragma unroll\n"
     "    for (int r = 0; r < 2; ++r)\n"
     "      seen[r] = (causal ? min(s_k, row0 + 8 * r + diag + 1) : s_k) - (col0 + 2 * t);\n"
     "#pragma unroll\n"
     "    for (int j = 0; j < BN / 8; ++j) {\n"
     "#pragma unroll\n"
     "      for (int e = 0; e < 4; ++e)\n"
     "        if (8 * j + (e & 1) >= seen[e >> 1]) s_acc[4 * j + e] = -INFINITY;\n"
     "    }\n"
     "  }\n"),
]

# Session 8: the SASS spends ~8 instructions on each wgmma's shared-memory descriptors (the address masked,
# shifted and or-ed with the strides for every k-step: LOP3, SHF, VIADD, LOP3, R2UR...), ~150 of a d128
# 160-key block's ~650. A descriptor of a buffer's start plus a constant byte offset is one 32-bit add on its
# low word (the start address >> 4 sits in its low 14 bits; shared memory is < 256 KB, so the add cannot carry
# into the stride fields), as CUTLASS's descriptor iterator does. Short tiles are issue-bound (v18).
DESCINC_EDITS = [
    # CUTLASS's trick: the warpgroup index broadcast from lane 0, so the compiler can prove it warp-uniform and
    # keep what derives from it (this warpgroup's Q slice, its descriptors) on the uniform datapath: fewer
    # R2UR moves before each wgmma.
    ("  const int warpgroup = threadIdx.x / 128;\n",
     "  const int warpgroup = __shfl_sync(0xffffffff, threadIdx.x / 128, 0);  // warp-uniform, and provably so\n"),
    ("__device__ __forceinline__ void wgmma_fence() {\n",
     "// The descriptor of `base`'s buffer at a byte offset: one add on the low word, which holds the start\n"
     "// address >> 4 in its low 14 bits (shared memory is < 256 KB: no carry into the stride fields).\n"
     "__device__ __forceinline__ uint64_t smem_desc_at(uint64_t base, uint32_t byte_off) {\n"
     "  return (base & 0xFFFFFFFF00000000ull) | static_cast<uint32_t>(static_cast<uint32_t>(base) + (byte_off >> 4));\n"
     "}\n"
     "\n"
     "__device__ __forceinline__ void wgmma_fence() {\n"),
    ("        auto issue_qk = [&](int st) {\n"
     "#pragma unroll\n"
     "          for (int kk = 0; kk < kQkSteps; ++kk) {\n"
     "            const uint32_t off = (kk % 4) * 32;  // 16 columns = 32 bytes inside a 128-byte row\n"
     "            const uint64_t da = smem_desc(q_half + (kk / 4) * Cfg::kBlockM * 128 + off, 16, 1024);\n"
     "            const uint64_t db = smem_desc(sK + st * kKVBytes + (kk / 4) * BN * 128 + off, 16, 1024);\n",
     "        const uint64_t q_desc = smem_desc(q_half, 16, 1024);\n"
     "        auto issue_qk = [&](int st) {\n"
     "          const uint64_t k_desc = smem_desc(sK + st * kKVBytes, 16, 1024);\n"
     "#pragma unroll\n"
     "          for (int kk = 0; kk < kQkSteps; ++kk) {\n"
     "            const uint32_t off = (kk % 4) * 32;  // 16 columns = 32 bytes inside a 128-byte row\n"
     "            const uint64_t da = smem_desc_at(q_desc, (kk / 4) * Cfg::kBlockM * 128 + off);\n"
     "            const uint64_t db = smem_desc_at(k_desc, (kk / 4) * BN * 128 + off);\n"),
    ("        auto issue_pv = [&](int st) {\n"
     "#pragma unroll\n"
     "          for (int kk = 0; kk < BN / 16; ++kk) {\n"
     "            const uint64_t db = smem_desc(sV + st * kKVBytes + kk * 16 * 128, BN * 128, 1024);\n",
     "        auto issue_pv = [&](int st) {\n"
     "          const uint64_t v_desc = smem_desc(sV + st * kKVBytes, BN * 128, 1024);\n"
     "#pragma unroll\n"
     "          for (int kk = 0; kk < BN / 16; ++kk) {\n"
     "            const uint64_t db = smem_desc_at(v_desc, kk * 16 * 128);\n"),
    ("        for (int kk = 0; kk < kQkSteps; ++kk) {\n"
     "          const uint32_t off = (kk % 4) * 32;  // 16 columns = 32 bytes inside a 128-byte row\n"
     "          const uint64_t da = smem_desc(q_half + (kk / 4) * Cfg::kBlockM * 128 + off, 16, 1024);\n"
     "          const uint64_t db = smem_desc(sK + s * kKVBytes + (kk / 4) * BN * 128 + off, 16, 1024);\n",
     "        for (int kk = 0; kk < kQkSteps; ++kk) {\n"
     "          const uint32_t off = (kk % 4) * 32;  // 16 columns = 32 bytes inside a 128-byte row\n"
     "          const uint64_t da = smem_desc_at(smem_desc(q_half, 16, 1024), (kk / 4) * Cfg::kBlockM * 128 + off);\n"
     "          const uint64_t db = smem_desc_at(smem_desc(sK + s * kKVBytes, 16, 1024), (kk / 4) * BN * 128 + off);\n"),
    ("        for (int kk = 0; kk < BN / 16; ++kk) {\n"
     "          const uint64_t db = smem_desc(sV + s * kKVBytes + kk * 16 * 128, BN * 128, 1024);\n",
     "        for (int kk = 0; kk < BN / 16; ++kk) {\n"
     "          const uint64_t db = smem_desc_at(smem_desc(sV + s * kKVBytes, BN * 128, 1024), kk * 16 * 128);\n"),
]

# name -> (base file in best/, header lines, [(old, new), ...])
VARIANTS: dict[str, tuple[str, str, list[tuple[str, str]]]] = {
    "next_n160tn": (
        "kernel.cu",
        "// next_n160tn: v18 + its 160-key blocks for d96/d128 without a mask at 1024 < s_k <= 2048 too, with the\n"
        "// TMA epilogue.\n",
        [(N160_OLD, N160_NEW)]),
    "next_cheapmask": (
        "kernel.cu",
        "// next_cheapmask: v18 + the diagonal/tail mask tested against a per-row limit computed once.\n",
        CHEAPMASK_EDITS),
    "next_descinc": (
        "kernel.cu",
        "// next_descinc: v18 + each wgmma's descriptor as its buffer's plus a constant (one add); a provably uniform\n"
        "// warpgroup index.\n",
        DESCINC_EDITS),
    "next_maskdesc": (
        "kernel.cu",
        "// next_maskdesc: v18 + next_cheapmask's mask + next_descinc's descriptors.\n",
        CHEAPMASK_EDITS + DESCINC_EDITS),
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
