"""The two ways a run uses a cluster: one kernel's scenarios sharded over the workers
(`run_sharded`), and several candidate kernels side by side, one per worker (`run_candidates`)."""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Callable

from ks_tui.cluster import merge as merge_mod
from ks_tui.cluster.connect import Cluster
from ks_tui.cluster.jobs import Cancelled, Job, JobRunner
from ks_tui.errors import KsError
from ks_tui.harness.result import skeleton, summarize


def _checked(task, source: Path | None, scenarios: list[str] | None, timeout: float | None) -> tuple[Path, float]:
    """The checks run_harness makes before it starts a child, made once on the client."""
    source = Path(source).resolve() if source else task.kernel
    if not source.is_file():
        raise KsError(f"kernel source not found: {source}")
    try:
        source.read_bytes()
    except OSError as e:
        raise KsError(f"cannot read kernel source {source}: {e.strerror or e}") from None
    for sid in scenarios or []:
        task.scenario(sid)  # KsError naming the unknown id
    timeout = float(timeout if timeout is not None else task.timeout_s)
    if not timeout > 0:
        raise KsError("--timeout must be a positive number of seconds")
    return source, timeout


def shard(task, scenarios, workers: list[str]) -> list[list[str]]:
    """Scenario ids per worker, balanced by cost (largest first onto the least loaded worker),
    each shard in the task's order; empty shards dropped. A scenario's cost is one unit (its
    checks and timing budget take about as long whatever its size) plus up to one more by its
    FLOPs (a large shape's reference and calls add to that)."""
    flops = {s.id: task.flops_of(s) for s in scenarios}
    top = max(flops.values(), default=0.0) or 1.0
    cost = {i: 1.0 + f / top for i, f in flops.items()}
    load = {w: 0.0 for w in workers}
    parts: dict[str, list[str]] = {w: [] for w in workers}
    for sc in sorted(scenarios, key=lambda s: -cost[s.id]):
        w = min(workers, key=lambda x: (load[x], len(parts[x])))
        load[w] += cost[sc.id]
        parts[w].append(sc.id)
    rank = {s.id: i for i, s in enumerate(scenarios)}
    return [sorted(parts[w], key=rank.__getitem__) for w in workers if parts[w]]


def _options(mode, quick, timeout, seed, cached_baselines) -> dict:
    return {"mode": mode, "quick": quick, "timeout": timeout, "seed": seed, "cached_baselines": cached_baselines}


def _cluster_record(cl: Cluster, runner: JobRunner, wall_from: float) -> dict:
    s = runner.stats
    return {"address": cl.spec.address or "local", "workers": len(runner.identities),
            "start_s": cl.start_s, "compile_s": s.compile_s, "compiled_on": s.compiled_on,
            "shipped_bytes": s.shipped_bytes, "jobs_s": s.jobs_s, "reruns": s.reruns,
            "unresponsive": s.unresponsive,
            "wall_s": round(time.monotonic() - wall_from, 4)}


def run_sharded(task, source: Path | None, spec, *, mode: str = "check", quick: bool = False,
                scenarios: list[str] | None = None, timeout: float | None = None, seed: int | None = None,
                cached_baselines: bool = False, on_event: Callable[[dict], None] | None = None,
                hang_s: float | None = None, cancel=None) -> dict:
    """One kernel on the cluster: its scenarios sharded over the workers, each worker timing its
    own baselines; one merged result (the single-machine result's shape plus `workers`, each
    scenario's `worker` and a `cluster` record). KsError when a worker fails the run. hang_s: how
    long a started job may take before its worker counts as hung (default: the timeout + 30 s)."""
    if mode not in ("check", "bench"):
        raise KsError(f"mode must be check or bench, not {mode!r}")
    source, timeout = _checked(task, source, scenarios, timeout)
    data = source.read_bytes()
    # One seed for every shard: scenario inputs are drawn from (seed, scenario id), so the
    # shards see exactly the inputs one machine would.
    seed = seed if seed is not None else random.SystemRandom().randrange(1 << 31)
    t0 = time.monotonic()
    with Cluster(spec, task.device) as cl:
        runner = JobRunner(cl, task, _options(mode, quick, timeout, seed, cached_baselines), on_event, hang_s,
                           cancel)
        workers = runner.prepare()
        parts = shard(task, task.select(quick=quick, ids=scenarios), workers)
        jobs = [Job(f"shard{i + 1}", f"shard {i + 1}/{len(parts)} ({len(ids)} scenarios)", data, ids, seed,
                    workers[i]) for i, ids in enumerate(parts)]
        try:
            results = runner.run(jobs, one_if_broken=True)
        except Cancelled:
            out = skeleton(task, source, mode, quick, seed, scenarios)
            out.update(status="cancelled", message="cancelled")
            return summarize(out, total=sum(len(p) for p in parts))
        record = _cluster_record(cl, runner, t0)
    ordered = [results[j.key] for j in jobs if j.key in results]
    compile_record = _compile_record(runner)
    if compile_record is not None:
        record["compile_record"] = compile_record
    merged = merge_mod.merge(task, source, mode, quick, scenarios, seed, ordered, record)
    merged["timings"]["compile_s"] = record["compile_s"]
    merged["timings"]["cluster_start_s"] = record["start_s"]
    merged["timings"]["wall_s"] = record["wall_s"]
    return merged


def run_configured(task, source: Path, address: str, *, mode: str, quick: bool,
                   on_progress: Callable[[dict], None] | None = None, cancel=None) -> dict:
    """The engine's harness run on the configured scheduler (KS_CLUSTER / config `cluster`):
    run_sharded, with each worker's progress given as the harness's progress dicts."""
    from ks_tui.cluster import ClusterSpec

    def on_event(msg: dict) -> None:
        if msg.get("event") == "progress" and on_progress is not None:
            on_progress({k: msg.get(k) for k in ("done", "total", "scenario", "phase", "worker")})

    return run_sharded(task, source, ClusterSpec(address=address), mode=mode, quick=quick, on_event=on_event,
                       cancel=cancel)


def _compile_record(runner: JobRunner) -> dict | None:
    """The build's own record (its time, not the workers' cache hits), when it compiled."""
    builds = getattr(runner, "last_builds", None) or {}
    for per_arch in builds.values():
        for b in per_arch.values():
            if b.get("record", {}).get("ok"):
                return {k: v for k, v in b["record"].items()}
    return None


def run_candidates(task, sources: list[Path], cluster: Cluster | None, *, mode: str = "bench",
                   quick: bool = False, scenarios: list[str] | None = None, timeout: float | None = None,
                   seed: int | None = None, cached_baselines: bool = False, rotate: int = 0,
                   on_event: Callable[[dict], None] | None = None, on_progress: Callable[[dict], None] | None = None,
                   hang_s: float | None = None) -> list[dict]:
    """Several kernel files on the same scenarios and inputs (one seed), one result each, in the
    order given. On a cluster each candidate runs whole on one worker (candidate i on worker
    (i + rotate) mod N, so rounds of a compare can move candidates across devices); without one
    they run one after another here, through the ordinary harness client, with no Dask."""
    if mode not in ("check", "bench"):
        raise KsError(f"mode must be check or bench, not {mode!r}")
    if not sources:
        raise KsError("no candidate files given")
    checked = [_checked(task, s, scenarios, timeout) for s in sources]
    seed = seed if seed is not None else random.SystemRandom().randrange(1 << 31)
    if cluster is None:
        from ks_tui.harness.client import run_harness

        return [run_harness(task, src, mode=mode, quick=quick, scenarios=scenarios, timeout=t, seed=seed,
                            on_progress=on_progress, cached_baselines=cached_baselines) for src, t in checked]
    t0 = time.monotonic()
    runner = JobRunner(cluster, task, _options(mode, quick, checked[0][1], seed, cached_baselines), on_event,
                       hang_s)
    workers = runner.prepare()
    jobs = [Job(f"c{i + 1}", f"candidate {src.name}", src.read_bytes(), scenarios, seed,
                workers[(i + rotate) % len(workers)]) for i, (src, _) in enumerate(checked)]
    results = runner.run(jobs)
    record = _cluster_record(cluster, runner, t0)
    out = []
    for job, (src, _) in zip(jobs, checked):
        r = merge_mod.tag(results[job.key])
        r["source"] = str(src)  # the worker ran a copy; the result names the file given
        r["cluster"] = record
        out.append(r)
    return out


def evaluate_candidates(task, sources: list[Path], spec=None, **kw) -> list[dict]:
    """run_candidates with its own cluster (spec None: one after another on this machine). The
    agent's run_harness calls this; the caller records each result as its own attempt."""
    if spec is None:
        return run_candidates(task, sources, None, **kw)
    with Cluster(spec, task.device) as cl:
        return run_candidates(task, sources, cl, **kw)
