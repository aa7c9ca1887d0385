"""Compare kernel files on the same scenarios and inputs: the run order and the summary table.

`ks compare` benches each candidate in its own harness child, round after round. Every round
draws new inputs (a new seed) and gives the same ones to every candidate, so they compare. The
order alternates (A B, B A, ...): a clock or thermal drift during the call then favours no
candidate. Only the parent-side
arithmetic lives here; the runs go through `client.run_harness`.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path

from ks_tui.harness.result import geomean


@dataclass
class Candidate:
    name: str
    source: Path
    runs: list[dict] = field(default_factory=list)   # harness results, in run order


def parse_candidates(specs: list[str]) -> list[Candidate]:
    """NAME=FILE or FILE (named after its stem); names must be unique. ValueError on bad input."""
    out: list[Candidate] = []
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep:
            name, path = Path(spec).stem, spec
        if not name or not path:
            raise ValueError(f"{spec!r}: expected NAME=FILE or FILE")
        if any(c.name == name for c in out):
            raise ValueError(f"two candidates named {name!r}: name them NAME=FILE")
        out.append(Candidate(name, Path(path)))
    if len(out) < 2:
        raise ValueError("give at least two kernel files to compare")
    return out


def run_order(n: int, rounds: int) -> list[int]:
    """Candidate indices in run order: forward in even rounds, backward in odd ones."""
    order: list[int] = []
    for r in range(rounds):
        order += list(range(n)) if r % 2 == 0 else list(range(n - 1, -1, -1))
    return order


def _failure(result: dict) -> str:
    """`status: first line of the message` of a failed run."""
    first = (result.get("message") or "").splitlines()[:1]
    return f"{result.get('status')}: {first[0][:160]}" if first else str(result.get("status"))


def group_labels(params_by_id: dict[str, dict], by: list[str]) -> dict[str, str]:
    """Scenario id -> the label of its group under `by` (task parameter names), e.g. 'd=128 causal=True'.
    ValueError naming a parameter that no scenario has."""
    missing = [k for k in by if not any(k in p for p in params_by_id.values())]
    if missing:
        raise ValueError(f"no scenario has the parameter {', '.join(missing)} (`ks scenarios TASK` lists them)")
    return {i: " ".join(f"{k}={p.get(k, '?')}" for k in by) for i, p in params_by_id.items()}


def _rows_over(candidates: list[Candidate], ids: list[str], rows: dict, time_rows: dict, failed: dict) -> dict:
    """The summary rows over `ids` (scenarios every sound candidate ran): each candidate's geomean speedup, that
    over the first candidate's, and the first's kernel time over each one's."""
    first = candidates[0].name
    gm = {c.name: (None if c.name in failed else geomean([rows[i][c.name] for i in ids])) for c in candidates}
    timed = [i for i in ids if all(time_rows[i][c.name] for c in candidates if c.name not in failed)]
    return {"geomean": gm,
            "vs_first": {c.name: (gm[c.name] / gm[first] if gm[c.name] and gm[first] else None) for c in candidates},
            "time_vs_first": {c.name: (None if c.name in failed or first in failed or not timed else
                                       geomean([time_rows[i][first] / time_rows[i][c.name] for i in timed]))
                              for c in candidates}}


# How far one candidate's baseline timing of a scenario may sit from that scenario's median over every run
# before its speedup cell is flagged. The baselines are the same library calls in every run, so a reading
# this far off is the baseline's noise, not the candidate's doing (a library timed slow on a short scenario
# makes a slower kernel read faster there).
BASELINE_OFF = 0.10


def _baseline_outliers(bases: dict[str, dict[str, list[float]]]) -> dict[str, dict[str, float]]:
    """Scenario id -> {candidate: its baseline time over the scenario's median baseline time over all runs},
    only for cells more than BASELINE_OFF away from 1. Needs three timings of the scenario (a median of
    two is no reference)."""
    out: dict[str, dict[str, float]] = {}
    for sid in dict.fromkeys(i for by_id in bases.values() for i in by_id):
        every = [t for by_id in bases.values() for t in by_id.get(sid, [])]
        if len(every) < 3:
            continue
        median = statistics.median(every)
        for name, by_id in bases.items():
            if by_id.get(sid):
                ratio = geomean(by_id[sid]) / median
                if abs(ratio - 1) > BASELINE_OFF:
                    out.setdefault(sid, {})[name] = ratio
    return out


def summarize(candidates: list[Candidate], groups: dict[str, str] | None = None) -> dict:
    """Per candidate: its status over the rounds, per-scenario speedup (geomean over rounds) and
    the geomean over the scenarios every candidate ran correctly (so the rows compare).

    `time_vs_first` is the geomean over those scenarios of the first file's kernel time over this
    file's (> 1: faster than the first). It leaves the baselines' own noise out, but not the
    clock's: under sustained load a GPU's clock sinks, so late runs of a call read slower than
    early ones. The speedup row, whose baselines are timed right beside
    the kernel, cancels that, so it is the one to decide on; the two agree with --cached-baselines.

    `groups` (scenario id -> label, from group_labels) adds the same rows per group."""
    per: dict[str, dict[str, list[float]]] = {}
    times: dict[str, dict[str, list[float]]] = {}
    bases: dict[str, dict[str, list[float]]] = {}
    failed: dict[str, str] = {}
    ids: list[str] = []
    for c in candidates:
        per[c.name], times[c.name], bases[c.name] = {}, {}, {}
        for r in c.runs:
            if r.get("status") != "correct":
                failed.setdefault(c.name, _failure(r))
            for s in r.get("scenarios") or []:
                if s["id"] not in ids:
                    ids.append(s["id"])
                if s.get("ok") and isinstance(s.get("speedup"), (int, float)):
                    per[c.name].setdefault(s["id"], []).append(float(s["speedup"]))
                if s.get("ok") and isinstance(s.get("time_ms"), (int, float)) and s["time_ms"] > 0:
                    times[c.name].setdefault(s["id"], []).append(float(s["time_ms"]))
                base = (s.get("baseline") or {}).get("time_ms") if s.get("ok") else None
                if isinstance(base, (int, float)) and base > 0:
                    bases[c.name].setdefault(s["id"], []).append(float(base))
    common = [i for i in ids if all(per[c.name].get(i) for c in candidates if c.name not in failed)]
    rows = {i: {c.name: geomean(per[c.name].get(i, [])) for c in candidates} for i in ids}
    time_rows = {i: {c.name: geomean(times[c.name].get(i, [])) for c in candidates} for i in ids}
    # Per group too: a group whose code no candidate changed is a control, and what it reads is the call's noise.
    labels = dict.fromkeys(groups[i] for i in common if i in groups) if groups else {}
    by_group = []
    for label in labels:
        members = [i for i in common if groups.get(i) == label]
        by_group.append({"label": label, "n": len(members),
                         **_rows_over(candidates, members, rows, time_rows, failed)})
    out = {"scenarios": ids, "common": common, "rows": rows, "time_ms": time_rows, "failed": failed,
           "baseline_off": _baseline_outliers(bases),
           **_rows_over(candidates, common, rows, time_rows, failed), "groups": by_group}
    out["time_saved_us"] = {c.name: _time_saved_us(time_rows, common, candidates[0].name, c.name)
                            for c in candidates}
    return out


def _time_saved_us(time_rows: dict, ids: list[str], first: str, name: str) -> float | None:
    """The median over `ids` of the first file's kernel time minus `name`'s, in microseconds
    (> 0: faster). A fixed cost that a change removes (a memset, a launch) shows here as one
    number across every shape, where the ratios fall with the scenario's length."""
    diffs = [(time_rows[i][first] - time_rows[i][name]) * 1000 for i in ids
             if time_rows[i].get(first) and time_rows[i].get(name)]
    return statistics.median(diffs) if diffs else None


def render(candidates: list[Candidate], summary: dict, rounds: int, seeds: list[int], times: bool = False) -> str:
    """The table of speedups per scenario and the summary rows; with `times` also the first file's
    kernel time over each file's per scenario (the baselines' noise left out) and the median time saved."""
    names = [c.name for c in candidates]
    width = max([len(i) for i in summary["scenarios"]]
                + [len("geomean (common scenarios)"), len(f"kernel time: {names[0]} / this")])
    cell = max(10, *(len(n) for n in names))

    def fmt(v, flagged: bool = False) -> str:  # a cell and its mark column ('!': see the note below the table)
        return (f"{v:>{cell}.3f}" if isinstance(v, float) else f"{'-':>{cell}}") + ("!" if flagged else " ")

    def row(label: str, cells) -> str:
        return f"{label:<{width}}  " + " ".join(cells).rstrip()

    lines = [f"speedup vs the fastest baseline, per scenario (geomean over {rounds} round(s), "
             f"seeds {', '.join(map(str, seeds))})",
             row("", (f"{n:>{cell}} " for n in names))]
    off = summary.get("baseline_off") or {}
    for sid in summary["scenarios"]:
        lines.append(row(sid, (fmt(summary["rows"][sid][n], n in off.get(sid, {})) for n in names)))
    lines.append(row("geomean (common scenarios)", (fmt(summary["geomean"][n]) for n in names)))
    lines.append(row("vs " + names[0], (fmt(summary["vs_first"][n]) for n in names)))
    lines.append(row(f"kernel time: {names[0]} / this", (fmt(summary["time_vs_first"][n]) for n in names)))
    groups = summary.get("groups") or []
    if groups:
        labels = [f"{g['label']} ({g['n']})" for g in groups]
        gw = max(width, *map(len, labels))
        blocks = (("vs_first", f"speedup vs {names[0]}"), ("time_vs_first", f"kernel time: {names[0]} / this"))
        for key, title in blocks:
            lines.append(f"{title + ', by group (scenarios)':<{gw}}")
            for label, g in zip(labels, groups):
                lines.append(f"{label:<{gw}}  " + " ".join(fmt(g[key][n]) for n in names).rstrip())
    if times:
        lines.append(f"kernel time: {names[0]} / this, per scenario")
        for sid in summary["scenarios"]:
            t = summary["time_ms"].get(sid, {})
            lines.append(row(sid, (fmt(t[names[0]] / t[n] if t.get(names[0]) and t.get(n) else None)
                                   for n in names)))
        saved = [summary["time_saved_us"][n] for n in names]
        lines.append(row("median time saved (us)",
                         (f"{v:>{cell}.2f} " if v is not None else f"{'-':>{cell}} " for v in saved)))
    if off:
        lines.append(f"! that run timed the baseline more than {BASELINE_OFF:.0%} off its median over all runs of the"
                     " scenario:\n  the cell reads the baseline's noise. The kernel time there (us), against the"
                     " first file's:")
        for sid, cells in off.items():
            for n, ratio in cells.items():
                t = summary["time_ms"].get(sid, {})
                mine, first = t.get(n), t.get(names[0])
                ktime = (f"kernel {mine * 1000:.1f} vs {first * 1000:.1f}" if mine and first and n != names[0]
                         else f"kernel {mine * 1000:.1f}" if mine else "no kernel time")
                lines.append(f"  {sid} {n}: baseline x{ratio:.2f}; {ktime}")
    for name, why in summary["failed"].items():
        lines.append(f"{name}: {why}")
    return "\n".join(lines)
