"""run_harness with `candidates`: several kernel files measured side by side (one per worker of
the configured Dask cluster, else one after another here), each recorded as its own attempt."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ks_tui import events as ev
from ks_tui.agent.summary import summarize_result

if TYPE_CHECKING:
    from ks_tui.engine.session_base import SessionBase


def _rank(result: dict) -> tuple:
    """Sort key: failures first, then slower ones; the best candidate sorts last."""
    ok = result.get("status") == "correct"
    return (ok, result.get("geomean_speedup") or 0.0)


def run_candidates(session: SessionBase, mode: str, quick: bool, paths: list[Path], author: str = "agent") -> str:
    """Measure the candidate files and record each result as an attempt, the best last, so the
    kernel file ends holding the best one. The kernel file's own unrecorded edits are measured
    (and recorded) too, so nothing typed into it is lost."""
    from ks_tui.cluster import ClusterSpec
    from ks_tui.cluster.run import evaluate_candidates

    kernel = session.files.kernel
    paths = [Path(p).resolve() for p in paths]
    if kernel.resolve() not in paths and not session._kernel_committed():
        paths.insert(0, kernel.resolve())
    sources = {p: p.read_bytes() for p in paths}
    spec = ClusterSpec(address=session.cfg.cluster) if getattr(session.cfg, "cluster", "") else None
    total = len(session.task.quick) if quick else len(session.task.scenarios)
    session.emit(ev.HarnessStarted(mode, quick, total * len(paths)))

    def on_event(msg: dict) -> None:  # per-worker progress, as the screen's progress line
        if msg.get("event") == "progress":
            session.emit(ev.HarnessProgress(msg.get("done") or 0, msg.get("total") or total, msg.get("scenario") or "",
                                            msg.get("phase") or "", worker=msg.get("worker") or ""))

    def on_progress(p: dict) -> None:
        session.emit(ev.HarnessProgress(p.get("done", 0), p.get("total", total), p.get("scenario", ""),
                                        p.get("phase", "")))

    results = evaluate_candidates(session.task, paths, spec, mode=mode, quick=quick, on_event=on_event,
                                  on_progress=on_progress)
    lines, recorded = [], {}
    attempts = None
    for i in sorted(range(len(paths)), key=lambda i: _rank(results[i])):
        kernel.write_bytes(sources[paths[i]])
        rec = session._record(results[i], author, mode, quick, sources[paths[i]])
        recorded[i] = (rec.attempt, rec.note)
        attempts = rec.attempts or attempts
    best = max(range(len(paths)), key=lambda i: _rank(results[i]))
    for i, p in enumerate(paths):
        attempt, note = recorded[i]
        where = f" on {results[i]['worker']}" if results[i].get("worker") else ""
        name = session.files.rel(p) if p.is_relative_to(session.files.root) else str(p)
        lines.append(f"{name}{where}: " + summarize_result(results[i], attempt.to_dict() if attempt else None,
                                                            note=note).replace("\n", "\n  "))
    best_attempt = recorded[best][0]
    session.emit(ev.HarnessFinished(results[best].get("status", ""), best_attempt.number if best_attempt else None,
                                    ""))
    if attempts:
        session._after_attempt(attempts)
    lines.append(f"the kernel file now holds the best candidate: {paths[best].name}")
    return "\n\n".join(lines)
