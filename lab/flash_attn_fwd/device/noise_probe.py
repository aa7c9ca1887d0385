"""Which bench design gives the steadiest per-scenario speedup at the same GPU time (issue 63), in one process.

    PYTHONPATH=$PWD python3 lab/flash_attn_fwd/device/noise_probe.py --out $OUT/noise_probe.json \
        [--scenarios ID,ID] [--source kernels/flash_attn_fwd/best/kernel.cu] [--repeats 4] [--seconds 150]

The harness's own Runner builds, checks and benches the scenarios; GpuTimer.time_interleaved (time_cpu for a CPU
task) is replaced in this process, so the probe times exactly the callables the bench would. Per scenario and
repeat: one warm-up per function gives the call counts (as `interleaved` derives them), then each variant, in an
order rotating across repeats, times them all with those counts:
  V0 the bench as it is: `rounds` blocks of each function in turn, median of all calls
  V1 V0 with one more call leading each block, left out of the median (H1: the first call after a sync is slow)
  V2 16 rounds: the same calls in smaller blocks (H2: clock drift between the kernel's and the libraries' blocks)
  V3 `rounds` blocks, each alternating call by call: kernel, library 1, library 2, ... (H2, strongest)
Every call is preceded by the L2 flush and timed by CUDA events (GpuTimer._timed). The JSON holds every sample:
per scenario, repeat and variant, its blocks in the order run, each with its function (for V3 one per call), `ms`
in call order (position in the block; a V1 block's first is the lead), the SM clock read after it and its wall
time; and a summary: per variant, how far each scenario's speedup moves across repeats ((max-min)/mean), GPU
seconds, first-call ratios, the clock gap between the kernel's and the fastest library's blocks.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
VARIANTS = ("V0", "V1", "V2", "V3")
FINE_ROUNDS = 16  # V2
GOAL_PCT = 3.0  # every scenario's speedup within 3% run to run (issue 63)

# Spread over the families and lengths: short (S=512/1024) and long (S>=8192), causal or not, prefill, ragged,
# fp16; the first three are the worst of the two noise pairs of 2026-12-07 (results/2026-12-07-h100-inner-loop).
# Short and long alternate, so a run cut by --seconds still covers both.
DEFAULT_SCENARIOS = [
    "d128-h16-16-q256-k1024-causal", "d96-h16-16-s32768", "d128-h64-8-s2048", "d256-h16-4-s32768",
    "d128-h16-16-q128-k512-causal", "d128-h16-16-q8192-k32768-causal", "d96-h16-16-s512", "d128-h32-8-s16384-causal",
    "d64-h32-32-s512", "d64-h32-8-s8192", "d128-h16-16-s1024-fp16", "d128-h32-1-s16384",
    "d256-h8-8-s495-causal", "d128-h16-16-s8175-causal", "d128-h16-16-s512", "d256-h8-8-s8192-causal",
    "d64-h32-32-s1024-causal", "d128-h16-16-q4096-k16384-causal", "d128-h32-8-s1024", "d128-h16-16-s32768-causal",
    "d256-h16-4-s512-causal", "d128-h16-16-q2048-k8192", "d128-h64-8-s4096-causal", "d256-h8-8-s2048",
]


class OutOfTime(Exception):
    """--seconds ran out: stops the Runner; what was probed is kept."""


class CallFailed(Exception):
    def __init__(self, name: str, error: Exception):
        super().__init__(f"{name or 'kernel'}: {type(error).__name__}: {error}")
        self.name, self.error = name, error


# ------------------------------------------------------------ scheduling (pure)

def variant_order(repeat: int) -> list[str]:
    k = repeat % len(VARIANTS)
    return list(VARIANTS[k:] + VARIANTS[:k])


def per_round(reps: int, rounds: int, r: int) -> int:
    """Calls in round r, as `interleaved` splits them."""
    return reps // rounds + (1 if r < reps % rounds else 0)


def plan(variant: str, names: list[str], reps: dict[str, int], rounds: int) -> list[dict]:
    """The blocks of one variant, in order: {"f": name, "n": calls, "lead": 0|1} or, for V3, {"f": [name per call]}."""
    if variant == "V2":
        rounds = FINE_ROUNDS
    rounds = max(1, rounds)
    blocks: list[dict] = []
    for r in range(rounds):
        shift = r % max(1, len(names))
        order = names[shift:] + names[:shift]
        counts = {name: per_round(reps[name], rounds, r) for name in order}
        if variant == "V3":
            slots = [name for j in range(max(counts.values(), default=0)) for name in order if j < counts[name]]
            if slots:
                blocks.append({"f": slots, "n": len(slots), "lead": 0})
        else:
            blocks += [{"f": name, "n": counts[name], "lead": int(variant == "V1")} for name in order if counts[name]]
    return blocks


def counted(block: dict) -> list[tuple[str, int, float]]:
    """(function, position among its calls in the block, ms) of the calls that count (a V1 lead does not)."""
    out, pos = [], {}
    names = block["f"] if isinstance(block["f"], list) else [block["f"]] * len(block["ms"])
    for i, (name, ms) in enumerate(zip(names, block["ms"])):
        p = pos.get(name, 0)
        pos[name] = p + 1
        if i >= block.get("lead", 0):
            out.append((name, p, ms))
    return out


def positions(block: dict) -> list[tuple[str, int, float]]:
    """Every call of the block with its position among its function's calls (a V1 lead is position 0)."""
    return counted({**block, "lead": 0})


# ------------------------------------------------------------ statistics (pure)

def speedups(medians: dict[str, float]) -> dict:
    """The kernel ("") against the fastest library and against fa3."""
    k = medians.get("")
    libs = {n: t for n, t in medians.items() if n}
    if not k or not libs:
        return {"kernel_ms": k, "best": None, "speedup": None, "vs_fa3": None}
    best = min(libs, key=libs.get)
    return {"kernel_ms": k, "best": best, "speedup": libs[best] / k,
            "vs_fa3": libs["fa3"] / k if libs.get("fa3") else None}


def medians_of(blocks: list[dict]) -> dict[str, float]:
    got: dict[str, list[float]] = {}
    for b in blocks:
        for name, _, ms in counted(b):
            got.setdefault(name, []).append(ms)
    return {n: statistics.median(v) for n, v in got.items()}


def spread_pct(values: list) -> float | None:
    v = [x for x in values if x]
    if len(v) < 2:
        return None
    return 100 * (max(v) - min(v)) / statistics.fmean(v)


def _dist(values: list[float]) -> dict:
    v = sorted(values)
    if not v:
        return {"n": 0}
    return {"n": len(v), "median": statistics.median(v), "p95": v[math.ceil(0.95 * len(v)) - 1], "max": v[-1],
            "over_3pct": sum(x > GOAL_PCT for x in v)}


def first_call_ratio(blocks: list[dict], counted_only: bool = False) -> list[float]:
    """Per function: median of its first call in each block over the median of its other calls (H1). counted_only:
    among the calls that count (for V1: the call after the lead)."""
    first: dict[str, list[float]] = {}
    rest: dict[str, list[float]] = {}
    for b in blocks:
        seen = set()
        for name, _, ms in (counted(b) if counted_only else positions(b)):
            (rest if name in seen else first).setdefault(name, []).append(ms)
            seen.add(name)
    return [statistics.median(first[n]) / statistics.median(rest[n]) for n in first if rest.get(n)]


def _ratio_dist(ratios: list[float]) -> dict:
    r = sorted(ratios)
    return {"n": len(r), "median": statistics.median(r) if r else None,
            "share_over_1pct": round(sum(x > 1.01 for x in r) / len(r), 3) if r else None}


def clock_gap_pct(blocks: list[dict], best: str | None) -> float | None:
    """|mean SM clock read after the kernel's blocks / after the fastest library's - 1| in % (0 for V3 by design)."""
    def mean_mhz(name):
        got = [b["mhz"] for b in blocks if b.get("mhz") and (b["f"] == name or isinstance(b["f"], list))]
        return statistics.fmean(got) if got else None
    k, lib = mean_mhz(""), mean_mhz(best) if best else None
    return 100 * abs(k / lib - 1) if k and lib else None


def summarize(scenarios: list[dict]) -> dict:
    """Per variant over scenarios: the repeat-to-repeat spread of the speedup (and vs fa3, and the kernel's time),
    GPU seconds, first-call ratios and the clock gap between the kernel's and the fastest library's blocks."""
    out: dict = {}
    per_scenario: dict[str, dict] = {}
    for v in VARIANTS:
        spread: dict[str, list[float]] = {"speedup": [], "vs_fa3": [], "kernel_ms": []}
        worst = (None, -1.0)
        ratios, counted_ratios, gaps, gpu_s, calls = [], [], [], 0.0, 0
        for sc in scenarios:
            runs = [rep["variants"][v] for rep in sc["repeats"] if v in rep["variants"]]
            for key in spread:
                s = spread_pct([r[key] for r in runs])
                per_scenario.setdefault(sc["id"], {}).setdefault(v, {})[key] = None if s is None else round(s, 3)
                if s is not None:
                    spread[key].append(s)
                    if key == "speedup" and s > worst[1]:
                        worst = (sc["id"], s)
            for r in runs:
                ratios += first_call_ratio(r["blocks"])
                counted_ratios += first_call_ratio(r["blocks"], counted_only=True)
                g = clock_gap_pct(r["blocks"], r["best"])
                if g is not None:
                    gaps.append(g)
                gpu_s += r["gpu_s"]
                calls += sum(len(b["ms"]) for b in r["blocks"])
        out[v] = {**{f"{k}_spread_pct": _dist(x) for k, x in spread.items()},
                  "worst": worst[0], "gpu_s": round(gpu_s, 3), "calls": calls,
                  "first_call_ratio": _ratio_dist(ratios), "first_counted_ratio": _ratio_dist(counted_ratios),
                  "clock_gap_pct_median": statistics.median(gaps) if gaps else None}
    return {"variants": out, "per_scenario": per_scenario}


def _num(x, digits=2, width=6) -> str:
    return f"{x:{width}.{digits}f}" if x is not None else "-".rjust(width)


def table(summary: dict) -> str:
    """One line per variant: speedup spread across repeats (% of its mean) over scenarios, and the costs."""
    rows = ["spread: (max-min)/mean of a scenario's speedup over the repeats, in %; 1st/rest: a block's first call over "
            "the others (cnt: of the calls that count; V1's first is its lead); clock gap: kernel's blocks vs the "
            "fastest library's",
            "variant scen | spread %: median   p95    max  >3% | vs fa3: median   p95  >3% |  GPU s  calls | "
            "1st/rest  cnt 1st | clock gap %"]
    for v, s in summary["variants"].items():
        a, f = s["speedup_spread_pct"], s["vs_fa3_spread_pct"]
        rows.append(f"{v:7} {a['n']:4} |          {_num(a.get('median'))} {_num(a.get('p95'))} {_num(a.get('max'))} "
                    f"{a.get('over_3pct', '-'):>4} |         {_num(f.get('median'))} {_num(f.get('p95'))} "
                    f"{f.get('over_3pct', '-'):>4} | {s['gpu_s']:6.1f} {s['calls']:6} | "
                    f"{_num(s['first_call_ratio']['median'], 4, 8)} {_num(s['first_counted_ratio']['median'], 4, 8)} | "
                    f"{_num(s['clock_gap_pct_median'], 2, 11)}")
    return "\n".join(rows)


# ------------------------------------------------------------ timing one scenario

class Probe:
    """Holds the records and the clock; `scenario(...)` times one scenario's functions with every variant."""

    def __init__(self, repeats: int, deadline: float, out: Path | None):
        self.repeats, self.deadline, self.out = repeats, deadline, out
        self.scenarios: list[dict] = []
        self.read_clock = None  # () -> (SM MHz, NVML clock-event reason bits), set on a GPU with NVML
        self.notes: list[str] = []
        self.meta: dict = {}

    def time_block(self, timed_block, calls: dict, block: dict) -> dict:
        """Run one planned block through the harness's timer; the record with its samples (ms)."""
        names = block["f"] if isinstance(block["f"], list) else [block["f"]] * (block["n"] + block["lead"])
        if isinstance(block["f"], list):
            seen: dict[str, int] = {}
            idx = []
            for name in names:
                idx.append(seen.get(name, 0))
                seen[name] = idx[-1] + 1

            def call(i):  # call by call: the i-th slot's function, its own input-set rotation
                try:
                    calls[names[i]](idx[i])
                except Exception as e:
                    raise CallFailed(names[i], e) from e
        else:
            call = calls[block["f"]]  # carries ks_name: the harness's hidden-work gaps are kept as in the bench
        t0 = time.perf_counter()
        try:
            secs = timed_block(call, len(names))
        except CallFailed:
            raise
        except Exception as e:
            if isinstance(block["f"], list):  # an error at the sync of a mixed block names no function: a crash
                raise
            raise CallFailed(block["f"], e) from e
        rec = {"f": block["f"], "lead": block["lead"], "ms": [round(s * 1e3, 5) for s in secs],
               "wall_ms": round((time.perf_counter() - t0) * 1e3, 3), "mhz": None, "clock_reasons": None}
        if self.read_clock is not None:
            try:
                rec["mhz"], rec["clock_reasons"] = self.read_clock()
            except Exception:  # a missing reading, not a failed probe
                pass
        return rec

    def scenario(self, sid: str, funcs: dict, timing, rounds: int, timed_block) -> tuple[dict, dict]:
        """All repeats of one scenario. Returns the bench's answer (V0's samples) and the errors, as interleaved."""
        from ks_tui.harness.timing import _reps_for, _summary

        calls = {}
        for name, fs in funcs.items():
            def call(i, fs=fs):
                fs[i % len(fs)]()
            call.ks_name = name
            calls[name] = call
        errors: dict[str, Exception] = {}
        rec = {"id": sid, "rounds": rounds, "repeats": [], "errors": {}}
        self.scenarios.append(rec)
        v0: dict[str, list[float]] = {}
        for rep in range(self.repeats):
            if rep and time.monotonic() + self._estimate(rec) > self.deadline:
                self.notes.append(f"{sid}: stopped after {rep} repeats (--seconds)")
                raise OutOfTime
            t_rep = time.monotonic()
            warm, reps = {}, {}
            for name, call in calls.items():
                if name in errors:
                    continue
                try:
                    w = timed_block(call, max(2, timing.warmup))
                except Exception as e:
                    self._failed(name, e, errors, rec)
                    continue
                warm[name] = [round(s * 1e3, 5) for s in w]
                reps[name] = _reps_for(statistics.median(w[1:]), timing)
            entry = {"repeat": rep, "order": variant_order(rep), "reps": reps, "warm_ms": warm, "variants": {}}
            for v in entry["order"]:
                blocks = []
                for b in plan(v, [n for n in reps if n not in errors], reps, rounds):
                    if isinstance(b["f"], str) and b["f"] in errors:
                        continue
                    try:
                        blocks.append(self.time_block(timed_block, calls, b))
                    except CallFailed as e:
                        self._failed(e.name, e.error, errors, rec)
                        if isinstance(b["f"], list):  # a V3 block: this variant's remaining blocks are lost
                            break
                # a library that failed leaves the whole variant: its medians would lack blocks
                blocks = [b for b in blocks if not (isinstance(b["f"], str) and b["f"] in errors)]
                med = {n: t for n, t in medians_of(blocks).items() if n not in errors}
                entry["variants"][v] = {**speedups(med), "medians_ms": med, "blocks": blocks,
                                        "gpu_s": round(sum(b["wall_ms"] for b in blocks) / 1e3, 4)}
                if v == "V0":
                    for name, _, ms in (c for b in blocks for c in counted(b)):
                        v0.setdefault(name, []).append(ms / 1e3)
            entry["wall_s"] = round(time.monotonic() - t_rep, 3)
            rec["repeats"].append(entry)
        self.save()
        timed = {n: {**_summary(s), "rounds": rounds} for n, s in v0.items() if n not in errors}
        return timed, errors

    def _failed(self, name: str, error: Exception, errors: dict, rec: dict) -> None:
        if name == "":
            raise error  # the kernel failing is a crash, as in the bench
        errors[name] = error
        rec["errors"][name] = f"{type(error).__name__}: {error}"[:300]

    def _estimate(self, rec: dict) -> float:
        done = [r["wall_s"] for r in rec["repeats"]]
        return 1.2 * max(done) if done else 0.0

    def record(self) -> dict:
        return {"meta": self.meta, "notes": self.notes, "summary": summarize(self.scenarios),
                "scenarios": self.scenarios}

    def save(self) -> None:
        """After every scenario: a run killed from outside still leaves what it had."""
        if self.out is None:
            return
        tmp = self.out.with_suffix(self.out.suffix + ".tmp")
        tmp.write_text(json.dumps(self.record(), separators=(",", ":")))
        os.replace(tmp, self.out)


# ------------------------------------------------------------ driving the harness's Runner

def cpu_block(call, n: int) -> list[float]:
    """time_cpu's timer for one block: the wall clock around each call."""
    out = []
    for i in range(n):
        t0 = time.perf_counter()
        call(i)
        out.append(time.perf_counter() - t0)
    return out


def run(task_name: str, source: Path, ids: list[str], repeats: int, seconds: float, out: Path | None,
        seed: int | None = None) -> dict:
    from ks_tui.harness import runner as runner_mod
    from ks_tui.harness import timing as timing_mod
    from ks_tui.task import load_task

    t_start = time.monotonic()
    task = load_task(Path(task_name) if Path(task_name).is_dir() else REPO / "kernels" / task_name, REPO)
    for sid in ids:
        task.scenario(sid)  # an unknown id fails here, before any build
    # The Runner's results and progress lines go nowhere: the probe writes its own.
    quiet = runner_mod.emit
    runner_mod.emit = lambda kind, payload: None if kind in ("progress", "partial") else quiet(kind, payload)
    runner = runner_mod.Runner(task, source, "bench", False, ids, seed)
    probe = Probe(repeats, t_start + seconds - 5, out)  # 5 s left to stop, summarize and write
    probe.meta = {"task": task.name, "source": str(source), "repeats": repeats, "seconds": seconds,
                  "scenarios_asked": ids, "timing": {k: getattr(task.timing, k) for k in
                                                      ("warmup", "min_reps", "max_reps", "budget_s", "rounds")}}

    def by_runner(funcs, timing, rounds, timed_block):
        sid = runner.at.get("scenario") or "?"
        if time.monotonic() > probe.deadline:
            probe.notes.append(f"{sid} and later: not probed (--seconds)")
            raise OutOfTime
        t0 = time.monotonic()
        got = probe.scenario(sid, funcs, timing, rounds, timed_block)
        print(f"  {sid}: {len(probe.scenarios[-1]['repeats'])} repeats in {time.monotonic() - t0:.1f} s "
              f"({time.monotonic() - t_start:.0f} s so far)", flush=True)
        return got

    def time_interleaved(self, funcs, timing, rounds=5):
        if "clock" not in probe.meta:  # once: without NVML it says so once
            probe.read_clock = _clock_reader(self.torch)
            probe.meta["clock"] = "NVML per block" if probe.read_clock else "none"
        self.gaps.clear()
        timed, errors = by_runner(funcs, timing, rounds, self._timed)
        for name, t in timed.items():
            t["hidden_ms"] = self.hidden_ms(name)
        return timed, errors

    def time_cpu(funcs, timing):
        timed, errors = by_runner(funcs, timing, getattr(timing, "rounds", 4), cpu_block)
        if errors:
            raise next(iter(errors.values()))
        return timed

    old = timing_mod.GpuTimer.time_interleaved, timing_mod.time_cpu
    timing_mod.GpuTimer.time_interleaved, timing_mod.time_cpu = time_interleaved, time_cpu
    stopped = None
    try:
        runner.run()
    except OutOfTime:
        stopped = "--seconds ran out"
    finally:
        timing_mod.GpuTimer.time_interleaved, timing_mod.time_cpu = old
        runner_mod.emit = quiet
    res = runner.result
    probe.meta.update({k: res.get(k) for k in ("device", "torch", "cuda", "status", "message", "warnings")})
    probe.meta.update(stopped=stopped, wall_s=round(time.monotonic() - t_start, 1),
                      runner_timings=res.get("timings"), clocks=res.get("clocks"))
    entries = {e["id"]: e for e in res.get("scenarios") or []}
    for sc in probe.scenarios:
        e = entries.get(sc["id"]) or {}
        sc["skipped_baselines"] = e.get("skipped_baselines") or {}
        sc["family"] = task.family_of(task.scenario(sc["id"]))
    probe.save()
    return probe.record()


def _clock_reader(torch):
    """The harness's NVML reader (clocks.py) as () -> (SM MHz, reason bits); None without nvidia-ml-py or NVML."""
    from ks_tui.harness import contention
    from ks_tui.harness.clocks import ClockRecorder

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    rec = ClockRecorder(contention.bus_id(props), torch.cuda.current_device())
    if not rec.ok:
        print(f"noise_probe: no SM clock per block: {rec.why}", file=sys.stderr)
        return None
    return lambda: rec.read()[1:]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--task", default="flash_attn_fwd", help="task name under kernels/ or its folder")
    ap.add_argument("--scenarios", help="comma-separated ids (default: 24 spread over the grid)")
    ap.add_argument("--source", help="kernel file (default: kernels/flash_attn_fwd/best/kernel.cu)")
    ap.add_argument("--repeats", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=150.0, help="the whole run's cap, setup included")
    ap.add_argument("--seed", type=int)
    ap.add_argument("--out", required=True, help="JSON written here (after every scenario too)")
    a = ap.parse_args(argv)
    if a.repeats < 2:
        ap.error("--repeats must be at least 2: the spread is across repeats")
    ids = [s for s in a.scenarios.split(",") if s] if a.scenarios else DEFAULT_SCENARIOS
    source = Path(a.source) if a.source else REPO / "kernels" / "flash_attn_fwd" / "best" / "kernel.cu"
    if not source.is_file():
        ap.error(f"kernel source not found: {source}")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    print(f"noise_probe: {len(ids)} scenarios x {a.repeats} repeats x {len(VARIANTS)} variants, "
          f"at most {a.seconds:.0f} s", flush=True)
    try:
        rec = run(a.task, source.resolve(), ids, a.repeats, a.seconds, out, a.seed)
    except Exception as e:
        out.with_suffix(".error.txt").write_text(f"{type(e).__name__}: {e}\n")
        print(f"noise_probe FAILED: {type(e).__name__}: {e}", file=sys.stderr)
        raise
    m = rec["meta"]
    full = [s for s in rec["scenarios"] if len(s["repeats"]) >= 2]
    fa3 = sum(1 for s in rec["scenarios"] if "fa3" not in s.get("skipped_baselines", {}))
    print(f"\n{m.get('device')}: runner {m.get('status')} ({m.get('message') or 'ok'}); {len(full)} of {len(ids)} "
          f"scenarios with >= 2 repeats in {m['wall_s']} s{'; stopped: ' + m['stopped'] if m['stopped'] else ''}")
    for note in rec["notes"]:
        print("  note:", note)
    timed = sorted({n for s in rec["scenarios"] for r in s["repeats"] for n in r["reps"] if n})
    skipped = {n: why for s in rec["scenarios"] for n, why in s.get("skipped_baselines", {}).items()}
    print(f"  libraries timed: {', '.join(timed) or 'none'}; skipped: "
          + ("; ".join(f"{n} ({why[:60]})" for n, why in sorted(skipped.items())) or "none"))
    if rec["scenarios"] and not fa3:
        why = rec["scenarios"][0]["skipped_baselines"].get("fa3", "?")
        print(f"  WARNING: FA3 was not timed ({why}): vs-fa3 columns are empty", file=sys.stderr)
    print(f"  {out} ({out.stat().st_size // 1024} KiB)\n")
    print(table(rec["summary"]))
    if not full:
        print(f"noise_probe FAILED: no scenario got 2 repeats (runner: {m.get('status')}: {m.get('message')})",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    sys.exit(main())
