"""Harness runs through one WarmPool in one process, as the engine makes them: each run's timings as JSON.

  python3 lab/flash_attn_fwd/device/loop_speed.py TASK [--source FILE] [--mode bench|check] [--quick]
      [--runs N] [--gap S] [--no-pool] [--out DIR]

The pool is primed before the first run (the engine primes it after each run; a gap of a few seconds stands
for the model's turn between runs). Each result goes to DIR/pool-<i>.json; one line per run on stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))

from ks_tui.harness.client import run_harness  # noqa: E402
from ks_tui.harness.warm import WarmPool  # noqa: E402
from ks_tui.task import load_task  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("task")
    ap.add_argument("--source")
    ap.add_argument("--mode", default="bench", choices=("bench", "check"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--gap", type=float, default=5.0)
    ap.add_argument("--no-pool", action="store_true")
    ap.add_argument("--out", default=".")
    a = ap.parse_args()
    task = load_task(a.task, REPO)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    pool = None if a.no_pool else WarmPool()
    try:
        if pool is not None:
            pool.prime(task.dir)
        for i in range(1, a.runs + 1):
            time.sleep(a.gap)
            t0 = time.monotonic()
            r = run_harness(task, Path(a.source) if a.source else None, mode=a.mode, quick=a.quick, pool=pool)
            wall = time.monotonic() - t0
            (out / f"{'pool' if pool else 'nopool'}-{i}.json").write_text(json.dumps(r, indent=1, default=str))
            t = r.get("timings", {})
            print(json.dumps({"run": i, "status": r.get("status"), "correct": r.get("correct"),
                              "wall_s": round(wall, 3), "warm_start": bool(t.get("warm_start")),
                              **{k: t[k] for k in ("startup_s", "import_s", "compile_s", "check_s", "bench_s",
                                                   "sharing_s") if k in t}}), flush=True)
    finally:
        if pool is not None:
            pool.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
