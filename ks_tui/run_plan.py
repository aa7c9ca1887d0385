"""Which harness run a person's run keys start on a task: on a large grid, the quick subset first.

Pairing for hours, an engineer wants a verdict within seconds of each edit. On a large task the full
grid takes minutes (flash_attn_fwd: 182 scenarios, over three minutes on an H100) while its quick
subset (13 scenarios, one per head configuration and mask) answers in under twenty seconds. So on a
task with more than QUICK_FIRST_ABOVE scenarios the default run (`r` on the screen) is the quick
subset and the other run (`R`) the full grid; on a small task the full grid is already quick, so it
is the default and the quick subset the other. Both are bench runs (check, then timing).

A quick run proves nothing about the grid, and a quick geomean does not take the best mark from a
full-grid one (best_rule). When a person's quick run is correct and the fastest quick run so far,
`full_grid_offer` says so: that is when the full grid is worth its minutes.

The screen, the headless runner and the engine all read this; it imports nothing of theirs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

QUICK_FIRST_ABOVE = 40  # scenarios; above this the default run is the quick subset

DEFAULT = "default"  # `r`
OTHER = "other"      # `R`


@dataclass(frozen=True)
class RunPlan:
    scenarios: int      # the full grid
    quick: int          # the quick subset
    quick_first: bool   # the default run is the quick subset

    def is_quick(self, which: str) -> bool:
        """Whether run `which` (DEFAULT or OTHER) is the quick subset."""
        return self.quick_first == (which == DEFAULT)

    def label(self, which: str) -> str:
        return "quick" if self.is_quick(which) else "full"

    def describe(self, which: str) -> str:
        """'the quick subset (13 scenarios)' or 'the full grid (182 scenarios)'."""
        if self.is_quick(which):
            return f"the quick subset ({self.quick} scenario{'s' * (self.quick != 1)})"
        return f"the full grid ({self.scenarios} scenario{'s' * (self.scenarios != 1)})"


def plan_for(scenarios: int, quick: int) -> RunPlan:
    """The plan for a task with `scenarios` in its grid and `quick` in its quick subset."""
    return RunPlan(scenarios, quick, scenarios > QUICK_FIRST_ABOVE and 0 < quick < scenarios)


def task_plan(task: Any) -> RunPlan:
    """The plan for a ks_tui.task.Task."""
    return plan_for(len(task.scenarios), len(task.quick))


def _is_quick_run(attempt: dict[str, Any]) -> bool:
    return str(attempt.get("mode") or "").endswith("-quick")


def full_grid_offer(attempts: list[dict[str, Any]]) -> str | None:
    """Why the full grid is worth running now, or None: the latest attempt (attempt dicts, oldest first)
    is a person's quick run, correct, and faster than every earlier correct quick run measured on the
    same machine (quick geomeans compare only with each other)."""
    if not attempts:
        return None
    latest = attempts[-1]
    speedup = latest.get("speedup")
    if (not _is_quick_run(latest) or latest.get("status") != "correct" or speedup is None
            or latest.get("author") != "human" or latest.get("rollback_of")):
        return None
    device = latest.get("device") or ""
    earlier = [a["speedup"] for a in attempts[:-1]
               if _is_quick_run(a) and a.get("status") == "correct" and a.get("speedup") is not None
               and not a.get("rollback_of") and (a.get("device") or "") in ("", device)]
    if earlier and speedup <= max(earlier):
        return None
    fastest = "the fastest quick run so far" if earlier else "the first correct quick run"
    return (f"attempt #{latest.get('number')} is correct on the quick subset ({latest.get('correct')}) "
            f"at {speedup:.3f}x, {fastest}")
