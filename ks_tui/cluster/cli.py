"""The command line's side of cluster runs: which cluster, per-worker progress lines, the
summary lines under the result, and `ks compare`'s rounds run side by side."""

from __future__ import annotations

import sys

from ks_tui.cluster import spec_from_args


def spec_for(args):
    """The ClusterSpec of a check/bench/compare command line, or None (the single-machine path)."""
    from ks_tui.errors import KsError
    from ks_tui.paths import find_workspace, main_workspace

    try:
        workspace = main_workspace(find_workspace(getattr(args, "workspace", None)))
    except KsError:
        workspace = None
    return spec_from_args(args, workspace)


class WorkerProgress:
    """One stderr line per worker step: `[worker ADDR] shard 1/2 (10 scenarios): check ID (3/10)`."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        self.last: dict[str, str] = {}

    def __call__(self, msg: dict) -> None:
        worker, label, event = msg.get("worker") or "?", msg.get("label") or "", msg.get("event")
        if event == "progress":
            sid = msg.get("scenario") or ""
            if not sid and msg.get("phase") != "compile":
                return
            step = f"{msg.get('phase')} {sid}".rstrip()
            text = f"{step} ({(msg.get('done') or 0) + (1 if sid else 0)}/{msg.get('total')})"
        elif event == "start":
            text = "started"
        elif event == "done":
            text = f"done: {msg.get('status')}"
        elif event == "compile":
            text = "compiling the kernel for its architecture"
        elif event == "unresponsive":
            text = f"left out of the run: {msg.get('why')}"
        elif event == "rerun":
            text = f"re-running it here: worker {msg.get('from')} did not bring it back in time"
        else:
            return
        line = f"[worker {worker}] " + (f"{label}: {text}" if label else text)
        if self.last.get(worker) != line:
            self.last[worker] = line
            print(line, file=self.stream, flush=True)


def summary_lines(result: dict) -> str:
    """Under the result table: the workers, and where the run's time went."""
    c = result.get("cluster") or {}
    out = []
    for w in result.get("workers") or []:
        out.append(f"  {w['address']}: {w.get('device')}" + (f" (GPU {w['gpu']})" if w.get("gpu") else "")
                   + f", {w.get('scenarios')} scenarios, {w.get('wall_s', 0):.1f}s")
    for dev, g in (result.get("geomean_by_device") or {}).items():
        out.append(f"  geomean on {dev}: " + ("-" if g is None else f"{g:.3f}x"))
    if c:
        shipped = c.get("shipped_bytes") or 0
        out.append(f"  cluster start {c.get('start_s', 0):.1f}s, compile {c.get('compile_s', 0):.1f}s "
                   f"(once per architecture, {shipped / 1024:.0f} KiB shipped), jobs {c.get('jobs_s', 0):.1f}s, "
                   f"total {c.get('wall_s', 0):.1f}s")
        out += [f"  re-ran {r['job']} on {r['to']}: {r['from']} {r['why']}" for r in c.get("reruns") or []]
        out += [f"  left out {w}: it did not answer" for w in c.get("unresponsive") or []]
    return "workers:\n" + "\n".join(out) if out else ""


def run_compare_rounds(task, candidates, spec, seeds: list[int], run_id: str, args, ids, quiet: bool) -> int:
    """Every round's candidates side by side, one per worker, rotated a worker each round so
    no candidate keeps one device. Fills each candidate's runs; returns the runs done."""
    from ks_tui.cluster.connect import Cluster
    from ks_tui.cluster.run import run_candidates

    done = 0
    with Cluster(spec, task.device) as cl:
        progress = WorkerProgress()
        for r, seed in enumerate(seeds):
            if not quiet:
                print(f"[round {r + 1}/{len(seeds)}] {len(candidates)} candidates side by side (seed {seed})",
                      file=sys.stderr, flush=True)
            runs = run_candidates(task, [c.source for c in candidates], cl, mode="bench", quick=args.quick,
                                  scenarios=ids, timeout=args.timeout, seed=seed,
                                  cached_baselines=args.cached_baselines, rotate=r,
                                  on_event=None if quiet else progress)
            # A same-call pair is one device's A/B: runs on different workers are not one.
            same_worker = len({run.get("worker") for run in runs}) == 1
            for c, run in zip(candidates, runs):
                if same_worker:
                    run["pair"] = f"{run_id}:{r + 1}"
                c.runs.append(run)
            done += len(candidates)
    return done
