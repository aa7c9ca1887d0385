// v46 (ks session 20261203-194412-15bf, attempt 147): v45 with the last part-empty wave of the unmasked 192-row
// d96/d128 launches handed out as 64-row pieces. Those launches end on a wave that holds k tiles of 132 (h16-16 and
// h64-8 at s495-s4096: 3072 / 2816 / 12288 / 11264 tiles, k = 12-44) while the other SMs idle. Since v45 a warpgroup
// whose rows do not exist runs no key block, so where 3k <= the grid the last k tiles go out as 3k pieces, each a
// 192-row tile whose warpgroup 0 alone is live (its Q box starts at the piece's row; warpgroups 1-2 skip and store
// nothing); no combine step, as a piece owns its 64 rows. A piece wholly past s_q is skipped by the producer. The
// decoded tile's first word carries the piece's first row, bit 31 set for a lone piece (kSplitTail functions only);
// the host passes the first split tile in `sec`, which unmasked launches do not use (a new kernel parameter had
// reordered other functions' SASS). Every other function's SASS is v45's (scripts/sass.py diff). Measured as
// next_split3 on an H200 in session 42 (NVIDIA H200, call 2, full grid, 1 round, run first): 1.2026, 182/182,
// beside v45 at 1.1970 (run second; 1.1981 in call 1, run first): kernel time 1.004, its 20 launches 1.016
// (-1.5..+4.5% each), the other 162 (v45's machine code) 1.003, the run order's drift. So ~+1.3% on its launches,
// as predicted (+0.9..+2.3% for a lone warpgroup at 0.5-0.8 of a tile-time), ~+0.15% on the grid.
// v45 (ks session 20261203-194412-15bf, attempt 144): v44 with dead warpgroups skipped on the 192-row d96/d128 tiles,
// and the tile-height rules counting them as free. v21's skip (a warpgroup whose 64 rows all lie past s_q runs no key
// block: it waits for each block's loads and releases the stage) was compiled for d64 only, so the last 192-row
// d96/d128 tile of a head computed its dead rows in full (s2048: one warpgroup of the last tile, s4096 two; in causal
// launches the heaviest tile); session 17's probe_rows192 had timed three live warpgroups for that reason when it read
// "a lone warpgroup takes a whole tile-time". Here the dead warpgroup releases K and V apart (kSplitKV; the protocol
// model's next_dead192 variant and its K-only control). With it, (1) the unmasked wave rule counts a 192-row tile in
// live 64-row units, which moves the 14 square short unmasked d96/d128 launches (s495-s1024) to 192-row tiles, and (2)
// the square causal launches past s_k 2048 take 192 rows at any s_q (s4079-s4096, two dead warpgroups in the heaviest
// tile). Measured as next_dead192c on an H100 in session 41 (NVIDIA H100 80GB HBM3): full grid beside #115's kernel
// (call 1, 1 round) 1.1870 against 1.1853, kernel time 1.003, 182/182, edge shapes passed; beside v44 (call 2):
// short128 (48), 3 rounds, kernel time 1.009 (s_k <= 512 +2..+7%, d96 s1024 +5..+6%, d128 s1024 beside GQA
// -0.2..-3.4%), nomask_long 0.998 and causal_long 1.002 (1 round; d96 s4096 causal +7% in both calls, the launches
// the skip alone touches level). Kept as v44's equal that is faster on its short launches, not as a gain (+0.14%
// over #115's kernel, inside the 0.5% same-call noise). Here only comments differ from the measured file (code identity).
// v44 (ks session 20261203-194412-15bf, attempts 130-137): v43 with two host-side changes to the causal tile order of
// head dim 256, the device code unchanged. (1) The square short causal d256 launches (s_q = s_k <= 1024) cut their
// heads into sections of ~64 tiles (half a wave), not v39's 4 MB of K/V: 4 MB is 64 tiles for d128-h16-16, the shapes
// v39 was tuned on, but 32 for d256-h8-8 and 128 for d256-h16-4. (2) No v40 tail for d256: its light blocks, run last
// over every head, re-read each head's 8-16 MB of K/V. Measured on H100s (NVIDIA H100 80GB HBM3): 8 MB / 2 MB sections
// (session 38, 1 round in each order) gave h8-8 +1.7..+3.2% and h16-4 +1.2..+4.4%, 64 tiles in both; this rule
// (next_sec64d256) on causal_short (26), 2 rounds beside v43 (session 39 call 1): its 6 launches +1.3..+3.0% kernel
// time, subset 1.003; no d256 tail (next_tailnod256, session 38 calls 4-5, 2 rounds each): d256-h8-8 s8175-s16384
// +0.8..+3.1%. Both together (next_sec64d_nod256) on the full grid beside #115's kernel (session 39 call 2, 1 round):
// 1.1833 against 1.1789, kernel time 1.007, 182/182. Here only comments differ from the measured file (code identity).
// v43 (ks session 20261203-194412-15bf, attempts 118-): v42 with causal d256's fully masked 64-key diagonal block
// skipped per warpgroup, and causal 512 < s_k <= 1024 on the 64-key functions too. With s_q = s_k, warpgroup 0's rows
// (the tile's first 64) see none of the keys of the tile's diagonal-most 64-key block; v42 computed that block and
// masked all of it. Now the warpgroup waits for the block's K and V loads and releases the stage without computing,
// and its FA3-order loop starts at the next block, O still zero: the saving v25's half-width diagonal block gives the
// 128-key functions. Measured on an H100 in session 37 (NVIDIA H100 80GB HBM3), same call, 2 rounds, on the 12 causal
// d256 launches with s_k <= 4096 (compare.py subset d256c4k): the skip alone (next_d256skip) kernel time 1.010 (the 6
// 64-key launches +0.5..+3.1%, the 6 others the same machine code, 0.993-1.014); with every causal s_k <= 1024 on 64
// keys too (next_d256skipall) 1.010, but s495-s512 -4.2..+1.0% (h16-4 s512 -4.2%); this rule (next_d256skipc, the next
// call) 1.011 (s1007-s1024 -1.9..+2.5%, the 64-key launches of v42 +0.5..+2.9%). Here only comments differ from the
// measured file (SASS SAME, `scripts/sass.py diff`).
// v42 (ks session 20261203-194412-15bf, attempts 113-117): v41 with d256's middle launches (causal 1024 < s_k <=
// 4096, unmasked 512 < s_k <= 1024) on 128x64 tiles in two K/V stages of 64 keys beside O's own 32 KB (64 KB of Q + 2 x
// 64 KB of K/V + 32 KB of O = 224 KB), on the FA3-order loop (as v41's 80-key blocks) and the TMA
// epilogue. v41 had them on v6's loop over one 128-key stage. Measured on an H100 in session 36 (NVIDIA H100 80GB
// HBM3): every short d256 launch so (next_d256n64t) against v41 on all 42 d256 launches, 2 rounds: kernel time 1.005,
// causal s_k 2048-4096 +1.1..+5.9%, unmasked s1024 +1.5..+7.7%, but causal s_k <= 1024 -2.2..+1.6% (h16-4 s512 -11%)
// and unmasked s512 -2.5..+2.3%; this rule (next_d256n64tc) against v41, 2 rounds on the same 42: kernel time 1.010
// (its 9 launches +4.5%, each +1.7..+7.9%; the other 33, v41's machine code, 0.981-1.025), its grid alone 1.1829 (v41
// 1.1815 and 1.1791 in the session's other calls). 64 keys read 33 FLOP a shared-memory byte in Q K^T (IDEAS.md,
// "d256 on 128-key blocks"), which had bound v6's loop there; with the FA3 order these launches read faster. The short launches
// (unmasked s_k <= 512, causal <= 1024) keep v41's 128-key functions. Here only comments differ from the measured
// file (SASS SAME, `scripts/sass.py diff`).
// v41 (ks session 20261203-194412-15bf, attempts 104-110): v40 with FlashAttention-3's shape for head dim 256 on
// d256's long launches (unmasked past s_k 1024, causal past 4096): 128x80 tiles in two K/V stages of 80 keys beside
// the one 64 KB Q buffer (64 + 2 x 80 KB), so d256 runs the FA3-order loop of d96/d128 (S_{i+1} with P_i V_i, the
// softmax under P V: O 128 + S 40 + P 20 registers, 0 spills at 224), on the register epilogue (no room is left for
// O's 32 KB staging area). v6's loop, which every d256 launch ran before, issues a warpgroup's Q K^T, waits, runs the
// softmax with nothing of its own on the tensor cores, then P V; with one stage both warpgroups run in step, so their
// softmaxes coincide. Measured on an H100 in session 35 (NVIDIA H100 80GB HBM3): as next_d256n80 (unmasked past
// 2048 only) against v40 on its 12 launches, kernel time 1.093 and 1.098 (2 rounds), and on the full grid 1.1646 ->
// 1.1707 (kernel time 1.007; its 12 launches 1.098, the other 170 1.0005); every d256 launch so (next_d256n80all, the
// next call): causal s_k > 2048 1.062 (s8192-s32768 +3.5..+11.7%, s4096 level), unmasked s2031-s2048 +4..+5%, but
// unmasked s_k <= 1024 -1..-18% and causal s_k <= 2048 -16% (where the TMA epilogue and the half-width diagonal
// block, both gone at 80 keys, had paid); this rule (next_d256n80c) against next_d256n80 on all 42 d256 launches:
// kernel time 1.019 (causal long 1.052, unmasked short 1.019, the 21 unchanged 0.999-1.005); its grid alone 1.1739.
// The 80-key block costs 1.5% of padding at s4096 (51.2 blocks) and reads 36 FLOP a shared-memory byte in Q K^T
// against 44 at 128 keys (64 keys, 33, had been bound by it: IDEAS.md). Here only comments differ from the measured
// file (SASS SAME, `scripts/sass.py diff`).
// v40 (ks session 20261203-194412-15bf, attempts 95-103): v39 with the causal tail order where s_k > 4096: the
// lightest query blocks of every causal head (as many as fill 4 waves of tiles, each holding at most half the
// heaviest block's keys) go last, over all heads at once, so a long causal launch ends on short tiles in every CTA.
// Compiled into the causal functions only (decode_tile's kTail = kHalfDiag), the cut riding in `causal` (1 + cut), so
// the unmasked functions are v39's machine code. Measured as next_tail8kc on an H200 in session 34, same calls as v39:
// the full grid 1.1763 -> 1.1778 (kernel time 1.001, 1 round), and on the 36 causal launches with s_k > 4096
// (`tail_long`) kernel time 1.008 in that call and 1.007-1.009 in each pairing of 2 rounds in call 3 (v39 against
// itself 0.999); the other causal launches level (26 at s_k <= 1024 0.995, 29 between 1.002), the unmasked 1.000.
// Its first form, next_tail8k (the tail in all 28 functions, one more kernel parameter), had read tail_long 1.007 on
// an H100 in session 33 but lost 0.7-1.8% on 8 short launches where only its longer code differed. Level on the grid
// (inside the 0.5% same-call noise), so kept as v39's equal that is faster on its own launches, not as a gain. Here
// only comments differ from the measured file (SASS SAME, `scripts/sass.py diff`).
// v39 (ks session 20261203-194412-15bf, attempts 91-94): v38 with causal tile sections of 4 MB of K/V where s_k <=
// 1024 (16 MB, as since v5-v6, at longer keys). Measured on an H100 in session 32 as next_secs1k, same calls as v38,
// on the 26 causal launches with s_k <= 1024 (`causal_short`): kernel time 1.027 (2 rounds) and, run first, 1.028 (3
// rounds), all correct; the 13 launches with s_k <= 512 +4.8% and +5.0% (d64-h32-32, d96-h16-16, d128-h16-16 s512/s495
// and d256-h16-4 s512 +7..+11%), the 13 at s1024 +0.6% in both (-2.6..+4.1%). Host code only: every other launch is
// v38's (the same functions, the same tile order). No full grid: 26 of 182 launches at +2.7% would move it by about
// +0.4%. The alternative, at most one wave of tiles a section (next_secwave), read 1.017 in the first call.
// v38 (ks session 20261203-194412-15bf, attempts 82-88): v37 with two changes measured on an H100 in session 31.
// (1) The d64 functions issue Q K^T with Q's A operand from registers (ldmatrix.x4 once a tile, wgmma m64n128k16 RS)
// instead of shared memory: d64_192 (24 launches, 2 rounds) kernel time 1.005 (causal -0.6..+2.6%). The same change
// in the 128-row d96/d128 functions lost (short + long128rows 0.995: d128 causal s4096 -1..-3%), so only d64 has it.
// (2) The V thread (thread 32 loads V, v35) also in d256's register-epilogue functions, i.e. unmasked d256 past s_k
// 2048: d256l (24 launches, 2 rounds) kernel time 1.010 (those 12 launches -0.6..+4.6%), as +1.2..+1.5% on v35/v37.
// Together as next_qrs64vt37, the full grid against v37 in two calls, 1 round each, both 182/182: 1.1520 -> 1.1581
// (+0.53%, kernel time 1.003) and, run first, 1.1585 against 1.1539 (+0.40%, 1.003). The mean +0.46% is inside the
// 0.5% same-call noise on the grid, so v38 is kept as v37's equal that is faster on both of its families, not as a
// gain. Here only comments differ from the measured file (SASS SAME, `scripts/sass.py diff`).
// v37 (ks session 20261203-194412-15bf, attempts 74-80): v36 with causal d64 on the TMA epilogue at every s_k (v36
// kept d64 on it up to s_k 2048). Measured on an H100 as next_d64tmac, same calls as v36: d64long (16 launches, s_k >
// 2048) kernel time 1.007 (causal +0.6..+4.3%, the unchanged unmasked launches -1.2..+1.1%; 2 rounds); the full grid
// twice, 1 round each: 1.1621 -> 1.1638 (kernel time 1.004) and 1.1615 -> 1.1611 (1.000), causal d64 faster by about
// 1% in every call. That is below the same-call noise on the grid (0.5%), so v37 is kept as v36's equal that is faster
// on its own family, not as a gain. next_d64tma (#73, unmasked d64 too) lost 1-4% on unmasked h32-8, so unmasked d64
// keeps the rule. The non-TMA causal d64 functions go: 28 instantiations (30). Here only comments differ from the measured
// file (SASS SAME, `scripts/sass.py diff`). No H200 grid yet: v35's 1.1598 is the H200 record.
// v36 (ks session 20261203-194412-15bf, attempts 68-72): v35 with every d96/d128 launch on the TMA epilogue (O staged
// in the Q buffer, one 64 x 64 bulk store per box), where v35 used it up to s_k 2048 and ran longer keys on the register
// epilogue, on 160-key blocks where the tiles had 128 rows. The 2048 rule dated from v11, whose TMA epilogue cost long
// d128 6-10%; v13-v35 changed what surrounds it (decoded tile slots, per-stage K/V release, staged O), and session
// 28 found v35's d128 speedup dipping at s4096 between its neighbours (causal 1.07-1.10 against ~1.16 at s2048 and
// ~1.18 at s8192; TFLOP/s flat from s2048 to s4096 while cuDNN's rise). Measured on an H100 (NVIDIA H100 80GB HBM3;
// the device lent no H200 this session), same calls: next_tma4k (TMA up to s_k 4096) on the 22 tma4k launches kernel
// time +3.2% (causal s4096 +6..+8%), next_tmaall on 16 longer launches +2.0% (2 rounds) and +0.9% (1 round), and the
// full grid 1.15085 -> 1.16068, 182/182, kernel time +0.8% (results/2026-12-05-h100-s28-call5-*): long causal d96/d128
// +2.9%, long unmasked +2.1%, every unchanged family 0.995-1.005. The 160-key functions and the d96/d128
// register-epilogue ones go: 30 instantiations (42). The measured file is next_tmaall; here only comments and the
// unused 160-key code differ (SASS SAME, `scripts/sass.py diff`). No H200 grid yet: v35's 1.1598 is the H200 record.
// v35 (ks session 20261203-194412-15bf, attempts 60-63): v34 with two changes of session 23's call 3 that gained.
// (1) In the d96 functions on 128-row tiles, V is loaded by a second producer thread (thread 32), which reads each
// published tile like a consumer warp (one more arrival on the slot's empty barrier) and walks its key blocks on
// stage counters of its own. One in-order producer thread could not request K of block i + 2 before V of block
// i + 1, which waits for an older P V to release its stage; d96's V is three 32-column boxes against the shortest
// consumer block (m64n96 P V), so it gains most there. d96 128-row launches kernel time +6..+8% (s512-s1024), d96
// subset +2.2% (session 24 call 1, 2 rounds). On every function (next_kvthreads, session 23 call 3 and session 24
// call 3) the 192-row launches lost 1-5%, d128's 128-row ones split, d64 -0.5%, d256 long unmasked +1.2%; so only
// d96's 128-row functions have it (if constexpr: every other function SASS SAME as v34's).
// (2) No cudaMemsetAsync of the tile counter before each launch: the launch's last CTA to finish its tile loop zeroes
// it (and the count of CTAs done), so the next launch on the stream starts from 0. The median launch 0.88 us faster
// (session 23 call 3); with (1), short128 kernel time +0.9%, median 1.2 us saved (session 24 call 1).
// Full grid 1.1598, 182/182 (results/2026-12-05-h200-s24-call2-v35-full-bench.json, measured as next_v35; v34's
// machine code 1.1575 in session 23). Here only comments differ from the measured file (SASS SAME).
// v34 (ks session 20261203-194412-15bf, attempts 54-56): v33 with causal d256 on the TMA epilogue (O staged in
// its own 32 KB) at every s_k; v33 used the register epilogue above s_k 2048. d256 on the TMA epilogue at every s_k
// (next_d256tma) read, in two calls (session 20, results/2026-12-04-h200-s20-call2/-call3-compare.txt, 1 and 2
// rounds), causal long d256 kernel time 1.022 / 1.018 and unmasked long d256 0.986 / 0.977; so only the causal
// launches moved (measured as next_d256tmac; each of its 42 functions SASS SAME as in v33, which had 2 more).
// Full grid 1.1575, 182/182 (results/2026-12-05-h200-s23-call1-d256tmac-full-bench.json; v33 1.1575 / 1.1543): the
// grid reads level, as predicted (+0.1%: 12 launches of 182). The unused d256 V barrier id is gone; here only
// comments differ from the measured file (SASS SAME).
// v33 (ks session 20261203-194412-15bf, attempts 45-47): v32 with two changes measured apart in one call
// (results/2026-12-04-h200-s19-call1-compare.txt, 2 rounds, interleaved).
// (1) d256's TMA epilogue (s_k <= 2048) stages O in 32 KB of shared memory of its own (Q 64 + K/V 128 + O 32 of 227
// KB), two rounds of 64 x 128 per warpgroup, each after a bulk read-wait, and V is released inside the key loop. v25-v32
// staged O in the last key block's V stage, so the next tile's first V load waited for both warpgroups' last P V, O's
// writes and the store's read: about 1.3 block-times of fixed cost per d256 tile (t = a + b x blocks fitted over v32's
// launches: a = 3.8-4.1 us, b = 2.9 us). d256s (18 scenarios) kernel time +3.3% (unmasked +2.8%, causal +3.8%;
// speedup +4.2%; predicted +1..+4%). Measured as next_d256ostage.
// (2) every unmasked d96/d128 launch runs a function of its own with causal = 0 at compile time (kHalfDiag false).
// The short unmasked 128-row d128 launch shared its function with the causal ones; on its own (next_qk1ctl, the
// control of an early-Q K^T form that lost, 0.991) the 21 unmasked d128 s_k <= 2048 scenarios gained +1.7% kernel
// time. The long unmasked launches (s_k > 2048, their own functions here too) are level: nomask_long kernel time 0.997
// (call 2, 1 round). next_nocausal's d64 and d256 functions measured level in session 18, so they keep v32's code.
// The non-TMA 128-key 128-row d96/d128 functions, compiled by a macro but never launched, are gone: 44 functions.
// Full grid 1.1575, 182/182 (results/2026-12-04-h200-s19-call2-unmasked-full-bench.json, measured as next_unmasked;
// v32 1.1538-1.1541 in session 18). 0 spills; here only comments differ (SASS SAME).
// v32 (ks session 20261203-194412-15bf, attempts 40-41): v31 with the shared-memory base kept in a register on 192-row
// tiles. ptxas rebuilt (cvta(smem) + 1023) & ~1023 (S2UR SR_CgaCtaId and four uniform instructions) inside the key
// loop of every d64, d256 and 192-row d96/d128 function; an opaque move of the base stops that (d64's loop 784 -> 778
// instructions). Same call, 2 rounds (results/2026-12-04-h200-s18-call1-compare.txt): d64 kernel time +1.2% (unmasked
// +1.5%, causal +0.4%); in d256 the same move cost 1.2% (unmasked s <= 2048 -2.0%), so d256 keeps v31's code. The
// 192-row d96/d128 launches are level (nomask8 0.999, causal_gqa 1.000 kernel time, call 2). Full grid 1.1541, 182/182
// (results/2026-12-04-h200-s18-call2-sb192-full-bench.json, measured as next_sb192): d64's families +0.4..+2.2% kernel
// time against both of v31's full grids, every other function's SASS is v31's; the speedup row moved with cuDNN
// between calls (d128 causal short -2.7% in speedup at level kernel time against session 17's call 2).
// v31 (ks session 20261203-194412-15bf, attempts 34-35): v30 with d96's P V as m64n96. d96 ran the d128 code (Dp 128)
// with Q K^T cut to 6 k-steps, but its P V was m64n128 over V's two 64-column panels, the second half zero: 25% of P
// V's tensor work (12.5% of the tile's) on zero columns, and 64 O accumulators a thread where 48 do. m64n96 needs V's
// N extent in whole swizzle atoms; in this MN-major operand a 128-byte atom is 64 columns wide, so d96's V moves to the
// 64-byte swizzle: three 32-column panels (TMA box 32 columns, SWIZZLE_64B; descriptor layout type 2, LBO the panel
// stride BN x 64, SBO 8 rows x 64 B = 512, a 16-key step 1024 B). Per 160-key block the tensor work drops 14%; the
// steady loop 976 -> 957 instructions. Every non-d96 function's SASS is v30's (scripts/sass.py diff). Same call, d96
// subset (14 scenarios), 2 rounds (results/2026-12-04-h200-s17-call1-compare.txt): speedup 1.039 of v30, kernel time
// 1.046 (unmasked 1.056, causal 1.036; predicted +3..+6%). Full grid 1.1559, 182/182
// (results/2026-12-04-h200-s17-call2-d96n96-full-bench.json; v30 1.1441 in session 16). The measured file is
// next_d96n96; here only comments differ (SASS SAME).
// v30 (ks session 20261203-194412-15bf, attempts 30-31): v29 with the unmasked d96/d128 launches on 192-row tiles by
// waves, not padding: unmasked tiles all cost the same, so a launch runs ceil(tiles / SMs) tile-times, and 192 rows
// win where ceil(tiles192 / 132) x 192 is at most 3.5% above ceil(tiles128 / 132) x 128. That moves the 16-head s_q
// 2031-4096 launches to 192 rows, short keys included (TMA epilogue, O staged in the Q buffer, as d64), and
// q8192-k32768 back to 128 (7.76 waves of 128 rows against 5.21 of 192: 8 x 128 < 6 x 192 rows). Same call, kernel
// time v29 / this (results/2026-12-04-h200-s16-call1-compare.txt, full grid, 1 round, measured as next_r192all, whose
// unmasked functions are this file's, SASS SAME): the 7 s2031-2048 launches +0.1..+6.3%, the 7 s4079-4096 +3.0..+6.3%,
// q8192-k32768 +4.4%; the 167 others 0.998 (unchanged code). Full grid 1.1466, 182/182
// (results/2026-12-04-h200-s16-call2-r192s-full-bench.json; v29 1.1443 and next_r192all 1.1468 in the call before).
// The measured file is next_r192s; here the dispatch comments differ (SASS SAME).
// v29 (ks session 20261203-194412-15bf, attempts 26-29): v28 with the d96/d128 launches at s_k > 2048 on 192x128
// tiles (3 consumer warpgroups on v6's loop, as d64), causal or not, where 192-row tiles pad s_q by at most 1% more
// rows than 128-row ones (s_q 8175-8192, 16367-16384, 32751-32768 and q8192-k32768; not 4096 or the q1024-4096
// prefill shapes). Long shapes run at the 700 W cap and the K/V copies from L2 are ~14% of their energy
// (session 14's probes); a 192-row tile reads each K/V stage for 1.5x the rows. Kernel time v28 / this, 2 rounds, one
// call (results/2026-12-04-h200-s15-call2-compare.txt): nomask8 1.028 (unmasked only, next_r192), causal_gqa 1.029
// (both masks, next_r192c); their losses were where 192 rows pad s_q 3% more (q2048-k8192 -6%, s4096 causal -1%),
// hence the padding rule. Registers: 32 + 3 x 160 (65536); the 32-register producer spilled 24 bytes until the tile
// slot's and Q buffer's counters shared one register and gridDim.x was read where used. Full grid 1.1355, 182/182
// (results/2026-12-04-h200-s15-call3-r192p-full-bench.json; next_r192, unmasked only, 1.1381 in the call before;
// v28 1.1334 in session 13). The measured file is next_r192p; only comments differ (SASS SAME).
// v28 (ks session 20261203-194412-15bf, attempts 15-17): v27 with every d64 causal launch on 192-row tiles. v12 put
// s_q <= 1024 on 128-row tiles because 192-row tiles ran their diagonal blocks mostly masked; v27's 192-row causal
// tiles skip or halve the first block per warpgroup, so at s512 they do 18.5 warpgroup-blocks over 3 tiles against
// 18 over 4. Kernel time v27 / v28 on the six d64 causal s <= 2048 scenarios 1.037 (2 rounds, same call; s512 +5-9%,
// s1024 +4-7%; results/2026-12-04-h200-s13-call3-compare.txt); s_q = 1024 alone (next_c192at1024) 1.016. Full grid
// 1.1334, 182/182 (results/2026-12-04-h200-s13-call4-c192all-full-bench.json): its four changed scenarios 0.995 ->
// 1.057 against v27's bench two calls earlier, the other 178 (identical code) 1.1377 -> 1.1352, the drift between
// calls. The measured file, next_c192all, set the 128-row threshold to 0; here that launch line is gone, and so
// are Config<64, 128> and the two-consumer d64 branches (the 28 remaining functions' SASS is the same as
// next_c192all's, scripts/sass.py diff).
// v27 (ks session 20261203-194412-15bf, attempts 10-13): three edits of v26, measured in session 13's call 1.
// (1) d64 192-row tiles: a dead warpgroup (its 64 rows all past s_q) waits for each of its blocks' K and V and releases
// the stage itself with a predicated arrive (mbar_arrive_if); v21-v26 had warpgroup 0 stand in for its releases, which
// let its parity tests run two phases ahead of the loads (scripts/protocol_model.py; never seen on the GPU).
// (2) a kHalfDiag template switch: the unmasked d64 and d256 launches use instantiations without the skipped or
// half-width first block, whose SASS is v24's (d256) and v26's (d64); v25's half-width block had cost unmasked d256
// s <= 2048 3% in shared functions. (3) d64 causal 192-row tiles (s_q > 1024): per warpgroup the tile's first
// (diagonal-most) key block is skipped when its rows end before the block (it still waits for the loads, then
// releases), or run at half width (v24's peeled block) when its rows see at most 64 of its keys.
// Kernel time v26 / this (2 rounds, one call): d64_192 (24 d64 scenarios on 192-row tiles) deadfix alone 1.011,
// all three 1.023 (causal s2048 +7-8%, s4096 +5%; predicted +4-6% / +2-3%); d256s (18 d256 s <= 2048) d256split
// alone 1.009 (unmasked +2-5%). Full 182-scenario grid 1.134x, 182/182 correct
// (results/2026-12-04-h200-v27-full-bench.json; v26 1.127x in session 12).
// v26 (ks session 20261203-194412-15bf, attempt 9): v25 + d96/d128 causal 128-key tiles (s_k <= 2048) run warpgroup
// 0's diagonal block first, whole and at half width (m64n64 Q K^T, 64-column softmax, 64-key P V, each waited for),
// then the FA3-order code from the next block on, whose softmax rescales O (it holds the diagonal block's P V).
// Tiles with one key block keep the old path. A first form that halved only Q K^T and the softmax (P V full width
// over a zero half of P) was level (short128 kernel time 0.999, session 12 call 2). Kernel time v25 / v26 on the 48
// short d96/d128 scenarios 1.010, speedup 1.110 -> 1.124 (2 rounds; causal +1-5%; predicted +1-3%). Full
// 182-scenario grid 1.127x, 182/182 correct (results/2026-12-03-h200-v26-full-bench.json; v23 1.122x).
// v25 (ks session 20261203-194412-15bf, attempt 7): v24's half-width diagonal block for d256 causal as well (128x128
// tiles, one K/V stage, v6's loop as d64): warpgroup 0 runs the tile's diagonal block as m64n64 Q K^T, a 64-column
// softmax and a 64-key P V; K is released after its Q K^T, V after its P V unless the block is the tile's only one
// (its V stage then holds O for the TMA store). Kernel time v24 / v25 on the nine d256 causal s <= 2048 scenarios
// 1.047, speedup 1.030 -> 1.081 (2 rounds; predicted +4-6% at s512, +2-4% at 1024, +1-2% at 2048; measured +5-7%,
// +3-11%, +1-7%; results/2026-12-03-h200-s12-call2-compare.txt).
// v24 (ks session 20261203-194412-15bf, attempt 6): v23 + d64 causal 128-row tiles (s_q <= 1024) run warpgroup 0's
// diagonal key block at half width. With s_q = s_k its 64 rows see none of that block's last 64 keys, so its Q K^T is
// an m64n64 wgmma (32 accumulators), its softmax covers 64 columns and its P V 64 keys (4 k-steps of 8). The block is
// peeled off the key loop (the loop body's SASS is unchanged, 789 instructions, 12 HGMMA); only the four 128-row d64
// functions differ from v23. Kernel time v23 / v24 on the six d64 causal s <= 2048 scenarios 1.031 (2 rounds; the
// four at s <= 1024 +4.2..+5.5%, predicted +3-5%; results/2026-12-03-h200-s12-call1-compare.txt).
// v23 (ks session 20261203-021222-750b, attempt 48): v22 + the producer publishes each tile decoded (m_block, head,
// batch, n_blocks in a 16-byte slot; n_blocks < 0 is the sentinel), so the consumers no longer divide: decode_tile's
// four run-time integer divisions (~20 instructions each) ran on every consumer warp's tile-start path. ~104 fewer
// instructions per function. Kernel time v22 / v23 in one call, 2 rounds: short128 1.019, d64c 1.031, long128 1.014
// (every one of the 8 long d128 scenarios; more than the divisions' share of a long tile, cause not isolated).
// Full 182-scenario grid 1.122x, 182/182 correct (results/2026-12-03-h200-v23-full-bench.json; v22 1.102x in the
// call before it, -v22-full-bench.json).
// v22 (ks session 20261203-021222-750b, attempt 47): v21 with v19's wgmma descriptor code for d64 (both tile shapes):
// the K/V stage index stays in vector registers and each descriptor offset is a 32-bit add on the low word. v20's
// uniform-datapath form (broadcast stage, 64-bit add) helps d96/d128/d256, which keep it, but cost d64: kernel time
// v21 / v22 on the d64 scenarios 1.007 and 1.006 in two calls (2 rounds each; 6 and 28 scenarios), d96/d128 level
// (results/2026-12-03-h200-s11-call1-compare.txt, -call2-compare.txt).
// v21 (ks session 20261203-021222-750b, attempt 45): v20 + d64's 192-row tiles skip the work of warpgroups whose 64
// rows all lie past s_q. s_q % 192 is 64 or 128 in every d64 scenario, so the last query tile of each head holds one
// or two such warpgroups, which did a live one's whole work on the shared tensor cores. A dead warpgroup now runs
// the key loop zero times (its trip count is a broadcast, provably warp-uniform value, so the loop body stays as in
// v20: session 6's per-block branch made the loop divergent, -7..-12%, and session 7's broadcast test inside it
// changed its register allocation, -10%), and warpgroup 0's warps release each stage for it. The 24 d64 scenarios on
// 192-row tiles +1.9% in one call (s512 +3%, s1024 +4-5%; first form, which also changed the 128-row tiles: -2.4%
// there, so they keep v20's code). Full 182-scenario grid 1.104x, 182/182 correct
// (results/2026-12-03-h200-v21-full-bench.json; v20 1.099x / 1.096x in the two calls before it).
// v20 (ks session 20261203-021222-750b, attempt 43): v19 + the wgmma descriptors on the uniform datapath. The K/V
// stage index is broadcast from lane 0 for the descriptors (v19 built every K and V descriptor in vector registers,
// because the same index addresses the stage's mbarriers, and moved it over with two R2UR per wgmma), and each
// descriptor offset is one 64-bit add (UIADD3.64, the high word kept) instead of a 32-bit add plus a move of the
// high word. A steady d128 160-key block 561 -> 515 instructions (18 wgmmas, 26 others among them: v19 82).
// Full 182-scenario grid 1.099x, 182/182 correct; v19 1.089x in the same call
// (results/2026-12-03-h200-v20-full-bench.json, -s10-call1-v19-full-bench.json).
// v19 (ks session 20261203-021222-750b, attempt 41): v18 + each wgmma's shared-memory descriptor as its buffer's
// descriptor plus a constant (one 32-bit add on the low word, as CUTLASS's descriptor iterator does) instead of
// masking, shifting and or-ing the address again for every k-step, and the warpgroup index broadcast from lane 0
// so the compiler can prove it warp-uniform (fewer R2UR moves). A steady d128 block's non-wgmma instructions
// among its wgmmas 131 -> 82. Full 182-scenario grid 1.084x, 182/182 correct; v18 1.065x in the same call
// (results/2026-12-03-h200-v19-full-bench.json, -s9-v18-full-bench.json): every family +0.7-3.3%, long shapes
// too (they run at the 700 W power cap: fewer instructions, less energy; results/2026-12-03-h200-s9-call1-clock.txt).
// v18 (ks session 20261203-021222-750b, attempts 37/38): v17 + FlashAttention-4's conditional rescale. A warp
// keeps its rows' running maxima until a key block raises one of them by more than 2^8 (log2 units), so P stays
// <= 256 (bf16/fp16 round it relative to its size) and O is rescaled only then: its 64 FMUL (d128) per block sit
// behind a warp-uniform branch (__any_sync). Full 182-scenario grid 1.068x, 182/182 correct; v17 1.061x in the
// same call (results/2026-12-03-h200-v18-full-bench.json, -s8-v17-full-bench.json): d128 s <= 2048 +2.7-3.9%.
// v17 (ks session 20261203-021222-750b, attempt 33): v16 + the v6 loop (d64, d256) tests V's mbarrier together
// with K's and waits for V only if it was not full then. Session 7's wait profile (scripts/wait_profile.py) showed
// each mbarrier test costing ~75-95 cycles even when the stage is full. d256 causal 1.011 -> 1.041, no mask
// 0.994 -> 1.012, d64 +0.5%; the d96/d128 code is v16's (the same SASS). Full 182-scenario grid 1.062x, 182/182
// correct (results/2026-12-03-h200-v17-full-bench.json).
// v16 (ks session 20261203-021222-750b, attempt 26): v15 + its 160-key blocks for the causal d96/d128 launches
// at s_k > 2048 too (diagonal blocks are masked per block, so this is one dispatch line). The 32 causal scenarios
// at s_k > 2048: 1.186 -> 1.206 against v15 in one process (results/2026-12-03-h200-s6-call2-compare.txt); full
// 182-scenario grid 1.056x, 182/182 correct (results/2026-12-03-h200-v16-full-bench.json).
// v15 (ks session 20261203-021222-750b, attempt 23): v13 + 160-key blocks for d96/d128 without a mask at
// s_k > 2048 (FlashAttention-3 uses 176 for hdim 128 without a mask; 176 fits only with one Q buffer, and the
// lost prefetch of the next tile's Q cost more than the wider block gained: attempts 21, 22), with v13's two Q
// buffers and 2 stages: 64 + 160 KB. Its 32 scenarios 1.031 -> 1.055 against v13 in one process
// (results/2026-12-03-h200-s5-call4-compare.txt); full 182-scenario grid 1.053x, 182/182 correct
// (results/2026-12-03-h200-v15-full-bench.json).
// v13 (ks session 20261203-021222-750b, attempt 16; the same file as attempt 14): v12 + a TMA-store O epilogue for d256
// at s_k <= 2048, O staged in the last key block's V stage. On the H200: the 18 d256 scenarios it changes 0.904 -> 0.986
// (results/2026-12-03-h200-s4-call7-d256short.tgz); full 182-scenario grid 1.051x the fastest baseline, 182/182 correct
// (results/2026-12-03-h200-v13-full-bench.json).
// v12 (attempt 13): v11 + two per-head-dim changes, each measured in the same process against v11
// on the H200 (results/2026-12-03-h200-s4-call2-compare.txt):
//   - d256 on 128-key blocks in one K/V stage, K and V released apart: d256 subset 0.910 -> 0.965;
//   - d64 causal with s_q <= 1024 on 128-row tiles (v5's shape) instead of 192: 0.82 -> 0.92-0.94.
// Full 182-scenario grid: 1.037x the fastest baseline, 182/182 correct
// (results/2026-12-03-h200-v12-full-bench.json).
// FlashAttention forward for Hopper (sm_90a): TMA + mbarrier pipeline, wgmma, warp specialisation.
// Persistent: one CTA per SM loops over tiles taken from a global atomic counter.
//
// A tile is 128 query rows of one (batch, head); 192 for d <= 64, and for d96/d128 where 192 rows run fewer wave-rows
// (unmasked, v30) or pad s_q little (causal, long keys, v29). A CTA has one producer
// warpgroup plus one consumer warpgroup per 64 query rows:
//   warpgroup 0: producer. One thread takes tiles from the counter (atomicAdd), decodes each and
//                publishes it to the consumers through a 2-slot shared-memory ring (mbarriers
//                "tile full" / "tile empty"), and issues bulk tensor copies (TMA) of the tile's
//                Q (into one of kQBufs Q buffers, each with "full"/"empty" mbarriers) and of its
//                K and V tiles into a ring of shared-memory stages, each stage guarded by
//                "full" mbarriers (the copy engine counts the bytes in) and an "empty" mbarrier
//                (the consumers release it). The K/V ring, the Q buffers and the tile slots keep
//                their stage/phase counters across tiles, so the producer loads the next tile's
//                Q, K and V while the consumers finish the current tile (last P V, epilogue).
//                An index >= num_tiles is published as the sentinel (n_blocks -1) that ends all
//                three warpgroups.
//                It gives most of its registers away (setmaxnreg).
//   warpgroups 1..C: consumers, 64 query rows each (C = 2, or 3 for 192-row tiles). Per key tile:
//                S = Q K^T by wgmma from shared memory, the online softmax in registers (exp2
//                with the scale folded in), then O += P V by wgmma with P taken straight from
//                registers. The consumers run independently, so one's softmax overlaps the
//                others' matrix work. d64 has half the matrix work of d128 per key tile but the
//                same softmax work, so it runs a third consumer (as FlashAttention-3 does).
//                Epilogue, two variants picked per launch (template kTmaEpi):
//                - s_k <= 2048, d <= 128: a consumer writes its normalised O rows into its slice
//                  of the tile's Q buffer (free once the tile's last Q K^T has completed) and one
//                  thread stores them with TMA; the Q buffer goes back to the producer once that
//                  store has read it (checked at the next tile's first S, or at exit).
//                - s_k <= 2048, d256 (one Q buffer: staging there would delay the next tile's Q):
//                  Q is released after the tile's last Q K^T; once both warpgroups' last P V has
//                  completed, each writes its normalised O rows into its 64-row slice of the last
//                  key block's V stage and one thread stores them with TMA; that V stage goes back
//                  to the producer as soon as the store has read it.
//                - otherwise: Q is released after the tile's last Q K^T and O is stored from
//                  registers.
//
// Shared-memory tiles use the 128-byte swizzle on both sides: the TMA writes it and the wgmma
// descriptors read it. A tile of R rows and Dp columns is stored as Dp/64 column panels of
// R x 64 elements (128 bytes per row), each panel 1024-byte aligned.
//
// Head dims: d is padded up to Dp in {64, 128, 256}; the TMA zero-fills columns past d, so a
// d = 96 problem runs the d = 128 code with zero columns (they contribute nothing and are
// never stored). Rows past s_q / s_k are zero-filled too; key columns past s_k are masked.
// Causal masking is bottom-right aligned (query i sees key j when j <= i + s_k - s_q); a row
// that sees no key gets zeros (a tile that sees no key block loads nothing and stores zeros).
// GQA: query head h reads kv head h / (h_q / h_kv).

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
// N: keys per block (128; v15-v35 ran 160 on d96/d128's long 128-row tiles).
template <int Dp> constexpr int kDefaultRows = Dp == 64 ? 192 : 128;
template <int Dp, int M = kDefaultRows<Dp>, int N = 128> struct Config;
// kQBufs: Q buffers (2 lets the next tile's Q land while this tile still reads its own;
// d256 has no room for a second 64 KB Q: 64 + 64 KB of K + 64 KB of V = 192 KB of 227 KB).
// Producer budget 40: the persistent producer spills at 24.
// d64: 192x128 tiles (3 consumers, 512 threads): 128*40 + 384*152 = 63488 <= 512*128.
template <> struct Config<64, 192> : TileConfig<3, 128, 3, 2, 40, 152> {};
// (v12-v27 also ran d64 causal at s_q <= 1024 on 128x128 tiles, two consumers; v28 dropped them: the 192-row
// tiles' skipped / half-width first block won there too.)
// d96/d128: 128-row tiles (2 consumers, 384 threads): 128*40 + 256*232 = 64512 = 384*168.
template <> struct Config<128, 128> : TileConfig<2, 128, 2, 2, 40, 232> {};
// d256's short launches (v42: unmasked s_k <= 512, causal <= 1024): 128x128 tiles in one K/V stage, K and V
// released apart (K_{i+1} loads under softmax_i and P_i V_i). Why 128 keys: at 64 a Q K^T wgmma reads as many
// shared-memory bytes per clock as the tensor cores can use (IDEAS.md, "d256 on 128-key blocks"); 128 cuts the bytes
// per key by 12.5% (measured +6%).
// Registers: 128*56 + 256*224 = 64512 (the producer spills 16 B at 40; 48 + 232 is over the
// launch allocation, which hung the kernel on the H200).
template <> struct Config<256, 128> : TileConfig<2, 128, 1, 1, 56, 224> {};
// v41: d256's long launches on 128x80 tiles in two stages (64 + 2 x 80 KB = 224 KB), the FA3-order loop: O 128 + S 40
// + P 20 registers fit the 224 (at 128 keys the loop spilled 16 bytes).
template <> struct Config<256, 128, 80> : TileConfig<2, 80, 2, 1, 56, 224> {};
// v42: d256's middle launches (unmasked 512 < s_k <= 1024, causal 1024 < s_k <= 4096) on 128x64 tiles in two
// stages beside O's 32 KB (64 + 2 x 64 + 32 = 224 KB), the FA3-order loop and the TMA epilogue.
template <> struct Config<256, 128, 64> : TileConfig<2, 64, 2, 1, 56, 224> {};
// d96/d128 192x128 tiles (3 consumers on v6's loop, 512 threads): 128*32 + 384*160 = 65536.
template <> struct Config<128, 192> : TileConfig<3, 128, 2, 2, 32, 160> {};

constexpr int kTileSlots = 2;  // shared-memory ring that hands decoded tiles to the consumers
constexpr int kSlotBytes = 16;  // m_block, head, batch, n_blocks (n_blocks < 0: the sentinel)
// Named barrier of consumer warpgroup cw before its TMA store of O: id kEpilogueBarrier + cw
// (0 is __syncthreads; 1 + cw is the FA3-order loop's softmax barrier).
constexpr uint32_t kEpilogueBarrier = 4;
// v33: d256's TMA epilogue stages O in 32 KB of its own (after the K/V stages, before the barriers).
template <int Dp, bool kTmaEpi> constexpr uint32_t kOStageBytes = Dp == 256 && kTmaEpi ? 32768u : 0u;

// v31: the P V / O width: d96 (Dp 128 with 6 Q K^T steps) runs m64n96 over V in 64-byte swizzle, three
// 32-column panels; the others as before.
template <int Dp, int Steps> constexpr int kDv = Dp == 128 && Steps == 6 ? 96 : Dp;
// v35: d96 on 128-row tiles loads V from a second producer thread
// v38: and unmasked d256 on the register epilogue (v41: the 80-key blocks of its launches past s_k 1024)
template <int Dp, int Steps, int Consumers, bool TmaEpi, bool HalfDiag>
constexpr bool kVThread = (Dp == 128 && Steps == 6 && Consumers == 2) || (Dp == 256 && !TmaEpi && !HalfDiag);
template <int Dp, int Steps> constexpr bool kV64 = kDv<Dp, Steps> == 96;
template <int Dp, int Steps> constexpr uint32_t kVRowBytes = kV64<Dp, Steps> ? 64 : 128;  // a V panel's row
template <int Dp, int Steps> constexpr int kVPanels = kV64<Dp, Steps> ? 3 : Dp / 64;

// Head dims whose K and V of a stage are released apart (empty guards K, emptyV guards V):
// d96/d128 (FA3 loop order) and d256 (one stage: K_{i+1} loads while P_i V_i still reads V_i).
template <int Dp> constexpr bool kSplitKV = Dp >= 128;
// v46: the unmasked 192-row d96/d128 functions hand their last part-empty wave out as 64-row pieces
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
// v35: zero at load; the last CTA of a launch zeroes it again (and g_ctas_done) for the next one.
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
// ptxas emits it as one UIADD3.64 that keeps the high word (v19's 32-bit add needed a move of it too).
__device__ __forceinline__ uint64_t smem_desc_at(uint64_t base, uint32_t byte_off) {
  return base + (byte_off >> 4);  // one 64-bit add (UIADD3.64); the low word cannot carry
}

// v19's form of smem_desc_at (a 32-bit add on the low word, the high word masked back in), kept for d64: there
// the 64-bit add of smem_desc_at measured 0.6-0.9% slower (v22's header).
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

// O(64x96) += A(registers) * B(smem, MN-major, 64-byte swizzle): d96's P V (v31)
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


// S(64x128) (+)= Q(registers) K^T, K in shared memory (K-major): d64's Q K^T since v38.
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
// S(64x80) (+)= A(smem, K-major) * B(smem, K-major)^T: an 80-key block (v41: d256's long launches)
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
  static_assert(N == 64 || N == 80 || N == 128, "128-key blocks, 64: half a block, 80: d256's long launches (v41)");
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
  // The causal tail (v40; kTail only in the causal functions, where `causal` is 1 + cut): the query blocks cut ..
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
// block's code cost the unmasked ones 3% at s <= 2048 in shared functions), and so does v40's tail (decode_tile).
// causal: 0, or 1 + the tail's cut (the query blocks a head runs last; 0 where s_k <= 4096), read as a flag elsewhere.
template <typename T, int Dp, int kM, int kQkSteps, bool kTmaEpi, int kN = 128, bool kHalfDiag = true>
__global__ void __launch_bounds__(Config<Dp, kM, kN>::kThreads, 1)
    attn_fwd_sm90(const __grid_constant__ CUtensorMap tm_q, const __grid_constant__ CUtensorMap tm_k,
                  const __grid_constant__ CUtensorMap tm_v, const __grid_constant__ CUtensorMap tm_o,
                  T* __restrict__ out, int s_q, int s_k,
                  int h_q, int h_kv, int d, int causal, float scale_log2, int num_m_blocks,
                  int num_bh, int sec, int num_tiles) {
  // Cfg::kBlockM / Cfg::kConsumers through a type alias, not new constexpr locals: extra locals
  // renumber NVVM's values and change the d96/d128/d256 register allocation against v5.
  using Cfg = Config<Dp, kM, kN>;
  constexpr int BN = Config<Dp, kM, kN>::kBlockN;
  constexpr int kStages = Config<Dp, kM, kN>::kStages;
  constexpr int kQBufs = Config<Dp, kM, kN>::kQBufs;
  constexpr int kPanels = Dp / 64;
  constexpr uint32_t kQBytes = Cfg::kBlockM * Dp * 2;
  constexpr uint32_t kKVBytes = BN * Dp * 2;

  extern __shared__ uint8_t smem_raw[];
  uint32_t base = (smem_u32(smem_raw) + 1023) & ~1023u;
  // v32: an opaque copy on 192-row tiles, so ptxas keeps the base in a register there rather than rebuild it in the
  // key loop (in d256 the same cost 2% at s <= 2048)
  if constexpr (kM == 192) asm volatile("mov.b32 %0, %0;" : "+r"(base));
  // v33: the dispatch runs the d96/d128 instantiations without kHalfDiag for unmasked launches only
  // (d64 and d256 keep v32's code: next_nocausal measured them level)
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
      // per consumer warp, after reading the slot; v35: and the V thread where there is one
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
            if constexpr (!kVThread<Dp, kQkSteps, Cfg::kConsumers, kTmaEpi, kHalfDiag>) {  // v35: else thread 32 loads V
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
      // v35: this CTA's last atomicAdd on the counter is done; the launch's last CTA here resets both.
      __threadfence();
      uint32_t grid;
      asm volatile("mov.u32 %0, %%nctaid.x;\n" : "=r"(grid));
      if (atomicAdd(&g_ctas_done, 1u) == grid - 1) {
        atomicExch(&g_tile_counter, 0u);
        atomicExch(&g_ctas_done, 0u);
      }
    } else if constexpr (kVThread<Dp, kQkSteps, Cfg::kConsumers, kTmaEpi, kHalfDiag>) {
    if (threadIdx.x == 32) {
      // v35: V's loads, block by block in thread 0's order, on stage counters of their own
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

    if constexpr ((Dp == 128 || BN < 128) && Cfg::kConsumers == 2) {  // d96, d128 on 128-row tiles; d256 on 80 (v41), 64 (v42) keys
      // FlashAttention-3's intra-warpgroup order: S_{i+1} = Q K_{i+1}^T and O += P_i V_i are
      // issued together, the warpgroup waits for S_{i+1} only (wait_group 1) and runs the
      // softmax of block i+1 while P_i V_i is still on the tensor cores; then it waits for
      // P_i V_i, releases stage i (both of its wgmmas have completed), rescales O and packs
      // P_{i+1}. One S accumulator is live during the softmax (O + S + P: 0 spills at 232
      // registers). d256 on 128-key blocks stays on v6's loop below (with this order it spills 16 bytes); on 80-key
      // blocks (v41) it runs this one: O 128 + S 40 + P 20; on 64-key blocks (v42) O 128 + S 32 + P 16.
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
        // Causal 64-key blocks (v42): where every key of the diagonal-most block lies past this warpgroup's
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
        // v8's epilogue: every S = Q K^T of this tile has completed, the producer may load the next
        // tile's Q. (With the TMA epilogue and two Q buffers, the O store releases it: release_staged. d256's TMA
        // epilogue stages O in a region of its own, so its one Q buffer goes here too, v42.)
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
      // 192-row tiles (d64; d96/d128 since v45): warpgroups whose rows all lie past s_q (the last tile of a head) run
      // no key block; each waits for its blocks' loads and releases their stages itself (session 12: v21's stand-in
      // release by warpgroup 0 let a dead warpgroup's parity tests run two phases ahead of the loads;
      // scripts/protocol_model.py), K and V apart where they are released apart.
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
            if (lane == 0) mbar_arrive(empty_v(s));  // v33: O has its own staging area
          } else {
            mbar_arrive_if(empty(s), lane == 0);  // K and V of the stage (one mbarrier), one arrival per warp
          }
        }
      }
      // v38: d64's Q rows of this warpgroup as A fragments, loaded once a tile (Q has landed: q_full above)
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
        const int s_u = Dp == 64 ? s : __shfl_sync(0xffffffff, s, 0);  // d64: v19's vector-register stage
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
          if constexpr (Dp == 64) {  // v38: Q from registers
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
        if (lane == 0) {  // V (and K unless split); v33: d256's last V stage too
          if constexpr (Dp == 64) mbar_arrive_count(empty(s), releases);
          else mbar_arrive(kSplitKV<Dp> ? empty_v(s) : empty(s));
        }
      }

    }

    if constexpr (kTmaEpi && (kQBufs >= 2 || Dp == 256)) {
      if (n_blocks > 0) {
        if constexpr (Dp == 256) {
          // v33: d256's epilogue through 32 KB of shared memory of its own, beside the one Q buffer and
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
// Causal launches: the light query blocks that go last over every head fill this many waves (v40's tail).
constexpr int kTailWaves = 4;
// ... and only past this many keys (session 32: s_k <= 2048 lost 1.7%, s4096 level).
constexpr int kTailMinSk = 4096;
// Causal launches up to kShortSectionMaxSk keys: sections of 4 MB (v39; session 32: s_k <= 512 +4.8..+5.0% kernel time).
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
    // v44: d256's square short causal launches hold ~64 tiles (half a wave) a section, not a byte count
    if (Dp == 256 && s_k <= kShortSectionMaxSk && s_q == s_k) {
      const int h64 = 64 / num_m_blocks > 1 ? 64 / num_m_blocks : 1;
      sec = h64 < num_bh ? h64 : num_bh;
    }
    // The tail (v40): the lightest query blocks of every head go last, over all heads: as many as fill kTailWaves waves
    // of tiles and hold at most half the heaviest block's keys (the prefill shapes' blocks all see most keys: none)
    const auto blocks = [&](int m) {
      const int end = m * kBlockM + kBlockM + s_k - s_q;
      const int kv_end = end < s_k ? end : s_k;
      return kv_end > 0 ? (kv_end + BN - 1) / BN : 0;
    };
    const int heaviest = blocks(num_m_blocks - 1);
    // v44: not for d256, whose light blocks would re-read every head's long K/V last
    while (Dp != 256 && s_k > kTailMinSk && cut < num_m_blocks - 1 &&
           (cut + 1ll) * num_bh <= static_cast<long long>(kTailWaves) * num_sms() && 2 * blocks(cut) <= heaviest)
      ++cut;
  }
  const int grid = num_tiles < num_sms() ? num_tiles : num_sms();
  int split_from = num_tiles, run_tiles = num_tiles;  // v46: the last part-empty wave in 64-row pieces
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
  // blocks; measured +8% at s <= 1024). Unmasked d64 uses it up to kTmaEpilogueMaxSk keys, d96/d128 at every
  // s_k (v36: long d128 had lost 6-10% on v11's form of it); d256 (O staged in 32 KB of its own since v33) on its
  // 128- and 64-key blocks, i.e. unmasked up to s_k 1024 and causal up to 4096 (v41-v42; v34: every causal s_k).
  constexpr int kTmaEpilogueMaxSk = 2048;
  const bool tma = s_k <= kTmaEpilogueMaxSk;
  // d64 causal: 192-row tiles at every s_q since v28 (v12-v27 ran s_q <= 1024 on 128-row tiles), TMA epilogue at
  // every s_k since v37 (+1% kernel time on the long causal launches)
  if (d <= 64 && causal) return launch<T, 64, 192, 4, true>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);
  // unmasked d64: the instantiations without the skipped / half-width first block
  if (d <= 64)
    return tma ? launch<T, 64, 192, 4, true, 128, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st)
               : launch<T, 64, 192, 4, false, 128, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);
  // d96/d128 on 192x128 tiles (v6's loop, 3 consumers: a third fewer K/V copies per FLOP), else 128-row tiles.
  // Unmasked tiles all cost the same, so a launch takes ceil(tiles / SMs) tile-times: 192 rows where those
  // wave-rows are at most 3.5% above 128's (v30; on the grid: every unmasked s_q 2031-4096 and s_q >= 8175 launch
  // but q8192-k32768's 16 heads). v45: a 192-row tile's dead warpgroups cost nothing, so it counts in live 64-row
  // units, three a tile (the square short launches s495-s1024 move to 192 rows). Causal tiles differ in cost and the
  // scheduler hands out the heavy ones first, so causal launches keep v29's rule: 192 rows where they pad s_q by at
  // most 1% more than 128-row tiles (s_k > 2048 only), and since v45 every square one past s_k 2048 (s4079-s4096: the
  // padding is dead warpgroups).
  const long long bh = static_cast<long long>(b) * h_q, sms = num_sms();
  const long long waves192 = (bh * ((s_q + 63) / 64) + 3 * sms - 1) / (3 * sms) * 192;  // dead warpgroups skip
  const long long waves128 = (bh * ((s_q + 127) / 128) + sms - 1) / sms * 128;
  const bool rows192 = causal ? s_q == s_k || (s_q + 191) / 192 * 192 * 100 <= (s_q + 127) / 128 * 128 * 101
                              : waves192 * 1000 <= waves128 * 1035;
  // v36: long keys (s_k > 2048) on the TMA epilogue too; every other d96/d128 launch below, on 128-key blocks
  if (d <= 128 && !tma && rows192) {
    if (d <= 96)
      return causal ? launch<T, 128, 192, 6, true>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st)
                    : launch<T, 128, 192, 6, true, 128, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);
    return causal ? launch<T, 128, 192, 8, true>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st)
                  : launch<T, 128, 192, 8, true, 128, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);
  }
  // Short keys, unmasked, by the wave rule (v30): TMA epilogue with O staged in the Q buffer, as d64's 192-row tiles.
  if (d <= 128 && !causal && rows192) {
    if (d <= 96) return launch<T, 128, 192, 6, true, 128, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);
    return launch<T, 128, 192, 8, true, 128, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);
  }
  // Every other d96/d128 launch: 128-row tiles at any s_k (v36); unmasked launches run their own functions.
  if (d <= 96)
    return causal ? launch<T, 128, 128, 6, true>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st)
                  : launch<T, 128, 128, 6, true, 128, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);
  if (d <= 128)
    return causal ? launch<T, 128, 128, 8, true>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st)
                  : launch<T, 128, 128, 8, true, 128, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);
  // d256 (v41): 80-key blocks, the FA3 order and the register epilogue for causal launches past s_k 4096 (s8192-s32768
  // +3.5..+11.7% kernel time, s4096 level, s_k <= 2048 -16%: the TMA epilogue and the half-width diagonal block
  // paid there) and unmasked ones past 1024 (s2048 +4..+5%, s1024 -1..-4%, s512 -13..-18%). v42: 64-key blocks, the
  // FA3 order and the TMA epilogue for causal 1024 < s_k <= 4096 (+1..+6%) and unmasked 512 < s_k <= 1024 (+2..+8%);
  // the shortest keep v40's 128-key functions (there the 64-key form read -11..+2%). v43: with warpgroup 0's masked
  // diagonal block skipped, causal 512 < s_k <= 1024 on 64 keys too (s495-s512 read -4..+1% so, and stay).
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
