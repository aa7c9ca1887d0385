"""Where the time of a cluster run goes: `ks bench TASK` on this machine, then with
`--workers N` for each N given (a local Dask cluster; on a GPU box one worker per GPU).

Each run is `python -m ks_tui bench TASK --json --seed S` as a child process, so its wall time
includes Python start-up and the cluster's start and shutdown. From each result it keeps:
the client's wall, the cluster's start, the one compile (and the bytes shipped), the slowest
worker's phases (harness child start-up, torch import, check, timing), and each worker's
wall. The same seed in every run: every run checks the same inputs.

    python benchmarks/cluster_bench.py [--task attention_cpu] [--workers 1,2,4] [--quick]
                                       [--mode bench] [--out benchmarks/results/cluster_cpu.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(task: str, mode: str, quick: bool, workers: int | str | None, seed: int) -> dict:
    cmd = [sys.executable, "-m", "ks_tui", mode, task, "--json", "--seed", str(seed), "--no-cluster"]
    if workers is not None:
        cmd[-1:] = ["--workers", str(workers)]
    if quick:
        cmd.append("--quick")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    load_before = os.getloadavg()[0]
    t0 = time.monotonic()
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env)
    wall = time.monotonic() - t0
    load = {"load_1min_before": round(load_before, 2), "load_1min_after": round(os.getloadavg()[0], 2)}
    try:
        r = json.loads(out.stdout)
    except ValueError:
        return {"workers": workers, "command": " ".join(cmd[1:]), "exit": out.returncode,
                "error": (out.stderr.strip().splitlines() or ["no output"])[-1], **load}
    c = r.get("cluster") or {}
    t = r.get("timings") or {}
    row = {"workers": workers, "command": "ks " + " ".join(cmd[3:]), "exit": out.returncode,
           "status": r.get("status"), "correct": r.get("correct"), "geomean_speedup": r.get("geomean_speedup"),
           "wall_s": round(wall, 2),
           # inside the command: the run's own account
           "cluster_start_s": c.get("start_s"), "compile_s": c.get("compile_s", t.get("compile_s")),
           "shipped_bytes": c.get("shipped_bytes"), "jobs_s": c.get("jobs_s"),
           "slowest_worker": {k: t.get(k) for k in ("startup_s", "import_s", "check_s", "bench_s")},
           # what the command spent after its result: closing the cluster, interpreter exit
           "after_result_s": round(wall - (c.get("wall_s") or t.get("wall_s") or 0.0), 2),
           # the machine's load around the run: other processes share its cores
           **load}
    if r.get("workers"):
        row["per_worker"] = [{"scenarios": w["scenarios"], "wall_s": w["wall_s"], "device": w["device"],
                              "gpu": w.get("gpu")} for w in r["workers"]]
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="attention_cpu")
    ap.add_argument("--workers", default="1,2,4", help="comma-separated worker counts, or gpus")
    ap.add_argument("--mode", default="bench", choices=("check", "bench"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    counts = [w if w == "gpus" else int(w) for w in args.workers.split(",") if w]
    rows = [run(args.task, args.mode, args.quick, None, args.seed)]
    print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    for n in counts:
        rows.append(run(args.task, args.mode, args.quick, n, args.seed))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    doc = {"what": f"ks {args.mode} {args.task}{' --quick' if args.quick else ''} on one machine, then over a local "
                   f"Dask cluster of N workers", "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
           "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
           "command": "python benchmarks/cluster_bench.py " + " ".join(sys.argv[1:]), "runs": rows}
    text = json.dumps(doc, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
