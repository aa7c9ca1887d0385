"""Where do a kernel's warpgroups wait? Cycles per wait site, measured with clock64() on the GPU.

Usage (repo root, GPU machine):
    python3 -m lab.flash_attn_fwd.scripts.wait_profile [--kernel FILE] [--launches N] [--json OUT]
        SCENARIO [SCENARIO ...]
SCENARIO: an id of the task's grid (`ks scenarios flash_attn_fwd`), e.g. d128-h16-16-s512. Both
kernels are compiled by the harness (its flags and build cache) and called through its ABI helpers.

The script writes an instrumented copy of the kernel: every `mbar_wait(...)`, `named_sync(...)` and
`wgmma_wait<N>()` statement, and every one-shot `mbar_try(...)` test, is wrapped so that thread 0 of
each warpgroup (the producer's issuing thread, each consumer warpgroup's first thread) adds the cycles
it spent there to a counter of that source line; so does the producer's second thread (thread 32,
v35's V loads), whose waits are the rows of role "producer-v", their shares of its own total. It also
counts each warpgroup's whole run (producer / consumer totals) and the tiles and key blocks a consumer
warpgroup handled. The table gives, per wait site, the share of its
warpgroup's cycles, and cycles per tile, so short and long shapes can be compared.

The stamps change the code (clock reads and atomics in the loop), so the script also times the
original and the instrumented kernel (CUDA events, median of the launches) and prints both: the
profile is only as good as that difference is small. It is a diagnostic; speed claims come from
`ks bench` / `ks compare`.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import statistics
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ks_tui.errors import KsError
from ks_tui.task import Task, load_task

REPO = Path(__file__).resolve().parents[3]

KERNEL = REPO / "kernels" / "flash_attn_fwd" / "best" / "kernel.cu"
LINES = 4096  # counter slots, one per source line of the original file
# Pseudo-lines (no real wait sits on lines 1-4 of the file: they are the header comment; instrument() checks).
CONSUMER_TOTAL, PRODUCER_TOTAL, TILES, V_TOTAL = 1, 2, 3, 4
# The producer's second thread (v35: V's loads in the d96 128-row functions) is stamped too; its waits are the
# lines of its branch, which opens on the line holding this text.
V_THREAD_BRANCH = "threadIdx.x == 32"

PRELUDE = r"""
// ---- wait profile (scripts/wait_profile.py): cycles per source line, thread 0 of each warpgroup ----
__device__ unsigned long long g_ks_cycles[%(lines)d];
__device__ unsigned long long g_ks_count[%(lines)d];
#define KS_TIMED(line, stmt)                                                               \
  do {                                                                                     \
    const long long ks_t0 = clock64();                                                     \
    stmt;                                                                                  \
    if ((threadIdx.x & 127) == 0 || threadIdx.x == 32) {                                   \
      atomicAdd(&g_ks_cycles[line], static_cast<unsigned long long>(clock64() - ks_t0));   \
      atomicAdd(&g_ks_count[line], 1ull);                                                  \
    }                                                                                      \
  } while (0)
// The same for a test that returns whether the phase had completed (mbar_try): an expression.
template <typename F>
__device__ __forceinline__ bool ks_timed_test(int line, F test) {
  const long long ks_t0 = clock64();
  const bool ok = test();
  if ((threadIdx.x & 127) == 0 || threadIdx.x == 32) {
    atomicAdd(&g_ks_cycles[line], static_cast<unsigned long long>(clock64() - ks_t0));
    atomicAdd(&g_ks_count[line], 1ull);
  }
  return ok;
}
"""

EPILOGUE = r"""
extern "C" int ks_wait_profile(unsigned long long* cycles, unsigned long long* counts, int reset) {
  if (reset) {
    static unsigned long long zeros[%(lines)d] = {};
    if (cudaMemcpyToSymbol(g_ks_cycles, zeros, sizeof(zeros)) != cudaSuccess) return 1;
    if (cudaMemcpyToSymbol(g_ks_count, zeros, sizeof(zeros)) != cudaSuccess) return 1;
    return 0;
  }
  if (cudaMemcpyFromSymbol(cycles, g_ks_cycles, sizeof(unsigned long long) * %(lines)d) != cudaSuccess) return 1;
  if (cudaMemcpyFromSymbol(counts, g_ks_count, sizeof(unsigned long long) * %(lines)d) != cudaSuccess) return 1;
  return 0;
}
"""

WAIT_RE = re.compile(r"\b(mbar_wait\([^;]*\)|named_sync\([^;]*\)|wgmma_wait<\d+>\(\));")
# A one-shot test used as a value (`const bool k_ready = mbar_try(full_k(s), parity);`): one level of
# parentheses inside its argument list.
TEST_RE = re.compile(r"\bmbar_try\(((?:[^()]|\([^()]*\))*)\)")

# Where the totals go: (anchor, text inserted before it, text inserted after it). Each anchor must occur
# exactly once in the kernel.
# (the producer warpgroup's return: a two-CTA cluster variant puts a cluster barrier on the line before it)
PRODUCER_ANCHOR = "    return;\n  }\n\n  // --------------------------------- consumers"
ANCHORS = [
    ("__device__ unsigned int g_tile_counter;\n", "", PRELUDE % {"lines": LINES}),
    ('    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\\n" ::"n"(Cfg::kProducerRegs));\n', "",
     "    const long long ks_p0 = clock64();\n"),
    (PRODUCER_ANCHOR,
     "    if (threadIdx.x == 0 || threadIdx.x == 32)\n"
     "      atomicAdd(&g_ks_cycles[threadIdx.x == 0 ? %d : %d], static_cast<unsigned long long>(clock64() - ks_p0));\n"
     % (PRODUCER_TOTAL, V_TOTAL), ""),
    ('  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\\n" ::"n"(Cfg::kConsumerRegs));\n', "",
     "  const long long ks_c0 = clock64();\n"),
    ("    const int n_blocks = w.n_blocks;\n", "",
     "    if ((threadIdx.x & 127) == 0) { atomicAdd(&g_ks_count[%d], 1ull); "
     "atomicAdd(&g_ks_cycles[%d], static_cast<unsigned long long>(n_blocks)); }\n" % (TILES, TILES)),
    ("  // The last O stores must have read shared memory (and finished) before the CTA exits.\n",
     "  if ((threadIdx.x & 127) == 0)\n"
     "    atomicAdd(&g_ks_cycles[%d], static_cast<unsigned long long>(clock64() - ks_c0));\n" % CONSUMER_TOTAL, ""),
]


class ProfileError(Exception):
    pass


def instrument(src: str) -> tuple[str, dict[int, tuple[str, str]]]:
    """The instrumented source and {original line: (role, its code)} for every wrapped wait; the role
    is "consumer" for lines in the consumers' section of the kernel, "producer-v" for the producer's second
    thread's branch (V_THREAD_BRANCH), else "producer"."""
    for anchor, _, _ in ANCHORS:
        if src.count(anchor) != 1:
            raise ProfileError(f"anchor not found exactly once: {anchor.strip()[:70]!r}")
    if src.count("\n") >= LINES:
        raise ProfileError(f"the kernel has more than {LINES} lines (one counter per line)")
    consumers_from = src[: src.index(PRODUCER_ANCHOR)].count("\n") + 3
    producer_src = src[: src.index(PRODUCER_ANCHOR)]
    v_from = (producer_src[: producer_src.index(V_THREAD_BRANCH)].count("\n") + 1
              if V_THREAD_BRANCH in producer_src else consumers_from)
    sites: dict[int, tuple[str, str]] = {}
    out = []
    for no, line in enumerate(src.splitlines(keepends=True), start=1):
        if "__device__" in line or "template <" in line or line.lstrip().startswith("//"):
            out.append(line)
            continue
        new, n = WAIT_RE.subn(lambda m: f"KS_TIMED({no}, {m.group(1)});", line)
        new, n_tests = TEST_RE.subn(lambda m: f"ks_timed_test({no}, [&] {{ return mbar_try({m.group(1)}); }})", new)
        n += n_tests
        if n > 1:
            raise ProfileError(f"line {no} holds {n} waits; one per line is needed to tell them apart")
        if n and no <= V_TOTAL:
            raise ProfileError(f"line {no} holds a wait, but lines 1-{V_TOTAL} count the totals")
        if n:
            role = "consumer" if no >= consumers_from else "producer-v" if no > v_from else "producer"
            sites[no] = (role, line.strip())
        out.append(new)
    text = "".join(out)
    for anchor, before, after in ANCHORS:
        text = text.replace(anchor, before + anchor + after)
    return text + EPILOGUE % {"lines": LINES}, sites


def build(task: Task, source: Path) -> ctypes.CDLL:
    """The harness's build of `source` (the task's compiler, flags and arch; cached).

    Built under the task's kernel name, as the bench builds it: the name is part of the compile command and
    so of the cache key, and under its own name a file prebuilt here missed the cache when `ks bench` or
    compare.py came to it (session 20: each candidate compiled twice, ~50 s of device time each)."""
    from ks_tui.harness.build import build as harness_build

    record, lib = harness_build(source, language=task.language, compiler=task.build.compiler,
                                flags=task.build.flags, arch=task.build.arch, shown_name=task.kernel.name, timeout=900)
    if not record["ok"] or lib is None:
        raise ProfileError(f"{source} does not compile:\n{record['log'][-3000:]}")
    return ctypes.CDLL(str(lib))


def run_scenario(libs: dict, p: dict, launches: int) -> dict:
    """Median time of each kernel (CUDA events), then the stamped kernel's counters over `launches`."""
    import torch

    from ks_tui.harness import attention

    inputs = attention.make_inputs(p, torch.Generator(device="cuda").manual_seed(0), device="cuda")
    out = attention.make_output(p, inputs)
    stream = torch.cuda.current_stream().cuda_stream

    def call(lib):
        rc = attention.call_gpu(lib.flash_attn_fwd, inputs, out, p, stream)
        if rc:
            raise ProfileError(f"the kernel returned {rc}")

    times = {}
    for name, lib in libs.items():
        for _ in range(3):
            call(lib)
        ms = []
        for _ in range(launches):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            call(lib)
            e1.record()
            e1.synchronize()
            ms.append(e0.elapsed_time(e1))
        times[name] = statistics.median(ms) * 1e3
    # The counters of the instrumented kernel over `launches` more launches, from zero.
    lib = libs["stamped"]
    arr = ctypes.c_ulonglong * LINES
    cycles, counts = arr(), arr()
    if lib.ks_wait_profile(cycles, counts, 1):
        raise ProfileError("could not reset the counters")
    for _ in range(launches):
        call(lib)
    torch.cuda.synchronize()
    if lib.ks_wait_profile(cycles, counts, 0):
        raise ProfileError("could not read the counters")
    return {"us": times, "cycles": list(cycles), "counts": list(counts)}


def report(sid: str, p: dict, res: dict, sites: dict[int, tuple[str, str]], launches: int) -> tuple[str, dict]:
    cyc, cnt = res["cycles"], res["counts"]
    c_total, p_total, v_total = cyc[CONSUMER_TOTAL], cyc[PRODUCER_TOTAL], cyc[V_TOTAL]
    tiles, blocks = max(cnt[TILES], 1), cyc[TILES]
    rows = [{"line": no, "role": role, "code": code, "calls": cnt[no], "cycles": cyc[no]}
            for no, (role, code) in sorted(sites.items()) if cnt[no]]
    lines = [f"== {sid}  (b={p['b']})  plain {res['us']['plain']:.1f} us, stamped {res['us']['stamped']:.1f} us"
             f"  | consumer warpgroup-tiles {tiles // launches}, key blocks per tile {blocks / tiles:.2f}",
             f"   consumer total {c_total / tiles:.0f} cycles per warpgroup-tile; producer total "
             f"{p_total / launches:.3g} cycles per launch (all CTAs)",
             f"   {'role':<10} {'line':>5} {'calls/tile':>10} {'cyc/call':>9} {'cyc/tile':>9} {'share':>6}  code"
             " (share: of the role's total cycles)"]
    for r in sorted(rows, key=lambda r: (r["role"], -r["cycles"])):
        share_of = {"consumer": c_total, "producer": p_total}.get(r["role"], v_total)
        lines.append(f"   {r['role']:<10} {r['line']:>5} {r['calls'] / tiles:>10.2f} {r['cycles'] / r['calls']:>9.0f} "
                     f"{r['cycles'] / tiles:>9.0f} {100 * r['cycles'] / max(share_of, 1):>5.1f}%  {r['code'][:90]}")
    for role, total in (("consumer", c_total), ("producer", p_total), ("producer-v", v_total)):
        if role == "producer-v" and not any(r["role"] == role for r in rows):
            continue  # no second producer thread in this launch's function
        waited = sum(r["cycles"] for r in rows if r["role"] == role)
        lines.append(f"   {role}: {100 * waited / max(total, 1):.1f}% of its cycles in these waits, "
                     f"{100 - 100 * waited / max(total, 1):.1f}% elsewhere (issue, softmax, epilogue, stamps)")
    return "\n".join(lines), {"scenario": sid, "params": p, "us": res["us"], "consumer_total": c_total,
                              "producer_total": p_total, "producer_v_total": v_total,
                              "tiles": tiles, "blocks": blocks, "launches": launches, "sites": rows}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenarios", nargs="+")
    ap.add_argument("--kernel", type=Path, default=KERNEL)
    ap.add_argument("--launches", type=int, default=20)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--emit", type=Path, help="only write the instrumented source here (no GPU needed)")
    args = ap.parse_args(argv)
    try:
        task = load_task("flash_attn_fwd", REPO)
        scenarios = task.select(ids=args.scenarios)
        text, sites = instrument(args.kernel.read_text())
        work = Path(os.environ.get("OUT", "/tmp")) / "wait_profile"
        work.mkdir(parents=True, exist_ok=True)
        stamped = args.emit or work / "stamped.cu"
        stamped.write_text(text)
        if args.emit:
            print(f"{stamped}: {len(sites)} wait sites")
            return 0
        with ThreadPoolExecutor(2) as pool:  # two nvcc runs at once
            futures = {"plain": pool.submit(build, task, args.kernel), "stamped": pool.submit(build, task, stamped)}
            libs = {name: f.result() for name, f in futures.items()}
        docs = []
        for sc in scenarios:
            table, doc = report(sc.id, sc.params, run_scenario(libs, sc.params, args.launches), sites, args.launches)
            print(table, flush=True)
            docs.append(doc)
        if args.json:
            args.json.write_text(json.dumps({"kernel": str(args.kernel), "results": docs}, indent=1))
    except (ProfileError, KsError, OSError) as e:
        print(f"wait_profile.py: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
