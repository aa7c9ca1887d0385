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
#   the others lost: JOURNAL.md, "Session 9") from 697c249:
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
# - session 15's next_r192diag (an edit of v30, rebased onto v32; level in sessions 16 and 17), session 18's
#   next_nocausal (d64/d256 level), next_d256ostage, next_qk1early (lost: short128 kernel time 0.991), its control
#   next_qk1ctl and session 19's next_unmasked (both edits of v32, measured in session 19; next_unmasked, which
#   holds next_d256ostage and next_qk1ctl, became v33) from a608729.
# - session 19's next_loopmask, next_loopmask2 (key loops in a masked and a mask-free copy), next_l2pf (L2 prefetch
#   of K/V) and next_v34all, and session 20's next_v34a-c (compositions), all edits of v33, from 8c15831. Measured in
#   session 20: next_loopmask2 lost (kernel time d256 0.965, d64 0.976 / 0.969, short128 0.998), next_l2pf lost
#   (short128 0.879; q128-k512 itself 18% slower).
# - session 20's next_d256tma, next_d256tmac, probe_d256smem, next_l2pf1 and session 21's next_prodloop1, all edits
#   of v33, from 073dc52. Measured in session 23: next_d256tmac's full grid 1.1575 (became v34), probe_d256smem
#   level (d256 long unmasked kernel time 1.005), next_l2pf1's gate-off launches 0.970 again (2 rounds),
#   next_prodloop1 level (short128 0.999, d64c 1.002, d256c 1.006).
# - session 23's next_nomemset, next_kvthreads, next_kvthreads96 and next_v35, all edits of v34, from f935112.
#   Measured in sessions 23-24: next_nomemset the median short launch 0.88 us faster; next_kvthreads d96 128-row
#   +4..+5%, 192-row launches -1..-5%, d256 long unmasked +1.2%, d64 -0.5%; next_kvthreads96 d96 +2.2% (128-row
#   +6..+8%); next_v35 (both) full grid 1.1598, became v35.


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

ROWS192_EDITS = [
    ("                              : waves192 * 1000 <= waves128 * 1035;\n",
     "                              : true;  // probe_rows192: every unmasked launch on 192-row tiles\n"),
]


# next_vtmore (session 24, an edit of v35; layer-thread-roles): v35's second producer thread for V also in two more
# families' functions, each measured on its own in session 24's call 3 or session 23's call 3 with next_kvthreads
# (the V thread in every function): (1) unmasked d256 at s_k > 2048 (the register-epilogue functions, used by no other
# launch since v34): kernel time +1.2% on all 12 launches (11 of 12 above 1.005; session 24 call 3, 2 rounds);
# (2) unmasked d128 on 128-row tiles (functions of their own since v33; 128- and 160-key blocks): +0.4% on average
# over session 23's short ones (s512 +1.3%, q256-k1024 +2.7%, the rest level), the long ones unmeasured. Left out:
# causal d256 (one function for every s_k: short causal -1.2%, long +0.6%), causal d128 (s1024-s2048 -2..-3%), d64
# (-0.5%) and the 192-row tiles (-1..-5%). Predicted: d256 long unmasked +1..+1.5%, unmasked d128 128-row level to +1%;
# the grid +0.1..+0.2%; every other function SASS SAME as v35's.
def _vthread_edits(comment: str, more: str) -> list[tuple]:
    """v35's V thread (kVThread: the d96 128-row functions) also where `more` holds, a condition on the function's
    Dp, Steps, Consumers, TmaEpi and HalfDiag."""
    return [
        ("template <int Dp, int Steps, int Consumers> constexpr bool kVThread = Dp == 128 && Steps == 6 && Consumers == 2;\n",
         f"// {comment}\n"
         "template <int Dp, int Steps, int Consumers, bool TmaEpi, bool HalfDiag>\n"
         f"constexpr bool kVThread = (Dp == 128 && Steps == 6 && Consumers == 2) || {more};\n"),
        ("kVThread<Dp, kQkSteps, Cfg::kConsumers>", "kVThread<Dp, kQkSteps, Cfg::kConsumers, kTmaEpi, kHalfDiag>", 3),
    ]


VTMORE_EDITS = _vthread_edits(
    "next_vtmore: and unmasked d256 on the register epilogue, and unmasked d128 on 128-row tiles",
    "(Dp == 256 && !TmaEpi && !HalfDiag) ||\n                          (Dp == 128 && Steps == 8 && Consumers == 2 && !HalfDiag)")


# next_vt256u / next_vt128u (session 26): next_vtmore's two halves, each alone, for step 1 of session 24's plan (split
# next_vtmore if one family gains and the other loses in its A/B).
VT256U_EDITS = _vthread_edits("next_vt256u: and unmasked d256 on the register epilogue",
                              "(Dp == 256 && !TmaEpi && !HalfDiag)")
VT128U_EDITS = _vthread_edits("next_vt128u: and unmasked d128 on 128-row tiles",
                              "(Dp == 128 && Steps == 8 && Consumers == 2 && !HalfDiag)")


# next_vt192l (session 24, an edit of v35; measure-sass): is it the V thread that costs the 192-row launches 1-5%, or
# the compiler? `sass.py keyloop` of v34 against next_kvthreads (session 24) found the consumers' key loop reordered or
# changed by an instruction or two in every 192-row function that session 23's call 3 ran (the TMA-epilogue ones,
# s_k <= 2048: d128 "IMAD.MOV 8->7, IMAD.U32 0->1, LOP3 3->2, ULOP3 7->8", d96 "UMOV 3->5"), but SAME in the unmasked
# 192-row register-epilogue ones (s_k > 2048), which no call ran with the thread. Those get the V thread here (d96 and
# d128), nothing else. Their loop is v6's (K of block i + 1 is needed only after P_i V_i), so the in-order argument
# predicts nothing to gain; d256, also on v6's loop, gained 1.2% anyway (session 24 call 3). Predicted: the 192-row
# long unmasked launches level to +1% if the loss was the compiler's; -1..-5% if the thread itself costs 192-row
# tiles (their producer has 32 registers and 3 consumer warpgroups to feed). Its key loops must stay SAME as v35's.
VT192L_EDITS = _vthread_edits(
    "next_vt192l: and the unmasked 192-row d96/d128 functions on the register epilogue (s_k > 2048)",
    "(Dp == 128 && Consumers == 3 && !TmaEpi && !HalfDiag)")


# next_tma4k / next_tmac (session 28, edits of v35; measure-losing-scenarios): v35's d128 speedup dips at s_k 4096
# against both neighbours (causal h16-16 / h32-8 / h64-8 / h32-1 1.079 / 1.073 / 1.103 / 1.067 between ~1.16 at s2048
# and ~1.18 at s8192; unmasked 1.078-1.112 between ~1.15 and ~1.12): our throughput stays flat from s2048 to s4096
# (591 -> 605 TFLOP/s causal h16-16) while cuDNN's rises (512 -> 561). s_k 4096 is the first length past
# kTmaEpilogueMaxSk: the register epilogue and, on 128-row tiles, 160-key blocks. That threshold dates from v11 (long
# d128 lost 6-10% on the TMA epilogue, measured at s >= 8k); d256's causal launches gained 7-8% at s4096 when they
# moved to it (v34). next_tma4k: d96/d128 on the TMA epilogue up to s_k 4096, both masks (causal s4096 on s2048's
# 128-key functions, unmasked s4096 on the 192-row TMA functions). next_tmac: the causal d96/d128 launches on
# 128-row tiles on the TMA epilogue at every s_k (as causal d256 since v34), the unmasked ones as v35. Both use
# existing functions only. Predicted: causal s4096 +2..+6% kernel time, unmasked s4096 -1..+2%, the causal prefill
# launches above s_k 4096 (q2048-k8192, q4096-k16384) level..+3%.
TMA4K_EDITS = [
    ("  if (d <= 128 && !tma && rows192) {\n",
     "  // next_tma4k: d96/d128 on the TMA epilogue up to s_k 4096\n"
     "  const bool tma4k = s_k <= 4096;\n"
     "  if (d <= 128 && !tma4k && rows192) {\n"),
    ("  if (d <= 128 && !tma) {\n", "  if (d <= 128 && !tma4k) {\n"),
]
TMAC_EDITS = [
    ("  if (d <= 128 && !tma) {\n",
     "  // next_tmac: causal 128-row d96/d128 launches on the TMA epilogue at every s_k\n"
     "  if (d <= 128 && !tma && !causal) {\n"),
]


# next_tmaall (session 28, an edit of v35; measure-losing-scenarios): session 28's call 1 found next_tma4k's s4096
# launches +2..+8% kernel time on the TMA epilogue; the rule that kept d96/d128 off it above s_k 2048 came from v11
# (long d128 -6..-10%, measured at s >= 8k on a kernel without the staged-O and slot changes of v13-v35). Here every
# d96/d128 launch takes it: the 192-row tiles at s_k > 2048 (the causal ones on new instantiations, the TMA
# epilogue's 192-row code as d64's causal launches use it) and the 128-row ones on 128-key blocks (the 160-key
# register-epilogue functions go). Predicted: causal long +0..+3% (d256's causal launches: s8192 +4%, s16384 level),
# unmasked long -3..+1% (d256's: -1.5..-4%), s4096 as next_tma4k.
_LONG_DISPATCH = """  if (d <= 128 && !tma && rows192) {
    if (d <= 96)
      return causal ? launch<T, 128, 192, 6, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st)
                    : launch<T, 128, 192, 6, false, 128, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);
    return causal ? launch<T, 128, 192, 8, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st)
                  : launch<T, 128, 192, 8, false, 128, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);
  }
  if (d <= 128 && !tma) {
    if (d <= 96)
      return causal ? launch<T, 128, 128, 6, false, 160>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st)
                    : launch<T, 128, 128, 6, false, 160, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);
    return causal ? launch<T, 128, 128, 8, false, 160>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st)
                  : launch<T, 128, 128, 8, false, 160, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);
  }
"""
TMAALL_EDITS = [
    (_LONG_DISPATCH,
     "  // next_tmaall: every d96/d128 launch on the TMA epilogue; 128-row tiles on 128-key blocks\n" +
     _LONG_DISPATCH.split("  if (d <= 128 && !tma) {")[0]
     .replace("192, 6, false>(", "192, 6, true>(").replace("192, 8, false>(", "192, 8, true>(")
     .replace(", false, 128, false>(", ", true, 128, false>(")),
]


# next_tileahead (session 28, an edit of v35; strategy-where-time-is): the wait profile of the prefill shapes (session
# 28 call 1, H100) has the consumers waiting for the next tile's slot 3616 cycles a tile at q128-k512 (15.8% of their
# cycles; 1646, 5.6%, at q256-k1024; 481, 3.1%, at s512). The producer publishes tile t + 1 after its atomicAdd on
# the tile counter, which it issues only once t's last K/V loads are out; where HBM streams at ~80% of its peak the
# atomic's round trip through L2 is long. Here the producer takes t + 1's index right after publishing t, so the
# round trip runs under t's loads (one more producer register; a CTA holds one tile in reserve, so a causal launch's
# last wave may end a little later). Predicted: q128-k512 +3..+10%, q256-k1024 +1..+4%, s512 +0..+1.5%, long
# launches level.
TILEAHEAD_EDITS = [
    ("        ring = (ring & 12u) | ((ring + 1) & 3u);\n        if (last) break;\n",
     "        ring = (ring & 12u) | ((ring + 1) & 3u);\n        if (last) break;\n"
     "        // next_tileahead: the next tile's index now, its round trip under this tile's loads\n"
     "        uint32_t next;\n"
     "        {\n"
     "          uint32_t grid;\n"
     "          asm volatile(\"mov.u32 %0, %%nctaid.x;\\n\" : \"=r\"(grid));\n"
     "          next = atomicAdd(&g_tile_counter, 1u) + grid;\n"
     "        }\n"),
    ("        // gridDim.x read here: ptxas kept it in a register across the tile, and spilled it\n"
     "        uint32_t grid;\n"
     "        asm volatile(\"mov.u32 %0, %%nctaid.x;\\n\" : \"=r\"(grid));\n"
     "        tile = atomicAdd(&g_tile_counter, 1u) + grid;\n",
     "        tile = next;\n"),
]


# name -> (base file in best/, header lines, [(old, new) or (old, new, count), ...])
VARIANTS: dict[str, tuple[str, str, list[tuple]]] = {
    "next_vtmore": ("kernel.cu", "// next_vtmore: v35 with the V thread also in unmasked long d256 and unmasked 128-row d128.\n",
                    VTMORE_EDITS),
    "next_vt192l": ("kernel.cu", "// next_vt192l: v35 with the V thread also in the unmasked long 192-row d96/d128 functions.\n",
                    VT192L_EDITS),
    "next_vt256u": ("kernel.cu", "// next_vt256u: v35 with the V thread also in unmasked long d256.\n", VT256U_EDITS),
    "next_vt128u": ("kernel.cu", "// next_vt128u: v35 with the V thread also in unmasked 128-row d128.\n", VT128U_EDITS),
    "next_tma4k": ("kernel.cu", "// next_tma4k: v35 with d96/d128 on the TMA epilogue up to s_k 4096.\n", TMA4K_EDITS),
    "next_tmac": ("kernel.cu", "// next_tmac: v35 with the causal 128-row d96/d128 launches on the TMA epilogue at every s_k.\n",
                  TMAC_EDITS),
    "next_tmaall": ("kernel.cu", "// next_tmaall: v35 with every d96/d128 launch on the TMA epilogue.\n", TMAALL_EDITS),
    "next_tileahead": ("kernel.cu", "// next_tileahead: v35 with the producer taking the next tile's index one tile ahead.\n",
                       TILEAHEAD_EDITS),
    "probe_rows192": ("kernel.cu", "// probe_rows192: best/kernel.cu with every unmasked d96/d128 launch on 192-row tiles.\n",
                      ROWS192_EDITS),
    "probe_samekv": ("kernel.cu", "// probe_samekv (wrong output by design): best/kernel.cu loading every key block from block 0.\n",
                     SAMEKV_EDITS),
    "probe_noload": ("kernel.cu", "// probe_noload (wrong output by design): best/kernel.cu loading a tile's first kStages key blocks only.\n",
                     NOLOAD_EDITS),
}

# Kernel instantiations of a candidate whose count is not best/kernel.cu's (tests/flash/test_kernel_build.py checks it).
INSTANTIATIONS: dict[str, int] = {
    # next_tmaall: 16 register-epilogue d96/d128 functions go (192-row and 160-key, both masks, both types); 4 causal
    # 192-row TMA-epilogue ones come
    "next_tmaall": 30,
}


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
