"""Two recorded benches of one task, scenario by scenario.

Benches made in different device calls differ by the machine as well as by the kernel: a GPU's
clocks and the libraries' times drift by a percent or two between calls. The baselines' own times
show how much: a kernel change leaves them alone, so when they moved, the speedups moved with them
(a kernel faster on the few scenarios it changed can read slower on the whole grid when the rest,
identical code, drifted).
"""

from __future__ import annotations

import math

from ks_tui.harness.result import geomean

# Baselines that moved by more than this between two runs point at the machine, not the kernel.
DRIFT_WARN = 0.01


def _timed(result: dict) -> dict[str, dict]:
    """Scenarios with a correct, timed run and a baseline time, by id."""
    out = {}
    for s in result.get("scenarios") or []:
        base = (s.get("baseline") or {}).get("time_ms")
        if s.get("ok") and s.get("speedup") and s.get("time_ms") and base:
            out[str(s.get("id"))] = s
    return out


def compare_results(new: dict, old: dict, top: int = 8) -> dict | None:
    """new against old on the scenarios both timed; None when they share none.

    kernel_time and baseline_time are old / new (above 1: faster in new); speedup is new / old.
    """
    a, b = _timed(new), _timed(old)
    common = [i for i in a if i in b]
    if not common:
        return None
    rows = []
    for i in common:
        rows.append({
            "id": i,
            "old_speedup": b[i]["speedup"], "new_speedup": a[i]["speedup"],
            "speedup": a[i]["speedup"] / b[i]["speedup"],
            "kernel_time": b[i]["time_ms"] / a[i]["time_ms"],
            "baseline_time": b[i]["baseline"]["time_ms"] / a[i]["baseline"]["time_ms"],
        })
    moved = sorted(rows, key=lambda r: -abs(math.log(r["speedup"])))[:top]
    devices = [new.get("device"), old.get("device")]
    return {
        "devices": devices if all(devices) and devices[0] != devices[1] else None,
        "scenarios": len(common),
        "only_new": len(a) - len(common), "only_old": len(b) - len(common),
        "old_geomean": geomean([r["old_speedup"] for r in rows]),
        "new_geomean": geomean([r["new_speedup"] for r in rows]),
        "speedup": geomean([r["speedup"] for r in rows]),
        "kernel_time": geomean([r["kernel_time"] for r in rows]),
        "baseline_time": geomean([r["baseline_time"] for r in rows]),
        "moved_most": moved,
    }


def comparison_text(cmp: dict | None, label: str) -> str:
    """A few lines for `ks show`: the geomeans, the drift of the baselines, the scenarios that moved most."""
    if cmp is None:
        return f"no scenario timed in both this attempt and {label}"
    lines = [f"speed against {label} ({cmp['scenarios']} scenarios timed in both):",
             f"  geomean speedup {cmp['old_geomean']:.4f}x -> {cmp['new_geomean']:.4f}x (x{cmp['speedup']:.4f}); "
             f"kernel time {label} / this {cmp['kernel_time']:.4f}; baseline time {label} / this {cmp['baseline_time']:.4f}"]
    drift = cmp["baseline_time"] - 1
    if cmp.get("devices"):
        here, there = cmp["devices"]
        lines.append(f"  measured on different devices ({here} here, {there} in {label}'s run): the speedups "
                     "do not compare; time both kernels on one machine (`ks compare`)")
    elif abs(drift) > DRIFT_WARN:
        lines.append(f"  the baselines ran {abs(drift):.1%} {'faster' if drift < 0 else 'slower'} in {label}'s run: "
                     "the machine moved between the two runs; compare both files in one `ks compare` run")
    if cmp["moved_most"]:
        lines.append("  moved most (speedup):")
        for r in cmp["moved_most"]:
            lines.append(f"    {r['id'][:40]:<40} {r['old_speedup']:.3f}x -> {r['new_speedup']:.3f}x "
                         f"{(r['speedup'] - 1):+.1%}")
    return "\n".join(lines)
