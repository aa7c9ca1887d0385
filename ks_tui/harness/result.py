"""The result JSON: its skeleton, the summary fields, and the one-line message.

Standard library only: the parent builds crash/timeout results with the same code the child
uses for normal ones.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

SCHEMA = 1
STATUSES = ("compile_error", "crashed", "timeout", "incorrect", "correct", "cancelled")


def sha256_file(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def grid_selection(task, ids: list[str] | None) -> list[str] | None:
    """The ids of a --scenarios selection, or None when they name every scenario of the grid (such
    a run is a full-grid run: its geomean is the grid's)."""
    if not ids or set(ids) >= {s.id for s in task.scenarios}:
        return None
    return list(ids)


def skeleton(task, source: Path, mode: str, quick: bool, seed: int | None,
             selection: list[str] | None = None) -> dict:
    # selection: the scenario ids asked for with --scenarios (None: the whole grid or the quick
    # subset), so a subset's geomean is never taken for the grid's.
    selection = grid_selection(task, selection)
    return {
        "schema": SCHEMA, "task": task.name, "kernel_sha256": sha256_file(source),
        "source": str(source), "mode": mode, "quick": quick, "seed": seed,
        "selection": list(selection) if selection else None,
        "device": None, "torch": None, "cuda": None, "threads": None,
        "status": None, "message": "",
        "compile": None, "scenarios": [], "correct": None,
        "geomean_speedup": None, "geomean_by_baseline": {},
        "warnings": [], "stderr_tail": "", "timings": {},
    }


INVALID_WARNING = "invalid timing on "


def geomean(values: list[float]) -> float | None:
    vals = [v for v in values if v is not None and v > 0]
    if not vals:
        return None
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def speedup_vs(s: dict, name: str) -> float | None:
    """A scenario's speedup against one library: as its `speedup` is against the fastest, the paired ratio
    where they took turns (timing.paired), else the library's median time over the kernel's."""
    paired = ((s.get("timing") or {}).get("paired") or {}).get(name)
    if paired:
        return float(paired)
    t, bt = s.get("time_ms"), (s.get("baselines") or {}).get(name)
    return bt / t if t and bt else None


def summarize(result: dict, total: int | None = None) -> dict:
    """Fill `correct`, `geomean_speedup` and `geomean_by_baseline` from the scenarios."""
    scen = result["scenarios"]
    total = len(scen) if total is None else total
    result["correct"] = f"{sum(1 for s in scen if s.get('ok'))}/{total}"
    # An invalid scenario (faster than its speed of light, or work hidden from the timing events)
    # is no gain: its speedup stays in the table but out of every geomean.
    invalid = [s for s in scen if s.get("invalid")]
    valid = [s for s in scen if not s.get("invalid")]
    result["invalid"] = len(invalid)
    result["geomean_speedup"] = geomean([s.get("speedup") for s in valid])
    by_name: dict[str, list[float]] = {}
    for s in valid:
        for name in s.get("baselines") or {}:
            r = speedup_vs(s, name)
            if r:
                by_name.setdefault(name, []).append(r)
    result["geomean_by_baseline"] = {n: geomean(v) for n, v in sorted(by_name.items())}
    timed = [s for s in valid if s.get("time_ms")]
    bare = [s for s in timed if not s.get("speedup")]
    result["geomean_scenarios"] = len(timed) - len(bare)
    warnings = [w for w in result.get("warnings") or []
                if not w.startswith(("geomean over ", INVALID_WARNING))]
    if invalid:
        first = invalid[0]
        warnings.append(f"{INVALID_WARNING}{len(invalid)} scenario(s), left out of the geomean; first "
                        f"{first.get('id')}: {first['invalid'][0] if isinstance(first['invalid'], list) else first['invalid']}")
    if any(s.get("speed_of_light") for s in scen):
        from ks_tui.harness.sol import family_summary

        sol = result.get("speed_of_light") if isinstance(result.get("speed_of_light"), dict) else {}
        result["speed_of_light"] = {**sol, "families": family_summary(scen)}
    if bare:  # a geomean over fewer scenarios than were timed (or none) must not pass silently
        why = "; ".join(sorted({f"{k}: {v}" for s in bare for k, v in (s.get("skipped_baselines") or {}).items()}))
        warnings.append(f"geomean over {len(timed) - len(bare)} of {len(timed)} timed scenarios: "
                        f"no baseline ran on {len(bare)} scenario(s) ({why or 'none listed'})")
    result["missing_baselines"] = missing_baselines(timed)
    result["baseline_caveat"] = baseline_caveat(result)
    result["warnings"] = warnings
    return result


# The anchor: the paper's headline, and the library a kernel engineer compares against first.
ANCHOR = "fa3"


def missing_baselines(timed: list[dict]) -> dict[str, str]:
    """Listed baselines that ran on none of the timed scenarios, with the first reason given."""
    ran = {n for s in timed for n in (s.get("baselines") or {})}
    missing: dict[str, str] = {}
    for s in timed:
        for name, why in (s.get("skipped_baselines") or {}).items():
            if name not in ran:
                missing.setdefault(name, why)
    return dict(sorted(missing.items(), key=lambda kv: (kv[0] != ANCHOR, kv[0])))


def _label(name: str) -> str:
    return name.upper() if name == ANCHOR else name


def baseline_caveat(result: dict) -> str | None:
    """'FA3 not installed: speedup is against sdpa_cudnn / sdpa_flash only' when the anchor was
    listed but never ran, so nobody takes a figure against weaker libraries for one against it.
    Other listed libraries that never ran are in `missing_baselines` only: with the anchor timed,
    their absence does not weaken the headline."""
    missing = result.get("missing_baselines") or {}
    ran = baseline_order(result.get("geomean_by_baseline") or {})
    if ANCHOR not in missing or not ran:
        return None
    why = missing[ANCHOR]
    said = "not installed" if ("not installed" in why or "not importable" in why) else "did not run"
    return f"{_label(ANCHOR)} {said}: speedup is against {' / '.join(ran)} only"


def baseline_order(by_baseline: dict) -> list[str]:
    """Baseline names with the anchor first, then by name."""
    return sorted(by_baseline, key=lambda n: (n != ANCHOR, n))


def by_baseline_text(result: dict) -> str:
    """'vs fa3 1.006x · vs sdpa_cudnn 1.160x'."""
    by = result.get("geomean_by_baseline") or {}
    return " · ".join(f"vs {n} {by[n]:.3f}x" for n in baseline_order(by) if by[n])


def where_text(progress: dict | None) -> str:
    """' during check of <id>' from the last progress line: where a run died."""
    p = progress or {}
    if not p.get("phase"):
        return ""
    return f" during {p['phase']}" + (f" of {p['scenario']}" if p.get("scenario") else "")


def failure_message(result: dict) -> str:
    bad = [s for s in result["scenarios"] if s.get("ok") is False]
    if not bad:
        return ""
    first = bad[0]
    what = (first.get("error") or {}).get("what") or "incorrect"
    return f"{len(bad)}/{len(result['scenarios'])} scenarios incorrect; first {first['id']}: {what}"
