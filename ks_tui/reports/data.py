"""What a session report page shows, gathered from the store, the trace and the efficacy records.

`gather` reads; `page_data` and the functions under it are pure (dicts in, dicts out), so the page can be
built from any session's parts, an imported one's included. Nothing here renders or escapes: text stays as
the attempts and questions wrote it, and html.py escapes it.

The scenario grid is derived from the scenario parameters alone, so it fits any task: the sequence lengths
make the columns, a mask parameter (causal) the panels, and the remaining parameters the families (rows),
less those that only follow the length (a batch that keeps tokens per scenario constant).
"""

from __future__ import annotations

import json
import math
import re
import statistics
from typing import Any, Iterable, Sequence

from ks_tui import best_rule
from ks_tui.harness.result import speedup_vs

FA3 = "fa3"
FASTEST = "fastest"  # the per-scenario `speedup`: against the fastest baseline that ran

_LENGTH_RE = re.compile(r"^(s|S|L|s_q|s_k|n_ctx)$|seq|len", re.IGNORECASE)
_MASK_KEYS = ("causal", "is_causal", "mask")


def gather(store, sid: str | None) -> dict[str, Any]:
    """Everything the page needs for session `sid` (the most recently active when None)."""
    from ks_tui.errors import KsError
    from ks_tui.questions.efficacy import EfficacyStore
    from ks_tui.trace import Trace

    info = store.session(sid) if sid else store.latest_session()
    attempts = [a.to_dict() for a in store.attempts(info.id)]
    records = Trace.read(store.trace_path(info.id))
    best = next((a for a in attempts if a.get("best")), None)
    best_result = store.result(info.id, best["number"]) if best else {}
    noise = 0.0
    try:
        from ks_tui.questions import default_bank_path, load_bank

        noise = load_bank(default_bank_path(store.workspace)).config.noise
    except (KsError, OSError):
        pass  # no readable bank: count every rise as a gain, as a bank without a noise setting does
    try:
        kernel_name = store.kernel_path(info.id).name
    except (KsError, OSError):
        kernel_name = ""
    efficacy = EfficacyStore(store.workspace).session_records(info.id)
    return page_data(info.to_dict(), records, attempts, best_result, efficacy, kernel_name=kernel_name, noise=noise)


def page_data(info: dict, records: list[dict], attempts: list[dict], best_result: dict,
              efficacy_records: Sequence[dict], *, kernel_name: str = "", noise: float = 0.0) -> dict[str, Any]:
    from ks_tui.agent.report import build_report

    summary = build_report(info, records, attempts)
    scenarios = [s for s in best_result.get("scenarios") or [] if isinstance(s, dict)]
    grid = scenario_grid(scenarios)
    return {"session": info, "summary": summary, "points": attempt_points(attempts),
            "asks": asked_questions(info.get("id", ""), efficacy_records, records),
            "best": _best(attempts, best_result), "grid": grid,
            "families": family_table(scenarios, grid, best_result),
            "efficacy": question_efficacy(efficacy_records, noise),
            "environment": environment(attempts, best_result),
            "commands": reproduce_commands(info, summary.get("best_attempt"), kernel_name, bool(attempts))}


# ------------------------------------------------------------------ attempts over time

def attempt_points(attempts: list[dict]) -> list[dict[str, Any]]:
    """One point per attempt, with the best speedup so far by the attempt log's rule (best_rule): whole-grid
    runs over quick and subset ones, and only runs on the device of the latest measurement."""
    out, seen = [], []
    for i, a in enumerate(attempts):
        mode = a.get("mode") or ""
        p: dict[str, Any] = {"number": int(a.get("number", i + 1)), "speedup": _num(a.get("speedup")),
             "status": a.get("status") or "", "correct": a.get("correct") or "", "mode": mode,
             "full_grid": not mode.endswith(("quick", "subset")), "device": a.get("device") or "",
             "summary": a.get("summary") or "", "question": a.get("question") or "",
             "author": a.get("author") or "", "time": a.get("time") or "", "best": bool(a.get("best")),
             "rollback_of": a.get("rollback_of"),
             "remarks": [r.get("text", "") for r in a.get("remarks") or [] if isinstance(r, dict)]}
        seen.append(p)
        here = best_rule.latest_device((q["device"], q["rollback_of"] is None) for q in seen)
        timed = [q for q in seen if q["status"] == "correct" and q["speedup"] is not None
                 and best_rule.comparable(q["device"], here)]
        top = best_rule.fastest(timed, lambda q: q["speedup"], lambda q: q["full_grid"])
        p["best_so_far"] = top["speedup"] if top else None
        out.append(p)
    return out


def asked_questions(sid: str, efficacy_records: Sequence[dict], records: list[dict]) -> list[dict[str, Any]]:
    """The questions asked, each after the attempt it followed: from the efficacy records (every ask, the
    screen's, the headless runner's and `ks try --question`'s), else from the trace's question events."""
    from ks_tui.questions.efficacy import asks_as_retagged

    asks = [a for a in asks_as_retagged([r for r in efficacy_records if isinstance(r, dict)]).values()
            if not sid or a.get("session") in (None, sid)]
    if asks:
        return [{"after": int(a.get("after_attempt") or 0), "id": str(a.get("question") or ""),
                 "text": a.get("text") or "", "chosen_by": a.get("chosen_by") or "", "point": a.get("point") or "",
                 "category": a.get("category") or ""} for a in asks]
    out, attempts_seen = [], 0
    for rec in records:
        kind, p = rec.get("kind"), rec.get("payload") or {}
        if kind == "attempt":
            attempts_seen = max(attempts_seen, int((p.get("attempt") or {}).get("number") or 0))
        elif kind == "question":
            out.append({"after": attempts_seen, "id": str(p.get("question_id") or ""), "text": p.get("text") or "",
                        "chosen_by": p.get("chosen_by") or "", "point": p.get("point") or "",
                        "category": p.get("category") or ""})
    return out


def question_efficacy(efficacy_records: Sequence[dict], noise: float = 0.0) -> list[dict[str, Any]]:
    """Per question: asked, settled, led to a new best, median gain (questions/efficacy.py's statistics over
    this session's records), the most asked first."""
    from ks_tui.questions.efficacy import compute_stats

    stats = compute_stats([r for r in efficacy_records if isinstance(r, dict)], noise=noise)
    rows = [{"id": qid, **t.to_dict()} for qid, t in stats.questions.items()]
    return sorted(rows, key=lambda r: (-r["asked"], -(r["new_best"] or 0), r["id"]))


def _best(attempts: list[dict], result: dict) -> dict[str, Any] | None:
    best = next((a for a in attempts if a.get("best")), None)
    if best is None:
        return None
    return {"number": best.get("number"), "speedup": _num(best.get("speedup")), "mode": best.get("mode") or "",
            "device": best.get("device") or result.get("device") or "", "correct": best.get("correct") or "",
            "summary": best.get("summary") or "", "geomean_speedup": _num(result.get("geomean_speedup")),
            "geomean_by_baseline": {k: v for k, v in (result.get("geomean_by_baseline") or {}).items()
                                    if _num(v) is not None}}


# ------------------------------------------------------------------ the scenario grid

def scenario_grid(scenarios: list[dict]) -> dict[str, Any]:
    """Families x lengths for each mask, from the scenarios' `shape` parameters.

    Returns {column: name of the length parameter the columns show, mask: the mask parameter or None,
    columns: [values], masks: [values], families: [{key, label}], cells: [{family, column, mask, ...}],
    has_sol: any scenario with a speed-of-light fraction}."""
    shapes: list[dict] = [s["shape"] if isinstance(s.get("shape"), dict) else {} for s in scenarios]
    keys: list[str] = []
    for sh in shapes:
        keys += [k for k in sh if k not in keys]
    values = {k: [_hashable(sh.get(k)) for sh in shapes] for k in keys}
    lengths = [k for k in keys if _LENGTH_RE.search(k) and _numeric(values[k])]
    varying = [k for k in lengths if len(set(values[k])) > 1] or lengths
    # The length with the fewest values makes the columns (a grid's S over s_k, which a ragged or prefill
    # family shifts); s_k before s_q on a tie: a decode step varies the keys.
    order = {"s_k": 0, "s_q": 1}
    column = min(varying, key=lambda k: (len(set(values[k])), order.get(k, 2), keys.index(k)), default=None)
    mask = next((k for k in keys if k.lower() in _MASK_KEYS), None)
    family_keys = [k for k in keys if k not in lengths and k != mask]
    if column and _is_axis(values, column, family_keys, len(shapes)):
        # a parameter set by the length alone is no family of its own (a batch that keeps tokens constant)
        family_keys = [k for k in family_keys
                       if len(set(values[k])) == 1 or _varies(values, [column], k, len(shapes))]
    label_keys = _label_keys(values, family_keys, len(shapes))
    fams: dict[tuple, dict] = {}
    cells = []
    for i, s in enumerate(scenarios):
        fkey = tuple(values[k][i] for k in family_keys)
        fams.setdefault(fkey, {"key": dict(zip(family_keys, fkey)),
                               "label": _label({k: values[k][i] for k in label_keys}) or "all"})
        sol = s["speed_of_light"] if isinstance(s.get("speed_of_light"), dict) else {}
        base = s["baseline"] if isinstance(s.get("baseline"), dict) else {}
        cells.append({"id": str(s.get("id") or i), "family": fams[fkey]["label"],
                      "column": values[column][i] if column else None,
                      "mask": values[mask][i] if mask else None, "ok": bool(s.get("ok")),
                      "speedup": _num(s.get("speedup")) if s.get("ok") else None,
                      "time_ms": _num(s.get("time_ms")), "tflops": _num(s.get("tflops")),
                      "baseline": base.get("name") or "", "baseline_ms": _num(base.get("time_ms")),
                      "sol_fraction": _num(sol.get("fraction")), "sol_bound": sol.get("bound") or "",
                      "error": "" if s.get("ok") else _error_text(s),
                      "shape": {k: shapes[i][k] for k in keys if k in shapes[i]}})
    # by the named parameters first (d=16 before d=24 whatever batch each has), then the rest
    families = sorted(fams.values(), key=lambda f: tuple(_sort_key(f["key"][k]) for k in label_keys)
                      + tuple(_sort_key(v) for v in f["key"].values()))
    return {"column": column, "mask": mask, "family_keys": family_keys, "label_keys": label_keys,
            "columns": sorted({c["column"] for c in cells if c["column"] is not None}, key=_sort_key),
            "masks": sorted({c["mask"] for c in cells}, key=_sort_key),
            "families": families, "cells": cells,
            "has_sol": any(c["sol_fraction"] is not None for c in cells)}


def mask_label(mask: str | None, value: Any) -> str:
    if mask is None:
        return "all scenarios"
    if isinstance(value, bool) and mask.lower() in ("causal", "is_causal"):
        return "causal" if value else "unmasked"
    return f"{mask}={value}"


def _is_axis(values: dict[str, list], column: str, keys: list[str], n: int) -> bool:
    """Whether every length in the column is shared by scenarios that differ in other parameters: a grid axis,
    not one length per configuration (then nothing can be said to follow it)."""
    seen: dict[Any, set] = {}
    for i in range(n):
        seen.setdefault(values[column][i], set()).add(tuple(values[k][i] for k in keys))
    return bool(seen) and min(len(v) for v in seen.values()) > 1


def _varies(values: dict[str, list], by: list[str], k: str, n: int) -> bool:
    """Whether k takes more than one value inside some group of equal `by` values."""
    seen: dict[tuple, Any] = {}
    for i in range(n):
        g = tuple(values[b][i] for b in by)
        if seen.setdefault(g, values[k][i]) != values[k][i]:
            return True
    return False


def _label_keys(values: dict[str, list], family_keys: list[str], n: int) -> list[str]:
    """The family parameters worth naming: not constant over the grid, and no float the others imply (a scale
    derived from the head dimension)."""
    keep = [k for k in family_keys if len(set(values[k])) > 1]

    def groups(ks: list[str]) -> int:
        return len({tuple(values[k][i] for k in ks) for i in range(n)})

    whole = groups(keep)
    for k in [k for k in keep if any(isinstance(v, float) for v in values[k])]:
        rest = [x for x in keep if x != k]
        if rest and groups(rest) == whole:
            keep = rest
    return [k for k in family_keys if k in keep]


def _label(params: dict[str, Any]) -> str:
    """"d=128 h_kv=8 h_q=32 bf16 prefill": numbers named, words (a dtype, a kind) alone after them."""
    parts = []
    for k, v in sorted(params.items(), key=lambda kv: isinstance(kv[1], str)):
        if isinstance(v, bool):
            parts.append(k if v else f"no {k}")
        elif isinstance(v, str):
            parts.append(v)
        else:
            parts.append(f"{k}={_short(v)}")
    return " ".join(parts)


def _error_text(s: dict) -> str:
    e = s.get("error")
    if isinstance(e, dict):
        return str(e.get("what") or e.get("message") or "incorrect")
    return str(e or s.get("message") or "incorrect")


# ------------------------------------------------------------------ families against each baseline

def family_table(scenarios: list[dict], grid: dict, result: dict) -> dict[str, Any]:
    """Geomean speedup per family and mask against each baseline that ran (FA3 first, then the fastest
    baseline per scenario, then the others in the order the results name them), the whole grid last."""
    names: list[str] = []
    for s in scenarios:
        names += [n for n in (s.get("baselines") or {}) if n not in names]
    skipped: dict[str, str] = {}
    for s in scenarios:
        for n, why in (s.get("skipped_baselines") or {}).items():
            if n not in names:
                skipped.setdefault(n, str(why))
    columns = ([FA3] if FA3 in names else []) + [FASTEST] + [n for n in names if n != FA3]
    groups: dict[tuple[str, Any], list[dict]] = {}
    for cell, s in zip(grid["cells"], scenarios):
        groups.setdefault((cell["family"], cell["mask"]), []).append(s)
    order = {f["label"]: i for i, f in enumerate(grid["families"])}
    rows = []
    for (fam, mask), members in sorted(groups.items(), key=lambda kv: (order.get(kv[0][0], 0), _sort_key(kv[0][1]))):
        rows.append({"family": fam, "mask": mask_label(grid["mask"], mask) if grid["mask"] else "",
                     "n": len(members), "correct": sum(1 for s in members if s.get("ok")),
                     "by": {c: _geomean(_speedups(members, c)) for c in columns},
                     "sol": _geomean(_num((s.get("speed_of_light") or {}).get("fraction")) for s in members
                                     if isinstance(s.get("speed_of_light"), dict))})
    overall = {c: _geomean(_speedups(scenarios, c)) for c in columns}
    # The harness's own figures where it gave them (its geomean covers the scenarios it chose).
    if _num(result.get("geomean_speedup")) is not None:
        overall[FASTEST] = result["geomean_speedup"]
    for n, v in (result.get("geomean_by_baseline") or {}).items():
        if n in overall and _num(v) is not None:
            overall[n] = v
    return {"columns": columns, "rows": rows, "overall": overall, "skipped": skipped,
            "fa3_missing": FA3 in skipped, "has_sol": any(r["sol"] is not None for r in rows)}


def _speedups(scenarios: Iterable[dict], column: str) -> list[float | None]:
    out = []
    for s in scenarios:
        t = _num(s.get("time_ms"))
        if not s.get("ok") or not t:
            continue
        if column == FASTEST:
            out.append(_num(s.get("speedup")))
        else:
            out.append(_num(speedup_vs(s, column)))
    return out


# ------------------------------------------------------------------ where and how to reproduce

def environment(attempts: list[dict], result: dict) -> dict[str, Any]:
    devices: dict[str, int] = {}
    for a in attempts:
        if a.get("device"):
            devices[a["device"]] = devices.get(a["device"], 0) + 1
    return {"devices": devices, "best_device": result.get("device") or "", "torch": result.get("torch") or "",
            "cuda": result.get("cuda") or "", "seed": result.get("seed"), "mode": result.get("mode") or "",
            "compile": (result.get("compile") or {}).get("command") or ""}


def reproduce_commands(info: dict, best: int | None, kernel_name: str,
                       exportable: bool = True) -> list[tuple[str, str]]:
    """(what, command) pairs: bring the session elsewhere (it needs an attempt to export), look at it, and re-time
    its best kernel."""
    sid, task = info.get("id", "SESSION"), info.get("task", "TASK")
    out = [("carry the session to another checkout", f"ks session export {sid} {sid}.tar.gz"),
           ("and there", f"ks session import {sid}.tar.gz")] if exportable else []
    out.append(("its attempts", f"ks log -s {sid}"))
    if best is not None:
        name = f"best_{kernel_name}" if kernel_name else "best_kernel"
        out += [("the best kernel", f"ks show {best} -s {sid} --kernel > {name}"),
                ("time it again (the whole grid)", f"ks bench {task} --source {name}")]
    out.append(("this page", f"ks report {sid} --html {sid}.html"))
    return out


# ------------------------------------------------------------------ small helpers

def _num(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return None
    return float(x)


def _geomean(xs: Iterable[float | None]) -> float | None:
    vals = [x for x in xs if x is not None and x > 0]
    return math.exp(statistics.fmean(math.log(x) for x in vals)) if vals else None


def _hashable(v: Any) -> Any:
    return v if isinstance(v, (str, int, float, bool, type(None))) else json.dumps(v, sort_keys=True, default=str)


def _numeric(vs: list) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vs)


def _sort_key(v: Any) -> tuple:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return (1, v, "")
    return (0 if isinstance(v, bool) else 2, 0, str(v))


def _short(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)
