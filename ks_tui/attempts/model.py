"""Plain records the attempt store hands out: sessions and attempts (no git objects)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable

from ks_tui import best_rule

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
    question: str | None     # id of the question that preceded this attempt (a remark's over the trailer's)
    summary: str
    rollback_of: int | None
    best: bool = False
    mode: str = ""           # check | bench, alone or with -quick / -subset ("" if unknown)
    device: str = ""         # the GPU (or CPU) the result was measured on ("" if unknown or not measured)
    description: str = ""    # the whole summary when the commit subject had to cut it ("" otherwise)
    # the kernel's code identity as committed in this attempt (attempts/code_identity.py: comments and layout
    # left out), so a comment-only edit is the same kernel; "" when unknown
    code: str = ""
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
    """The machine the session measures on now (best_rule.latest_device; a rollback measures nothing)."""
    return best_rule.latest_device((a.device, a.rollback_of is None) for a in attempts)


def short_device(name: str, names: Iterable[str]) -> str:
    """`name` without the first word that every name of `names` shares: among "NVIDIA H200" and
    "NVIDIA H100 80GB HBM3" a run tagged with its device reads "H200" (the vendor tells two of its
    cards apart no better than the rest of the name does; the full names stay in the log's footer)."""
    named = [n for n in names if n]
    firsts = {n.split(" ", 1)[0] for n in named}
    word, _, rest = name.partition(" ")
    if len(firsts) == 1 and word in firsts and rest and all(" " in n for n in named):
        return rest
    return name


def fastest(attempts: list[Attempt]) -> Attempt | None:
    """The fastest correct timed attempt by best_rule.fastest (whole-grid runs first)."""
    return best_rule.fastest([a for a in attempts if a.status == "correct"], lambda a: a.speedup,
                             lambda a: not a.mode.endswith(("quick", "subset")))


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
