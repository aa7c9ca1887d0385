"""One device call for the flash_attn_fwd task: loop speed, full bench twice (noise), summary.

Runs the user-facing commands (`python3 -m ks_tui check|bench ...`) as child processes,
measures their wall time, keeps every result JSON under $OUT and prints a short table last.
Steps run in order of importance and stop early when the kernel is wrong (no point timing
it) or when the time left in the call would not fit the next step.

Usage (from the repository root):
    python3 -m lab.flash_attn_fwd.scripts.device_run quick   # quick check (cold), quick bench x2
    python3 -m lab.flash_attn_fwd.scripts.device_run full    # full bench twice (noise)
    python3 -m lab.flash_attn_fwd.scripts.device_run quick_noise  # quick bench twice (noise)
Environment: OUT (where results go), KS_DEADLINE (epoch seconds by which to be done).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
OUT = Path(os.environ.get("OUT", "/tmp/ks-device-out"))
DEADLINE = float(os.environ.get("KS_DEADLINE", time.time() + 540))
T0 = time.monotonic()
TASK = "flash_attn_fwd"
SUMMARY = OUT / "summary.json"
summary: dict = {"steps": {}, "commands": {}}


def left() -> float:
    return DEADLINE - time.time()


def log(msg: str) -> None:
    line = f"[{time.monotonic() - T0:6.1f}s] {msg}"
    print(line, flush=True)
    with open(OUT / "log.txt", "a") as f:
        f.write(line + "\n")


def ks(name: str, args: list[str], out_file: str | None = None, timeout: float = 600) -> tuple[dict | None, float]:
    """Run `python3 -m ks_tui ARGS --json`, keep its JSON, return (result, wall seconds)."""
    cmd = [sys.executable, "-m", "ks_tui", *args, "--json"]
    summary["commands"][name] = "PYTHONPATH=$PWD " + " ".join(["python3", "-m", "ks_tui", *args, "--json"])
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              env=dict(os.environ, PYTHONPATH=str(REPO)))
    except subprocess.TimeoutExpired:
        log(f"{name}: timed out after {timeout:.0f}s")
        return None, time.monotonic() - t0
    wall = time.monotonic() - t0
    with open(OUT / "log.txt", "a") as f:
        f.write(f"--- {name} rc={proc.returncode} wall={wall:.1f}s\n{proc.stderr[-4000:]}\n")
    try:
        result = json.loads(proc.stdout)
    except ValueError:
        log(f"{name}: no JSON (rc={proc.returncode}): {proc.stderr.strip()[-500:]}")
        return None, wall
    if out_file:
        (OUT / out_file).write_text(json.dumps(result, indent=1))
    log(f"{name}: {result.get('status')} {result.get('correct')} geomean={result.get('geomean_speedup')} "
        f"wall={wall:.1f}s timings={result.get('timings')}")
    return result, wall


def step(result: dict | None, wall: float) -> dict:
    """What the summary keeps of one command."""
    r = result or {}
    return {"wall_s": wall, "timings": r.get("timings"), "correct": r.get("correct"),
            "geomean": r.get("geomean_speedup"), "by_baseline": r.get("geomean_by_baseline")}


def failures(result: dict) -> list[str]:
    return [f"{s['id']}: {(s.get('error') or {}).get('what', '')}" for s in result.get("scenarios", [])
            if not s.get("ok")]


def noise(a: dict, b: dict) -> dict:
    """Spread between two benches of the same kernel: per-scenario speedup ratio and geomean."""
    sa = {s["id"]: s for s in a["scenarios"]}
    ratios, kernel_ratios = {}, {}
    for s in b["scenarios"]:
        x = sa.get(s["id"])
        if x and x.get("speedup") and s.get("speedup"):
            ratios[s["id"]] = s["speedup"] / x["speedup"]
            kernel_ratios[s["id"]] = s["time_ms"] / x["time_ms"]
    dev = sorted(abs(r - 1) for r in ratios.values())
    kdev = sorted(abs(r - 1) for r in kernel_ratios.values())
    ga, gb = a.get("geomean_speedup"), b.get("geomean_speedup")
    worst = sorted(ratios.items(), key=lambda kv: -abs(kv[1] - 1))[:8]
    return {
        "scenarios_compared": len(ratios),
        "geomean_a": ga, "geomean_b": gb,
        "geomean_rel_diff": (gb / ga - 1) if ga and gb else None,
        "speedup_ratio_abs_dev": {"median": statistics.median(dev) if dev else None,
                                  "p90": dev[int(0.9 * (len(dev) - 1))] if dev else None,
                                  "max": dev[-1] if dev else None,
                                  "over_3pct": sum(d > 0.03 for d in dev)},
        "kernel_time_ratio_abs_dev": {"median": statistics.median(kdev) if kdev else None,
                                      "max": kdev[-1] if kdev else None,
                                      "over_3pct": sum(d > 0.03 for d in kdev)},
        "worst": [{"id": k, "ratio": r} for k, r in worst],
    }


def gpu_state() -> str:
    q = "name,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,clocks_throttle_reasons.active"
    try:
        return subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"nvidia-smi failed: {e}"


def main(phase: str) -> int:
    global summary
    OUT.mkdir(parents=True, exist_ok=True)
    if SUMMARY.exists():
        summary = json.loads(SUMMARY.read_text())
    # The harness's own cache (KS_CACHE_DIR or ~/.cache/ks), which prebuild.py fills: a cache of its
    # own here made every full bench rebuild its kernel (35-53 s of each call, sessions 18-19).
    summary[f"gpu_before_{phase}"] = gpu_state()
    log(f"GPU: {summary[f'gpu_before_{phase}']}")
    phases = {"quick": quick_phase, "full": full_phase, "quick_noise": quick_noise_phase,
              "kernels_quick": kernels_quick_phase, "full_best": full_best_phase,
              "full_seed": full_seed_phase}
    return phases[phase]()


def quick_noise_phase() -> int:
    """The quick subset benched twice, baselines timed afresh both times."""
    a, wa = ks("quick_bench_a", ["bench", TASK, "--quick"], "quick_bench_a.json")
    b, wb = ks("quick_bench_b", ["bench", TASK, "--quick"], "quick_bench_b.json")
    for name, r, w in (("quick_bench_a", a, wa), ("quick_bench_b", b, wb)):
        summary["steps"][name] = step(r, w)
    if a and b and a.get("scenarios") and b.get("scenarios"):
        summary["noise_quick"] = noise(a, b)
    finish()
    return 0


def kernels_quick_phase() -> int:
    """Seed and best on the quick subset, in one process tree: A (seed), B (seed with
    A's cached baselines: the --cached-baselines loop), best, then C (seed again: the
    run-to-run spread with baselines timed alongside)."""
    best = "kernels/flash_attn_fwd/best"
    steps = [("seed_a", []), ("seed_b", ["--cached-baselines"]),
             ("best", ["--source", f"{best}/kernel.cu"]),
             ("seed_c", [])]
    runs = {}
    for name, extra in steps:
        if left() < 45:
            log(f"skipping {name}: {left():.0f}s left")
            continue
        r, w = ks(name, ["bench", TASK, "--quick", *extra], f"quick_{name}.json", timeout=max(30, left() - 10))
        runs[name] = r
        summary["steps"][name] = step(r, w)
    for key, (x, y) in {"noise_cached_baselines": ("seed_a", "seed_b"),
                        "noise_fresh_baselines": ("seed_a", "seed_c")}.items():
        if runs.get(x) and runs.get(y) and runs[x].get("scenarios") and runs[y].get("scenarios"):
            summary[key] = noise(runs[x], runs[y])
    finish()
    return 0


def quick_phase() -> int:
    # 1. Quick check with a cold compile cache: the first thing a user runs. Stop if wrong.
    r, wall = ks("quick_check_cold", ["check", TASK, "--quick"])
    if r is None or r.get("status") != "correct":
        log("quick check failed; stopping: " + "; ".join(failures(r or {})[:10]) + (r or {}).get("message", ""))
        (OUT / "quick_check.json").write_text(json.dumps(r, indent=1))
        finish()
        return 1
    summary["steps"]["quick_check_cold"] = {"wall_s": wall, "timings": r["timings"],
                                            "compile": {k: r["compile"].get(k) for k in ("cached", "seconds", "kernels", "sass")}}

    # 2. Quick check + bench, twice: the first measures baselines, the second uses the cache
    #    (the agent's inner loop).
    r1, w1 = ks("quick_bench_first", ["bench", TASK, "--quick"], "quick_bench.json")
    r2, w2 = ks("quick_bench_cached", ["bench", TASK, "--quick"])
    summary["steps"]["quick_bench_first"] = step(r1, w1)
    summary["steps"]["quick_bench_cached"] = step(r2, w2)

    finish()
    return 0


def full_phase() -> int:
    # 3. Full bench A (182 scenarios, every baseline timed), then B the same, for noise.
    a, wa = ks("full_bench_a", ["bench", TASK], "bench_full_a.json",
               timeout=max(60, left() - 20))
    summary["steps"]["full_bench_a"] = step(a, wa)
    if a and a.get("status") != "correct":
        log("full bench A not correct: " + "; ".join(failures(a)[:10]))
    need = (wa or 0) + 15
    if a and left() > need:
        b, wb = ks("full_bench_b", ["bench", TASK], "bench_full_b.json",
                   timeout=max(60, left() - 10))
        summary["steps"]["full_bench_b"] = step(b, wb)
        if b and a.get("scenarios") and b.get("scenarios"):
            summary["noise"] = noise(a, b)
    else:
        log(f"skipping full bench B: {left():.0f}s left, it needs about {need:.0f}s")
    finish()
    return 0


def full_seed_phase() -> int:
    """One full bench of the seed (issue 3's number), baselines timed alongside."""
    r, w = ks("full_bench_seed", ["bench", TASK], "bench_full_seed.json", timeout=max(60, left() - 10))
    summary["steps"]["full_bench_seed"] = step(r, w)
    finish()
    return 0


def full_best_phase() -> int:
    """Full bench of best/kernel.cu with every baseline timed afresh (issue 8's number)."""
    src = os.environ.get("KS_BEST", "kernels/flash_attn_fwd/best/kernel.cu")
    if left() < 230:  # a full bench takes ~225 s: a killed one leaves nothing
        log(f"skipping the full bench of {src}: {left():.0f}s left")
        finish()
        return 0
    r, w = ks("full_bench_best", ["bench", TASK, "--source", src],
              "bench_full_best.json", timeout=max(60, left() - 10))
    summary["steps"]["full_bench_best"] = step(r, w)
    if r and r.get("status") != "correct":
        log("full bench of best not correct: " + "; ".join(failures(r)[:10]))
    finish()
    return 0


def finish() -> None:
    summary["gpu_after"] = gpu_state()
    (OUT / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    log(f"GPU after: {summary['gpu_after']}")
    print("\n== flash_attn_fwd on the device ==")
    for name, step in summary["steps"].items():
        t = step.get("timings") or {}
        print(f"{name:20s} wall {step.get('wall_s', 0):7.1f}s  compile {t.get('compile_s', '-')!s:>7}  "
              f"check {t.get('check_s', '-')!s:>8}  bench {t.get('bench_s', '-')!s:>8}  "
              f"{step.get('correct') or ''} geomean {step.get('geomean')}")
    for key in ("noise_quick", "noise", "noise_cached_baselines", "noise_fresh_baselines"):
        n = summary.get(key)
        if not n or n.get("geomean_rel_diff") is None:
            continue
        d = n["speedup_ratio_abs_dev"]
        print(f"{key}: geomean {n['geomean_a']:.4f} vs {n['geomean_b']:.4f} ({100 * n['geomean_rel_diff']:+.2f}%); "
              f"per-scenario |ratio-1| median {100 * d['median']:.2f}% p90 {100 * d['p90']:.2f}% "
              f"max {100 * d['max']:.2f}% ({d['over_3pct']} over 3%)")
    print(f"this phase took {time.monotonic() - T0:.0f}s; {left():.0f}s left before the deadline")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "quick"))
