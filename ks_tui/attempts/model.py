"""Plain records the attempt store hands out: sessions and attempts (no git objects)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

# Statuses a harness run can end in, plus "unchecked" for a human edit committed without a run.
FAILED_STATUSES = ("compile_error", "crashed", "timeout", "incorrect")
STATUSES = ("correct", *FAILED_STATUSES, "unchecked")


@dataclass
class Attempt:
    session: str
    number: int
    sha: str
    time: datetime
    author: str              # agent | human
    status: str              # one of STATUSES
    correct: str             # "n/total", or "" when not measured
    speedup: float | None    # geomean vs the best baseline; None when not measured
    baseline: str | None
    question: str | None     # id of the question that preceded this attempt
    summary: str
    rollback_of: int | None
    best: bool = False
    mode: str = ""           # check | bench, alone or with -quick / -subset ("" if unknown)
    device: str = ""         # the GPU (or CPU) the result was measured on ("" if unknown or not measured)
    description: str = ""    # the whole summary when the commit subject had to cut it ("" otherwise)
    # words added later (ks remark): [{time, author, text}], oldest first; see attempts/remarks.py
    remarks: list[dict[str, str]] = field(default_factory=list)

    @property
    def short(self) -> str:
        return self.sha[:8]

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["time"] = self.time.isoformat()
        return d


@dataclass
class SessionInfo:
    id: str
    task: str
    branch: str
    worktree: Path
    created: datetime
    base: str = ""           # the commit the session branch started from

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "task": self.task, "branch": self.branch,
                "worktree": str(self.worktree), "created": self.created.isoformat(),
                "base": self.base}


@dataclass
class SessionSummary:
    id: str
    task: str
    branch: str
    attempts: int
    best_speedup: float | None
    best_attempt: int | None
    last_activity: datetime
    worktree_ok: bool

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["last_activity"] = self.last_activity.isoformat()
        return d


def current_device(attempts: list[Attempt]) -> str:
    """The device of the latest measured attempt that names one: the machine the session measures
    on now ("" when none names one). A rollback does not count: it carries its target's result."""
    return next((a.device for a in reversed(attempts) if a.device and a.rollback_of is None), "")


def fastest(attempts: list[Attempt]) -> Attempt | None:
    """The fastest correct timed attempt: of the whole-grid runs if there is one (a quick or --scenarios
    geomean covers other scenarios), else of the others; the earliest on a tie."""
    timed = [a for a in attempts if a.status == "correct" and a.speedup is not None]
    full = [a for a in timed if not a.mode.endswith(("quick", "subset"))]
    return max(full or timed, key=lambda a: a.speedup, default=None)


def fastest_on(attempts: list[Attempt], device: str) -> Attempt | None:
    """The fastest run measured on `device` (rollbacks measure nothing), for the devices a session has
    left (store.mark_best marks the current one's)."""
    return fastest([a for a in attempts if a.device == device and a.rollback_of is None])


def since_best(attempts: list[Attempt]) -> tuple[int | None, int]:
    """(the best correct attempt's number, how many attempts came after it): the plateau a session is on.
    (None, 0) when no attempt is marked best."""
    best = next((a.number for a in attempts if a.best), None)
    if best is None:
        return None, 0
    return best, sum(1 for a in attempts if a.number > best)
