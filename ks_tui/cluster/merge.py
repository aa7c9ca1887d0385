"""One result from the shards of a run, as the single-machine run writes it, plus where each
scenario ran (`workers`, each scenario's `worker`) and, across device kinds, a geomean per kind."""

from __future__ import annotations

from ks_tui.harness.result import failure_message, geomean, skeleton, summarize

# The worse status wins: a crash on one shard is a crash of the run.
_RANK = {"compile_error": 0, "crashed": 1, "timeout": 2, "cancelled": 3, "incorrect": 4, "correct": 5}
_TIMED = ("time_ms", "tflops", "baseline", "speedup", "speedup_of_medians", "timing")


def worker_entries(results: list[dict]) -> list[dict]:
    """`workers`: one entry per worker that ran a job, in address order."""
    seen: dict[str, dict] = {}
    for r in results:
        job = r.get("cluster_job") or {}
        addr = r.get("worker") or job.get("worker") or "?"
        entry = seen.setdefault(addr, {"address": addr, "device": r.get("device"), "host": job.get("host"),
                                       "gpu": job.get("gpu"), "scenarios": 0, "wall_s": 0.0})
        entry["scenarios"] += len(r.get("scenarios") or [])
        entry["wall_s"] = round(entry["wall_s"] + float(job.get("wall_s") or 0.0), 4)
    return [seen[a] for a in sorted(seen)]


def geomean_by_device(result: dict) -> dict | None:
    """{device: geomean speedup over the scenarios timed on it}, when more than one kind ran."""
    device_of = {w["address"]: w["device"] for w in result.get("workers") or []}
    speedups: dict[str, list] = {}
    for s in result.get("scenarios") or []:
        speedups.setdefault(device_of.get(s.get("worker"), "?"), []).append(s.get("speedup"))
    if len(speedups) < 2:
        return None
    return {dev: geomean(v) for dev, v in sorted(speedups.items())}


def tag(result: dict) -> dict:
    """A single job's result (one candidate on one worker) with the cluster's fields."""
    addr = result.get("worker")
    for s in result.get("scenarios") or []:
        s["worker"] = addr
    result["workers"] = worker_entries([result])
    return result


def merge(task, source, mode: str, quick: bool, ids: list[str] | None, seed: int, results: list[dict],
          cluster: dict) -> dict:
    """The shards' results as one run over `task.select(quick, ids)`."""
    order = [s.id for s in task.select(quick=quick, ids=ids)]
    out = skeleton(task, source, mode, quick, seed, ids)
    out["workers"] = worker_entries(results)
    devices: list[str] = sorted({r["device"] for r in results if r.get("device")})
    first = results[0]
    out["device"] = devices[0] if len(devices) == 1 else " + ".join(devices) or None
    for k in ("torch", "cuda", "threads"):
        out[k] = first.get(k)
    worst = min(results, key=lambda r: _RANK.get(r.get("status") or "", 1))
    status = worst.get("status") or "crashed"
    out["compile"] = cluster.pop("compile_record", None) or worst.get("compile") or first.get("compile")
    by_id: dict[str, dict] = {}
    for r in results:
        for s in r.get("scenarios") or []:
            by_id[s["id"]] = {**s, "worker": r.get("worker")}
    out["scenarios"] = [by_id[i] for i in order if i in by_id]
    out["status"] = status
    if status == "incorrect" or (status == "correct" and not all(s.get("ok") for s in out["scenarios"])):
        out["status"], out["message"] = "incorrect", failure_message(out)
    elif status != "correct":
        out["message"] = f"{worst.get('message') or status} (worker {worst.get('worker')})"
    if mode == "bench" and out["status"] != "correct":
        # As on one machine: timing needs every scenario correct, so no shard's times are kept.
        for s in out["scenarios"]:
            s.update({k: None for k in _TIMED if k in s})
            s["baselines"] = {}
        if out["status"] == "incorrect":
            out["message"] += " (not timed: timing needs every scenario correct)"
    warnings: list[str] = []
    for r in results:
        warnings += [w for w in r.get("warnings") or [] if w not in warnings]
    out["warnings"] = warnings
    tails = [f"[worker {r.get('worker')}]\n{r['stderr_tail']}" for r in results
             if r.get("stderr_tail") and r.get("status") != "correct"]
    out["stderr_tail"] = "\n".join(tails)[-8000:]
    if any(r.get("sharing") for r in results):
        out["sharing"] = {r.get("worker"): r.get("sharing") for r in results if r.get("sharing")}
    summarize(out, total=len(order))
    by_device = geomean_by_device(out)
    if by_device:
        out["geomean_by_device"] = by_device
    phases = {k: max((r.get("timings") or {}).get(k, 0.0) for r in results)
              for k in ("startup_s", "import_s", "check_s", "bench_s")}
    out["timings"] = {k: round(v, 4) for k, v in phases.items() if v}
    out["cluster"] = cluster
    return out
