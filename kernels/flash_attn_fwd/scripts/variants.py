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

# Session 7's candidates (next_deadu, next_wait2, next_wait2w, next_w3, next_v6try) were edits of v16; next_v6try
# became v17 (best/kernel.cu). They are rebuilt byte for byte from commit cdb870c (its best/kernel.cu is v16):
#   git worktree add /tmp/ks-s7 cdb870c && python3 /tmp/ks-s7/kernels/flash_attn_fwd/scripts/variants.py NAME

# Session 7's count of v17's steady d128 loop (160-key block, no mask): 657 instructions a warp, of which 82
# MUFU.EX2. MUFU runs 16 lanes a clock per SM, so the two consumer warps of a sub-partition keep it busy
# ~1280 of a block's ~3600 cycles, and each warp's softmax takes >= 640 cycles of it. FlashAttention-4
# computes part of the exponentials on the FMA pipe instead. Compile-checked only; not yet measured.
EXP2_OLD = (
    "template <typename T> __device__ __forceinline__ uint32_t pack2(float lo, float hi) {\n")
EXP2_NEW = (
    "// 2^x on the FMA pipe, for x <= 0 (x < -126, -inf included, gives 0): x = n + f with n = round(x) by the\n"
    "// 1.5 * 2^23 trick, 2^f on [-0.5, 0.5] by a degree-3 polynomial (max relative error 7.5e-5, below the\n"
    "// bf16/fp16 rounding of P), n added to the exponent bits.\n"
    "__device__ __forceinline__ float exp2_fma(float x) {\n"
    "  const float t = x + 12582912.f;        // 1.5 * 2^23: the low mantissa bits hold round(x)\n"
    "  const float f = x - (t - 12582912.f);  // exact\n"
    "  const float p = fmaf(fmaf(fmaf(0.055171531f, f, 0.24261111f), f, 0.69326103f), f, 0.99992806f);\n"
    "  const float y = __int_as_float(__float_as_int(p) + (__float_as_int(t) << 23));\n"
    "  return x < -126.f ? 0.f : y;\n"
    "}\n"
    "\n"
    "template <typename T> __device__ __forceinline__ uint32_t pack2(float lo, float hi) {\n")
EXP2_USE_OLD = (
    "      const float p0 = fast_exp2(s_acc[4 * j + 2 * r] * scale_log2 - base_scaled);\n"
    "      const float p1 = fast_exp2(s_acc[4 * j + 2 * r + 1] * scale_log2 - base_scaled);\n")
EXP2_USE_NEW = (
    "      // One key pair in four on the FMA pipe (j is a compile-time index: no branch).\n"
    "      const float x0 = s_acc[4 * j + 2 * r] * scale_log2 - base_scaled;\n"
    "      const float x1 = s_acc[4 * j + 2 * r + 1] * scale_log2 - base_scaled;\n"
    "      const float p0 = j % 4 == 3 ? exp2_fma(x0) : fast_exp2(x0);\n"
    "      const float p1 = j % 4 == 3 ? exp2_fma(x1) : fast_exp2(x1);\n")

# The row max and row sum of a block as pairwise trees instead of one chain of BN/8 dependent steps each.
TREE_MAX_OLD = (
    "    for (int j = 0; j < BN / 8; ++j) mx = fmaxf(mx, fmaxf(s_acc[4 * j + 2 * r], s_acc[4 * j + 2 * r + 1]));\n")
TREE_MAX_NEW = (
    "    for (int j = 0; j < BN / 8; ++j) part[j] = fmaxf(s_acc[4 * j + 2 * r], s_acc[4 * j + 2 * r + 1]);\n"
    "#pragma unroll\n"
    "    for (int w = 1; w < BN / 8; w *= 2)  // pairwise: log2(BN / 8) dependent steps, not BN / 8\n"
    "#pragma unroll\n"
    "      for (int i = 0; i + w < BN / 8; i += 2 * w) part[i] = fmaxf(part[i], part[i + w]);\n"
    "    mx = fmaxf(mx, part[0]);\n")
TREE_DECL_OLD = (
    "    float mx = row_max[r];\n")
TREE_DECL_NEW = (
    "    float mx = row_max[r];\n"
    "    float part[BN / 8];  // per key pair: max, then sum\n")
TREE_SUM_OLD = (
    "      sum += p0 + p1;\n"
    "    }\n")
TREE_SUM_NEW = (
    "      part[j] = p0 + p1;\n"
    "    }\n"
    "#pragma unroll\n"
    "    for (int w = 1; w < BN / 8; w *= 2)\n"
    "#pragma unroll\n"
    "      for (int i = 0; i + w < BN / 8; i += 2 * w) part[i] += part[i + w];\n"
    "    sum = part[0];\n")
TREE_EDITS = [(TREE_DECL_OLD, TREE_DECL_NEW), (TREE_MAX_OLD, TREE_MAX_NEW), (TREE_SUM_OLD, TREE_SUM_NEW)]

# The wait profile's tile start (d128-h16-16-s512, per warpgroup and tile): the tile index 169 cycles, Q 188,
# the first K 120, one after another. Testing Q and the first K together with the index makes it one round
# trip. A stage or Q buffer cannot be refilled before this warpgroup releases it, so a test that found it
# full still holds at the wait it replaces. Only the FA3 loop (d96/d128) uses the first-K test.
TILESTART_EDITS = [
    ("    mbar_wait(tile_full(slot), slot_phase);\n",
     "    // Q and the first K block of the next tile with keys are tested together with its index (one\n"
     "    // round trip, not three); a test that finds them full holds until this warpgroup releases them.\n"
     "    const bool q_ready = mbar_try(q_full(q_buf), q_phase);\n"
     "    const bool k0_ready = Dp == 128 && mbar_try(full_k(stage), phase);\n"
     "    mbar_wait(tile_full(slot), slot_phase);\n"),
    ("      mbar_wait(q_full(qb), q_phase);\n",
     "      if (!q_ready) mbar_wait(q_full(qb), q_phase);\n"),
    ("        if (++stage == kStages) { stage = 0; phase ^= 1; }\n"
     "        mbar_wait(full_k(s), parity);\n"
     "        wgmma_fence();\n",
     "        if (++stage == kStages) { stage = 0; phase ^= 1; }\n"
     "        if (!k0_ready) mbar_wait(full_k(s), parity);\n"
     "        wgmma_fence();\n"),
]

# Session 8: call 1 measured exp2fma at -8..-13% (more instructions on an issue-bound consumer, not relief
# of MUFU), so the next candidate removes instructions instead. FlashAttention-4's conditional rescale: a
# row keeps its running max until a block raises it by more than 8 (log2 units), so P stays <= 2^8 (exact
# enough in bf16/fp16, whose error is relative) and O and the row sum stay in fp32 range; a warp rescales O
# only when one of its rows moved that far (a warp-uniform branch: __any_sync). On random inputs that is
# the first block and almost never after: per d128 block 64 FMUL of O and 2 MUFU of alpha go, ~8 are added.
LAZY_SOFTMAX_OLD = (
    "    mx = fmaxf(mx, __shfl_xor_sync(0xffffffff, mx, 2));\n"
    "    // A row that has seen only masked keys keeps max -inf: subtract 0 so exp2 gives 0.\n"
    "    const float base_scaled = mx == -INFINITY ? 0.f : mx * scale_log2;\n"
    "    alpha[r] = fast_exp2(row_max[r] * scale_log2 - base_scaled);\n"
    "    row_max[r] = mx;\n"
    "    float sum = 0.f;\n")
LAZY_SOFTMAX_NEW = (
    "    mx = fmaxf(mx, __shfl_xor_sync(0xffffffff, mx, 2));\n"
    "    block_max[r] = mx;\n"
    "  }\n"
    "  // -inf - -inf is NaN: a row that saw only masked keys so far and here does not ask for a rescale.\n"
    "  const bool grew = (block_max[0] - row_max[0]) * scale_log2 > kLazyRescaleLog2 ||\n"
    "                    (block_max[1] - row_max[1]) * scale_log2 > kLazyRescaleLog2;\n"
    "  const bool rescale = __any_sync(0xffffffff, grew);\n"
    "#pragma unroll\n"
    "  for (int r = 0; r < 2; ++r) {\n"
    "    const float mx = rescale ? block_max[r] : row_max[r];\n"
    "    // A row that has seen only masked keys keeps max -inf: subtract 0 so exp2 gives 0.\n"
    "    const float base_scaled = mx == -INFINITY ? 0.f : mx * scale_log2;\n"
    "    alpha[r] = rescale ? fast_exp2(row_max[r] * scale_log2 - base_scaled) : 1.f;\n"
    "    row_max[r] = mx;\n"
    "    float sum = 0.f;\n")
LAZY_EDITS = [
    ("// Online softmax of one key block: new running max, rescale factor alpha, probabilities in place.\n"
     "template <int BN>\n"
     "__device__ __forceinline__ void online_softmax(float (&s_acc)[BN / 2], float (&row_max)[2], float (&row_sum)[2],\n"
     "                                               float (&alpha)[2], float scale_log2) {\n"
     "#pragma unroll\n"
     "  for (int r = 0; r < 2; ++r) {\n",
     "// Online softmax of one key block: probabilities in place, and the rescale factor alpha of the rows\n"
     "// whose running max moved. A warp moves its rows' maxima only when one of them grew by more than\n"
     "// 2^kLazyRescaleLog2 (FlashAttention-4's conditional rescale): P then stays <= 2^8 and O needs no\n"
     "// rescale for most blocks. Returns whether this warp rescaled (alpha is 1 otherwise).\n"
     "constexpr float kLazyRescaleLog2 = 8.f;\n"
     "template <int BN>\n"
     "__device__ __forceinline__ bool online_softmax(float (&s_acc)[BN / 2], float (&row_max)[2], float (&row_sum)[2],\n"
     "                                               float (&alpha)[2], float scale_log2) {\n"
     "  float block_max[2];\n"
     "#pragma unroll\n"
     "  for (int r = 0; r < 2; ++r) {\n"),
    (LAZY_SOFTMAX_OLD, LAZY_SOFTMAX_NEW),
    ("    row_sum[r] = row_sum[r] * alpha[r] + sum;\n"
     "  }\n"
     "}\n",
     "    row_sum[r] = rescale ? row_sum[r] * alpha[r] + sum : row_sum[r] + sum;\n"
     "  }\n"
     "  return rescale;\n"
     "}\n"),
    ("        auto softmax = [&] { online_softmax<BN>(s_acc, row_max, row_sum, alpha, scale_log2); };\n",
     "        bool rescaled = true;\n"
     "        auto softmax = [&] { rescaled = online_softmax<BN>(s_acc, row_max, row_sum, alpha, scale_log2); };\n"),
    ("          rescale_o<Dp>(o_acc, alpha);\n"
     "          to_p();\n",
     "          if (rescaled) rescale_o<Dp>(o_acc, alpha);\n"
     "          to_p();\n"),
    ("        online_softmax<BN>(s_acc, row_max, row_sum, alpha, scale_log2);\n"
     "        rescale_o<Dp>(o_acc, alpha);\n",
     "        if (online_softmax<BN>(s_acc, row_max, row_sum, alpha, scale_log2)) rescale_o<Dp>(o_acc, alpha);\n"),
]

# name -> (base file in best/, header lines, [(old, new), ...])
VARIANTS: dict[str, tuple[str, str, list[tuple[str, str]]]] = {
    "next_n160tn": (
        "kernel.cu",
        "// next_n160tn: v17 + its 160-key blocks for d96/d128 without a mask at 1024 < s_k <= 2048 too, with the\n"
        "// TMA epilogue.\n",
        [(N160_OLD, N160_NEW)]),
    "next_exp2fma": (
        "kernel.cu",
        "// next_exp2fma: v17 + one exponential in four of the softmax on the FMA pipe (a polynomial), not MUFU.\n",
        [(EXP2_OLD, EXP2_NEW), (EXP2_USE_OLD, EXP2_USE_NEW)]),
    "next_tree": (
        "kernel.cu",
        "// next_tree: v17 + the softmax's row max and row sum of a block as pairwise trees.\n",
        TREE_EDITS),
    "next_tilestart": (
        "kernel.cu",
        "// next_tilestart: v17 + a tile's index, Q and first K tested in one round trip.\n",
        TILESTART_EDITS),
    "next_lazyrs": (
        "kernel.cu",
        "// next_lazyrs: v17 + FlashAttention-4's conditional rescale (a row's max moves only when it grew by > 2^8).\n",
        LAZY_EDITS),
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
