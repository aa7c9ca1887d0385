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
#   (short128 0.879; q128-k512 itself 18% slower). next_l2pf's edits stay below: next_l2pf1 is made from them.


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


# next_d256tma (session 19, an edit of v33): d256 on the TMA epilogue at every s_k. v33 stages d256's O in 32 KB of its
# own and releases V in the loop, so the long launches' register epilogue no longer buys the next tile an earlier V
# load; and the unmasked TMA-epilogue key loop is 906 instructions against the register epilogue's 920 (no S2UR, as
# session 18's next_smembase found for d256). d128's loss with the TMA epilogue at long keys (~6%, v10/v10b) was in
# functions that stage O in the Q buffer. The 4 non-TMA d256 functions go (40). Predicted: d256 s_k > 2048 +0.5..+2%
# kernel time (a per tile 2.2-2.4 us against 3.4: ~1 us of a 95-380 us tile, plus the loop), s_k <= 2048 SASS SAME.
D256TMA_EDITS = [
    ("  if (causal) return KS_LAUNCH(256, 128, 16);\n"
     "  // unmasked d256: the instantiations without the half-width diagonal block\n"
     "  return tma ? launch<T, 256, 128, 16, true, 128, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st)\n"
     "             : launch<T, 256, 128, 16, false, 128, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);\n",
     "  // next_d256tma: d256 on the TMA epilogue (O staged in its own 32 KB) at every s_k\n"
     "  if (causal) return launch<T, 256, 128, 16, true>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);\n"
     "  // unmasked d256: the instantiations without the half-width diagonal block\n"
     "  return launch<T, 256, 128, 16, true, 128, false>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);\n"),
]

# next_d256tmac (session 20, an edit of v33): next_d256tma for the causal d256 launches only. Session 20 measured
# next_d256tma on d256l twice (call 2, 1 round; call 3, 2 rounds, results/2026-12-04-h200-s20-call3-compare.txt):
# kernel time causal 1.022 / 1.018 (s4096-s8192 +0.1..+7.5%, s >= 16384 level), unmasked 0.986 / 0.977 (s >= 8192
# -1.5..-4.1%). Unmasked long d256 keeps the register epilogue; the 2 causal non-TMA d256 functions go (42).
# Predicted: causal d256 s_k > 2048 +1..+2% kernel time, every other launch SASS SAME.
D256TMAC_EDITS = [
    ("  if (causal) return KS_LAUNCH(256, 128, 16);\n",
     "  // next_d256tmac: causal d256 on the TMA epilogue (O staged in its own 32 KB) at every s_k\n"
     "  if (causal) return launch<T, 256, 128, 16, true>(q, k, v, o, b, s_q, s_k, h_q, h_kv, d, causal, scale, dtype, st);\n"),
]

# probe_d256smem (session 20, an edit of v33; a probe, correct output): the register-epilogue d256 functions
# allocate the TMA epilogue's 32 KB O region too, and leave it unused. next_d256tma's unmasked long launches ran
# 2.3% slower on the TMA epilogue (s >= 8192: -1.5..-4.1%) although its key loop is smaller (906 against 920
# instructions), and a per-block loss at 64-256 blocks a tile is not in the epilogue. The 32 KB leave the SM about
# 32 KB less L1 (d256 then holds ~224 of 228 KB as shared memory). If this probe costs the unmasked long launches
# what the TMA epilogue cost them, the carveout is the cause; if it is level, the cause is in the TMA function's code.
D256SMEM_EDITS = [
    ("template <int Dp, bool kTmaEpi> constexpr uint32_t kOStageBytes = Dp == 256 && kTmaEpi ? 32768u : 0u;",
     "// probe_d256smem: every d256 function allocates the 32 KB O region (the register epilogue leaves it unused)\n"
     "template <int Dp, bool kTmaEpi> constexpr uint32_t kOStageBytes = Dp == 256 ? 32768u : 0u;"),
]

# next_l2pf (session 19, an edit of v33): the producer prefetches K/V into L2 two key blocks ahead of its loads
# (cp.async.bulk.prefetch.tensor: the TMA unit fetches the box into L2, nothing lands in shared memory). With two
# K/V stages the producer requests a block about one block-time before it is used, and at a tile's start the first
# block's request waits for a stage the previous tile still reads. Where K/V come from HBM that exposes its latency:
# the prefill shapes with one or two tiles per head run a tile-wave in 11.6 us (q128-k512) and 16.2 us
# (q256-k1024) where the square shapes' tiles, which share each head's blocks through L2, take 7.5 and 13.5 us
# (families.py data, v33's grid); and every short launch starts its tiles on blocks no tile has read yet.
# Here the producer prefetches a tile's first two blocks as soon as it has loaded the tile's Q, and block i + 2 when
# it loads block i. Predicted: q128-k512 / q256-k1024 +3..+10%, short launches 0..+2%, long ones level (their
# blocks are L2 hits: the prefetch is a few TMA instructions a block on an idle thread).
L2PF_EDITS = [
    ("// 4-d tiled copy shared -> global (bulk-group completion)",
     "// next_l2pf: a 4-d box of a tensor into L2 only (no shared memory, no mbarrier): a hint the loads then hit.\n"
     "__device__ __forceinline__ void tma_prefetch_l2(const CUtensorMap* map, int c0, int c1, int c2, int c3) {\n"
     "  asm volatile(\"cp.async.bulk.prefetch.tensor.4d.L2.global.tile [%0, {%1, %2, %3, %4}];\\n\" ::\n"
     "                   \"l\"(reinterpret_cast<uint64_t>(map)), \"r\"(c0), \"r\"(c1), \"r\"(c2), \"r\"(c3)\n"
     "               : \"memory\");\n}\n\n"
     "// 4-d tiled copy shared -> global (bulk-group completion)"),
    ("          ring = (ring & 3u) | ((ring + 4) & 12u);\n          for (int i = 0; i < w.n_blocks; ++i) {\n"
     "            const int n = w.n_blocks - 1 - i;  // masked (diagonal / tail) tiles first\n",
     "          ring = (ring & 3u) | ((ring + 4) & 12u);\n"
     "          // next_l2pf: key block i (in load order) into L2, kL2Ahead blocks before its load\n"
     "          constexpr int kL2Ahead = 2;\n"
     "          auto prefetch = [&](int i) {\n"
     "            const int n = w.n_blocks - 1 - i;\n"
     "#pragma unroll\n"
     "            for (int p = 0; p < kPanels; ++p) tma_prefetch_l2(&tm_k, p * 64, kv_head, n * BN, w.batch);\n"
     "#pragma unroll(kV64<Dp, kQkSteps> ? 1 : 4)\n"
     "            for (int p = 0; p < kVPanels<Dp, kQkSteps>; ++p)\n"
     "              tma_prefetch_l2(&tm_v, p * static_cast<int>(kVRowBytes<Dp, kQkSteps> / 2), kv_head, n * BN, w.batch);\n"
     "          };\n"
     "          for (int i = 0; i < kL2Ahead && i < w.n_blocks; ++i) prefetch(i);\n"
     "          for (int i = 0; i < w.n_blocks; ++i) {\n"
     "            const int n = w.n_blocks - 1 - i;  // masked (diagonal / tail) tiles first\n"),
    ("                       n * BN, w.batch);\n            if (++stage == kStages) { stage = 0; phase ^= 1; }\n          }\n",
     "                       n * BN, w.batch);\n            if (i + kL2Ahead < w.n_blocks) prefetch(i + kL2Ahead);\n"
     "            if (++stage == kStages) { stage = 0; phase ^= 1; }\n          }\n"),
]

# next_l2pf1 (session 20, an edit of v33): next_l2pf gated to launches with one query tile per (batch, head).
# Written from a misreading: call 1's speedup column showed next_l2pf +17% / +46% on q128-k512 and its causal form,
# but that run had timed cuDNN 38% / 73% slow there; the kernel itself was 18% slower (93.5 -> 110.4 us). The gate
# was to keep the prefetch where each key block is read once, from HBM. Measured in call 2 (1 round): q128-k512
# 93.1 -> 109.4 us, and the 40 d128 launches where the gate is off 0.973 kernel time (their consumers' key loops
# are the same instructions). Lost; kept here for the 2-round re-read of that gate-off cost (JOURNAL.md, session 20).
L2PF1_EDITS = [e if i != 1 else (e[0], e[1].replace(
    "          auto prefetch = [&](int i) {\n",
    "          auto prefetch = [&](int i) {\n"
    "            // next_l2pf1: only where each key block comes from HBM once (never with 192-row tiles: their\n"
    "            // 32-register producer spilled 4 B with the test)\n"
    "            if (Cfg::kBlockM != 128 || num_m_blocks != 1) return;\n"))
    for i, e in enumerate(L2PF_EDITS)]
assert L2PF1_EDITS[1] != L2PF_EDITS[1]

# next_prodloop1 (session 21, an edit of v33; compile-checked only): the producer's key loop kept rolled. A probe of
# session 20's reading that producer code costs the consumers even where it does not run (next_l2pf1's gate-off
# d128 launches 0.973, 1 round): ptxas unrolls this loop, so every function carries several copies of it.
PRODLOOP1_EDITS = [(
    "          for (int i = 0; i < w.n_blocks; ++i) {\n",
    "#pragma unroll 1\n"
    "          for (int i = 0; i < w.n_blocks; ++i) {  // next_prodloop1: rolled (one copy of the load code)\n")]

# name -> (base file in best/, header lines, [(old, new) or (old, new, count), ...])
VARIANTS: dict[str, tuple[str, str, list[tuple]]] = {
    "next_d256tma": ("kernel.cu", "// next_d256tma: v33 with d256 on the TMA epilogue at every s_k.\n", D256TMA_EDITS),
    "next_d256tmac": ("kernel.cu", "// next_d256tmac: v33 with causal d256 on the TMA epilogue at every s_k.\n", D256TMAC_EDITS),
    "probe_d256smem": ("kernel.cu", "// probe_d256smem: v33 with the register-epilogue d256 functions allocating the 32 KB O region.\n",
                       D256SMEM_EDITS),
    "next_prodloop1": ("kernel.cu", "// next_prodloop1: v33 with the producer's key loop kept rolled.\n", PRODLOOP1_EDITS),
    "next_l2pf1": ("kernel.cu", "// next_l2pf1: next_l2pf only in launches with one query tile per (batch, head).\n", L2PF1_EDITS),
    "probe_rows192": ("kernel.cu", "// probe_rows192: best/kernel.cu with every unmasked d96/d128 launch on 192-row tiles.\n",
                      ROWS192_EDITS),
    "probe_samekv": ("kernel.cu", "// probe_samekv (wrong output by design): best/kernel.cu loading every key block from block 0.\n",
                     SAMEKV_EDITS),
    "probe_noload": ("kernel.cu", "// probe_noload (wrong output by design): best/kernel.cu loading a tile's first kStages key blocks only.\n",
                     NOLOAD_EDITS),
}

# Kernel instantiations of a candidate whose count is not best/kernel.cu's (tests/flash/test_kernel_build.py checks it).
INSTANTIATIONS: dict[str, int] = {"next_d256tma": 40, "next_d256tmac": 42}


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
