"""Candidate kernels written as small edits of a committed file, instead of committed near-copies.

A candidate that differs from `best/kernel.cu` (or another committed file) in a line or two is
made from it when it is needed: `python3 -m lab.flash_attn_fwd.scripts.variants [NAME ...]`
writes lab/flash_attn_fwd/gen/NAME.cu (git-ignored) for the named candidates, or for all of them. Every edit
must match its base exactly once; otherwise nothing is written and the exit code is 2, so a
change to the base cannot silently produce a different candidate. The output is the same bytes
for the same base, so a result's kernel_sha256 identifies it.

`variants.py --at COMMIT NAME [NAME ...]` writes gen/NAME-SHORTSHA.cu: the candidate as COMMIT's
variants.py rendered it from COMMIT's best/ files (the same bytes that were measured then), or, for
NAME `kernel`, COMMIT's best/kernel.cu itself. That is how a candidate that left this file, or an
earlier best for a same-call A/B, comes back; it needs git and this repository's history, so run it
here and name the file in the device tool's `carry` (gen/ is git-ignored and the device has no git).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
BEST = REPO / "kernels" / "flash_attn_fwd" / "best"
OUT = Path(__file__).resolve().parents[1] / "gen"
# Where this file was at a commit: here, or in the task folder before the notebook moved to lab/.
SCRIPT_PATHS = ("lab/flash_attn_fwd/scripts/variants.py", "kernels/flash_attn_fwd/scripts/variants.py")

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
# - session 24's next_vtmore, next_vt192l and session 26's next_vt256u, next_vt128u (the V thread in more functions),
#   and session 28's next_tma4k, next_tmac, next_tmaall (the TMA epilogue past s_k 2048 for d96/d128) and
#   next_tileahead (the next tile's index one tile ahead), all edits of v35, from aa81a6a. Measured on H100s in
#   sessions 27-28: next_vtmore full grid +0.06% (d256 long unmasked +1.2%); next_vt192l 0.991; next_tma4k +3.2% and
#   next_tmac +2.3% on the tma4k launches; next_tileahead 0.989; next_tmaall full grid 1.15085 -> 1.16068 (kernel
#   time +0.8%), became v36. next_vt256u and next_vt128u never ran alone.
# - session 28's next_d64tma, next_d64tmac, next_tma160 and next_tma160u, all edits of v36, from 2b04069. Measured on
#   H100s in sessions 28-29: next_d64tma 0.998 / 1.004 on the d64long launches (unmasked h32-8 -1..-4%); next_d64tmac
#   d64long 1.007, the full grid twice level (kernel time 1.004, 1.000) with causal d64 ~+1%, became v37; next_tma160
#   0.974 and next_tma160u 0.997 on long128rows.
# - session 29's next_vtmore37, next_vt256u37, next_qrs128, next_qrs64, next_sec4, next_sec48 and session 30's
#   combinations (next_qrs37, next_qrsvt37, next_qrs128vt37, next_qrs64vt37), all edits of v37, from 0459de5. Measured
#   on an H100 in sessions 29 and 31: next_vtmore37 1.005 on its 31 launches (d256 +1.5%, d128 level); next_qrs128
#   0.995 on short + long128rows; next_qrs64 1.005 on d64_192; next_vt256u37 1.010 on d256l; next_sec4 1.005 on
#   sections (s512 causal +10%, s4096-s8192 causal -1..-2.5%); next_sec48 0.956; next_qrs64vt37's full grid +0.53%
#   and +0.40% in two calls, became v38.
# - session 31's next_secs1k, next_secwave, next_tail and their combinations (next_tailsecs1k, next_tailwave), all
#   edits of v38, from 16dc6dd. Measured on an H100 in session 32: next_secs1k 1.027 and 1.028 on causal_short
#   (s_k <= 512 +4.8%, +5.0%), became v39; next_secwave 1.017; next_tail 0.999 on tail (s_k > 4096 +0.8%, s_k <=
#   2048 -1.7%: next_tail8k keeps the first half). The combinations never ran.
# - session 32's next_tail8k, an edit of v39, from 49bf2dc. Measured on an H100 in session 33: tail_long 1.007 (2
#   rounds), causal_short 0.998, short 0.982 and 0.993 (1 round in each order).
# - session 33's next_tail8kc (next_tail8k's order in the causal functions only, the cut in `causal`), an edit of v39,
#   from 787e538. Measured on an H200 in session 34: full grid 1.1763 -> 1.1778 (kernel time 1.001), tail_long 1.008
#   and, 2 rounds, 1.007-1.009; became v40.
# - session 35's next_d256n80 (FA3's 128x80 tiles, two stages and loop order for unmasked d256 past s_k 2048),
#   next_d256n80all (every d256 launch so) and next_d256n80c (causal past 4096, unmasked past 1024), all edits of v40,
#   from fe68323. Measured on an H100 in session 35: next_d256n80 kernel time 1.093 / 1.098 on its 12 launches, full
#   grid 1.1646 -> 1.1707; next_d256n80all 0.994 of next_d256n80 on the grid (causal long +6.2%, short d256 -4..-16%);
#   next_d256n80c 1.019 of next_d256n80 on d256 (42), grid 1.1739 alone; became v41.
# - session 35's next_d256n64t (the short d256 launches on 128x64 tiles, two stages, the FA3 order, the TMA epilogue in
#   O's own 32 KB) and session 36's next_d256n64tc (the same for causal 1024 < s_k <= 4096 and unmasked 512 < s_k <=
#   1024 only), edits of v41, from 916057e. Measured on an H100 in session 36 against v41 on d256 (42), 2 rounds:
#   kernel time 1.005 and 1.010; next_d256n64tc's grid 1.1829 alone; it became v42.
# - session 37's next_d256skip (causal d256's fully masked 64-key diagonal block skipped per warpgroup: it waits for the
#   block's loads and releases the stage), next_d256skipall (with every causal s_k <= 1024 on 64 keys), next_d256skipc
#   (512 < s_k <= 1024 only), and next_stagger / next_staggerq (warpgroup 1 of the unmasked 128-row d96/d128 tiles
#   starts each tile after warpgroup 0's first softmax / first Q K^T, by a named barrier), all edits of v42, from
#   18a2da5. Measured on an H100 in session 37, 2 rounds: next_d256skip kernel time 1.010 on d256c4k (its 6 launches
#   +0.5..+3.1%), next_d256skipall 1.010 (s495-s512 -4.2..+1.0%), next_d256skipc 1.011, became v43; next_stagger
#   0.977 on short128 (its unmasked launches -3..-10%: the lag stalls the leading warpgroup on its loads),
#   next_staggerq 0.999.
# - session 37's next_fexp4 and next_fexp8 (1 in 4 / 1 in 8 of a tile's block-0 exponentials on the FMA pipe, in the
#   unmasked 128-row d96/d128 functions), edits of v43, from 91c2462. Measured on an H100 in session 37's call 6,
#   short128, 2 rounds: kernel time 1.000 and 1.002 (level).
# - session 37's next_kshift (the unmasked 128-row d96/d128 tiles' keys 64 lower: n_blocks + 1 blocks, the first and
#   last half wide, the first half block's softmax under the next Q K^T), an edit of v43, from 8aaab1b. Measured on an
#   H100 in session 38's call 1, short128, 2 rounds: kernel time 0.954 (unmasked s512 -16..-21%: a half block costs a
#   full one).
# - session 38's next_l2qo (Q's loads and O's TMA stores at L2 evict_first) and next_l2kv (also K's and V's loads at
#   evict_last), edits of v43, from 026fa7a. Measured on an H100 in session 38's call 2, short128 and long16, 2 rounds:
#   kernel time 0.998 / 0.998 and 0.997 / 0.997 (level).
# - session 38's next_notail (v40's causal tail off on the host) and next_tail8w (the tail over 8 waves), edits of v43,
#   from 21afcb9; next_tailnod256 (no tail for d256 only), from 17f3868. Measured on an H100 in session 38: tail_long,
#   1 round, kernel time 0.996 and 0.982 (d256-h8-8 s8175-s16384 +1.8..+3.2% and -11%); next_tailnod256 on the 9 d256
#   tail launches, 2 rounds, those four +0.8..+2.8% (call 4) and +1.7..+3.1% (call 5, d256l 1.001): ~+0.05% on the
#   grid, not promoted.
# - session 38's next_d256sec8 and next_d256sec2 (8 MB / 2 MB sections for the causal d256 s_k <= 1024 launches, v39's
#   4 MB elsewhere), edits of v43, from bb31a34. Measured on an H100 in session 38's calls 7-8, their 6 launches, 1
#   round in each order: h8-8 +1.7..+3.2% with 8 MB, h16-4 +1.2..+4.4% with 2 MB (kernel time); both 64 tiles a
#   section, whence next_sec64d256 / next_sec64t below.

# - session 38's next_sec64t and next_sec64d256 (the square short causal launches' sections ~64 tiles: every one / d256
#   only), their folds with next_tailnod256 (next_sec64t_nod256, next_sec64d_nod256), and session 39's next_ring3 (the
#   128-row d96/d128 tiles on 3 K/V stages beside one Q buffer, on the register epilogue) and next_ring3stag (with
#   session 37's stagger), edits of v43, from 46bb3c0. Measured on an H100 in session 39: causal_short, 2 rounds,
#   next_sec64t speedup 1.010 / kernel time 1.003 (d256's 6 +1.4..+2.7%, d64-h32-8 -1.4 / -2.0%), next_sec64d256
#   1.007 / 1.003 (its 6 +1.3..+3.0%); next_sec64d_nod256 full grid 1.1833 beside #115's kernel 1.1789 (kernel time
#   1.007), became v44; short128, 2 rounds: next_ring3 kernel time 0.890 (128-row launches -11..-21%), next_ring3stag
#   0.882 (the stagger -1..-3% more on the unmasked ones).
# - session 39's next_cta2 and next_cta2all (`limit-residency`: the short unmasked d128 launches, and d96's too, on
#   64x64 tiles of one consumer warpgroup, two CTAs an SM: 512 threads, 40 / 216 registers, 96 KB each, the carveout
#   hint 100), edits of v44, from 2c0d4a6. Measured on an H100 in session 40's call 1, short128, 2 rounds beside v44:
#   kernel time 0.944 and 0.932; every launch they touch -13..-20% (d96's s512/s1024 -27..-32%). The doubled K/V
#   copies and twice the 64-key blocks cost more than the second CTA's overlap of tile edges gives.

# - session 41's next_dead192 (v21's dead-warpgroup skip on the 192-row d96/d128 tiles), next_dead192w (+ the
#   unmasked wave rule in live 64-row units) and next_dead192c (+ the square causal launches past s_k 2048 on 192
#   rows), edits of v44, from b9ae2f4 (f23636ee, 8c735665, bafd20d7). Measured on an H100 in session 41:
#   next_dead192c's full grid 1.1870 beside #115's kernel 1.1853 (kernel time 1.003); beside v44 short128 1.009 (3
#   rounds), nomask_long 0.998, causal_long 1.002; became v45. next_dead192 and next_dead192w never ran alone.

# - session 42's next_split3 (the unmasked 192-row d96/d128 launches' last part-empty wave as 64-row pieces of one live
#   warpgroup), next_c192s (session 41's: the square short causal d96/d128 launches on 192-row causal functions) and
#   next_all3 (next_dead192r + next_c192s + next_split3), edits of v45, from 967a2e9 (e22a1278, 9ed25ea2, 9605a1a6).
#   Measured on an H200 in session 42 (NVIDIA H200): next_split3's full grid 1.2026 beside v45 at 1.1970 (call 2; its
#   20 launches kernel time 1.016, the other 162 1.003), became v46; next_all3's full grid 1.1943 beside v45 at 1.1981
#   (call 1, kernel time 0.996): the square short causal d128 launches -7..-10% and d96 s512-s1024 -5% on 192-row
#   causal functions (next_c192s's part), so next_c192s leaves too. next_c192s never ran alone.

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

# next_dead192r (after session 41's calls 1-2, H100), an edit of v45 (next_dead192c): v45's live-unit wave rule kept
# where it gained. Kernel time v44 / next_dead192c: s_k <= 512 +2..+7% and d96 s1024 +5..+6% (both calls), d128 s1024
# beside GQA -0.2..-3.4% (h32-8, h64-8, h32-1: 62-124 waves, little last wave to win back at 8 blocks a tile), h16-16
# s1024 level. So the live-unit rule at v30's 3.5% where s_k <= 512 or d <= 96, and only where it saves 1.5% of the
# wave-rows elsewhere (h16-16's 31.03 waves); v30's rule over whole tiles stays beside it. On the grid it moves the
# three GQA d128 s1024 launches back to 128 rows. (Its first form, `variants.py --at b9ae2f4 next_dead192r`, 324da284,
# an edit of v44, and its v45 form, `--at 967a2e9`, d7e62806, have the same device code in this rule; it has run only
# inside session 42's next_all3. Now an edit of v46, whose split pieces the h64-8 s1024 launch would leave.)
DEAD192R_EDITS = [
    ("                              : waves192 * 1000 <= waves128 * 1035;\n",
     "                              : waves192 * 1000 <= waves128 * (s_k <= 512 || d <= 96 ? 1035 : 985) ||\n"
     "                                    (bh * ((s_q + 191) / 192) + sms - 1) / sms * 192 * 1000 <= waves128 * 1035;\n"),
]

ROWS192_EDITS = [
    ("                              : waves192 * 1000 <= waves128 * 1035;\n",
     "                              : true;  // probe_rows192: every unmasked launch on 192-row tiles\n"),
]

VARIANTS: dict[str, tuple[str, str, list[tuple]]] = {
    "next_dead192r": ("kernel.cu", "// next_dead192r: best/kernel.cu (v46) with v45's live-unit wave rule only where it gained.\n",
                      DEAD192R_EDITS),
    "probe_rows192": ("kernel.cu", "// probe_rows192: best/kernel.cu with every unmasked d96/d128 launch on 192-row tiles.\n",
                      ROWS192_EDITS),
    "probe_samekv": ("kernel.cu", "// probe_samekv (wrong output by design): best/kernel.cu loading every key block from block 0.\n",
                     SAMEKV_EDITS),
    "probe_noload": ("kernel.cu", "// probe_noload (wrong output by design): best/kernel.cu loading a tile's first kStages key blocks only.\n",
                     NOLOAD_EDITS),
}

# Kernel instantiations of a candidate whose count is not best/kernel.cu's (tests/flash/test_kernel_build.py checks it).
INSTANTIATIONS: dict[str, int] = {}


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


def _script_at(repo: Path, commit: str) -> tuple[str, str]:
    """COMMIT's variants.py, wherever it was then: (its path, its text)."""
    for path in SCRIPT_PATHS:
        try:
            return path, _git(repo, "show", f"{commit}:{path}")
        except VariantError as e:
            missing = e
    raise missing


def render_at(commit: str, name: str, repo: Path = REPO) -> str:
    """NAME as COMMIT's variants.py rendered it from COMMIT's best/ files ('kernel': COMMIT's best/kernel.cu)."""
    best_rel = BEST.relative_to(REPO).as_posix()
    short_sha(commit, repo)
    if name == "kernel":
        return _git(repo, "show", f"{commit}:{best_rel}/kernel.cu")
    with tempfile.TemporaryDirectory() as tmp:
        # The old module finds its base files where it did in the repository: the temporary folder mirrors the
        # repository's layout (kernels/flash_attn_fwd/best/ and the script at its path of then).
        path, text = _script_at(repo, commit)
        script = Path(tmp) / path
        script.parent.mkdir(parents=True)
        script.write_text(text)
        best = Path(tmp) / best_rel
        best.mkdir(parents=True)
        for name_ in _git(repo, "ls-tree", "--name-only", f"{commit}:{best_rel}").split():
            if name_.endswith(".cu"):
                (best / name_).write_text(_git(repo, "show", f"{commit}:{best_rel}/{name_}"))
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
