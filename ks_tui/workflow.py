"""One workflow for a session's kernel: run the harness, record the attempt, trace it, settle
the question records; and the log view every front end shows.

`ks try`, the engine (the screen's `r` key and the agent's run_harness tool) and `ks log` /
the history screen all go through here, so they record and read attempts the same way.
Below the engine and the CLI; above the attempts store, the harness client and the questions.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ks_tui.attempts.model import Attempt, SessionInfo, since_best
from ks_tui.errors import KsError

UNCHANGED_NOTE = "kernel unchanged since the last attempt: no new attempt recorded"


@dataclass
class Recorded:
    """What one run came to: the attempt (None when nothing was recorded, `note` says why),
    the harness result, and the session's attempts after it (read once)."""

    attempt: Attempt | None
    result: dict
    attempts: list[Attempt] = field(default_factory=list)
    note: str = ""
    unchanged_since: Attempt | None = None  # set when the kernel equals this attempt's

    @property
    def best(self) -> int:
        """The attempt the store marks best after this run (0 when none is)."""
        return next((a.number for a in self.attempts if a.best), 0)


@dataclass
class LogView:
    """A session's attempts as `ks log` and the screens show them, with the best mark and the
    plateau (questions.plateau) judged at one bank's thresholds."""

    session: SessionInfo
    attempts: list[Attempt]
    best: int | None                 # the attempt the store marks best, None when none is
    attempts_since_best: int
    plateau: Any = None              # questions.plateau.Plateau, None without attempts

    @property
    def best_attempt(self) -> Attempt | None:
        return next((a for a in self.attempts if a.number == self.best), None)

    def plateau_lines(self) -> list[str]:
        """The last real gain and why the best mark sits where it does."""
        from ks_tui.questions.plateau import plateau_lines

        return plateau_lines(self.plateau, self.best) if self.plateau is not None else []

    def gain_lines(self) -> list[str]:
        """What the next attempt needs to count as a gain."""
        from ks_tui.questions.plateau import gain_needs_lines

        return gain_needs_lines(self.plateau) if self.plateau is not None else []

    def to_dict(self) -> dict:
        empty: dict[str, Any] = {"noise": None, "last_gain": None, "attempts_since_gain": None, "last_gain_paired": None,
                 "best_lead": None, "gain_needs": None, "gain_needs_elsewhere": []}
        return {"session": self.session.to_dict(), "attempts": [a.to_dict() for a in self.attempts],
                "best": self.best, "attempts_since_best": self.attempts_since_best,
                **(self.plateau.to_dict() if self.plateau is not None else empty)}


# ------------------------------------------------------------------------------ running

def read_kernel(path: Path) -> bytes | None:
    """The kernel's bytes as the harness is about to read them (kept if the file changes during
    the run, so the attempt commits what was measured); None when missing or unreadable."""
    with contextlib.suppress(OSError):
        return Path(path).read_bytes()
    return None


def run_harness(task, kernel: Path, *, mode: str, quick: bool, timeout: float | None = None,
                on_progress: Callable[[dict], None] | None = None, cancel=None,
                cluster: str = "", pool=None) -> tuple[dict, bytes | None]:
    """(the harness result, the kernel bytes it measured). A cancelled run's status is 'cancelled'.
    `cluster` (KS_CLUSTER / the config's `cluster`): the scenarios spread over that Dask scheduler's workers;
    `pool` (harness.warm.WarmPool): a pre-started harness child serves a run on this machine."""
    from ks_tui.harness.client import run_harness as client_run

    measured = read_kernel(kernel)
    kw: dict = {"on_progress": on_progress}
    if timeout is not None:
        kw["timeout"] = timeout
    if cancel is not None:
        kw["cancel"] = cancel
    if cluster:
        from ks_tui.cluster.run import run_configured

        kw.pop("timeout", None)  # each worker's run keeps the task's own limit
        return run_configured(task, kernel, cluster, mode=mode, quick=quick, **kw), measured
    return client_run(task, kernel, mode=mode, quick=quick, pool=pool, **kw), measured


def record_run(store, sid: str, result: dict, measured: bytes | None, *, author: str,
               question: str | None = None, summary: str = "", remeasure: bool = False,
               trace: bool = True) -> Recorded:
    """Commit the measured kernel as an attempt with its result (the caller holds the session
    lock), trace it unless the caller's own event stream does, and read the attempts once.
    A KsError from the store (e.g. the kernel changed during the run) propagates."""
    attempt = store.record_measured(sid, measured, result, author=author, question=question,
                                    summary=summary, remeasure=remeasure)
    if attempt is None:
        return Recorded(None, result, note=UNCHANGED_NOTE)
    if trace:
        compact = {k: result.get(k) for k in ("status", "correct", "geomean_speedup", "mode", "quick", "message")}
        store.trace(sid).append("attempt", {"attempt": attempt.to_dict(), "result": compact})
    return Recorded(attempt, result, store.attempts(sid))


def try_kernel(store, sid: str, *, mode: str = "bench", quick: bool = False, author: str = "human",
               question: str | None = None, summary: str = "", timeout: float | None = None,
               on_progress: Callable[[dict], None] | None = None, again: bool = False,
               no_run: bool = False, on_start: Callable[[Any], None] | None = None,
               prepare: Callable[[], None] | None = None, pool=None) -> Recorded:
    """`ks try`'s whole sequence under the session lock: refuse a bad worktree, skip an unchanged
    kernel (unless `again`), run the harness (or record 'unchecked' with `no_run`), record, trace.
    `prepare` runs under the lock first (e.g. copying another kernel file into the worktree); `pool`: a
    pre-started harness child serves the run (harness/warm.py, harness/standby.py)."""
    with store.lock(sid):
        store.check(sid)  # refuse a detached/dirty/locked worktree before a long harness run
        if prepare is not None:
            prepare()
        same = store.unchanged_since(sid)
        if same is not None and not again:
            return Recorded(None, {}, note=UNCHANGED_NOTE, unchanged_since=same)
        if no_run:
            result, measured = {"status": "unchecked"}, None
        else:
            task = store.task(sid)
            if on_start is not None:
                on_start(task)
            result, measured = run_harness(task, task.kernel, mode=mode, quick=quick, timeout=timeout,
                                           on_progress=on_progress, pool=pool)
            if result.get("status") == "cancelled":
                raise KsError("the harness run was cancelled; nothing recorded")
        return record_run(store, sid, result, measured, author=author, question=question, summary=summary,
                          remeasure=again)


# ------------------------------------------------------------------------------ questions

def settle_questions(efficacy, sid: str, history, *, asked=None, chosen_by: str = "human") -> None:
    """The question bank's efficacy record after an attempt: the ask `asked` (a bank Question the
    attempt answered, when a person named it) is recorded unless the attempt before answered it
    too (attempts in a row on one question are one ask); then every earlier ask with enough
    attempts after it gets its outcome."""
    again = asked is not None and len(history) > 1 and history[-2].question == asked.id
    if asked is not None and not again:
        efficacy.record_asked(sid, asked, point=None, history=history[:-1], chosen_by=chosen_by)
    if asked is not None or efficacy.path.exists():
        efficacy.settle(sid, history)


# ------------------------------------------------------------------------------ reading

def log_view(store, sid: str, config=None, *, info: SessionInfo | None = None) -> LogView:
    """The session's log: attempts, best mark, and the plateau at `config`'s thresholds (the
    bank's DecisionConfig; the defaults when None)."""
    from ks_tui.questions import DecisionConfig, plateau_of, views_of

    info = info or store.session(sid)
    attempts = store.attempts(sid)
    best, after = since_best(attempts)
    plateau = None
    if attempts:
        plateau = plateau_of(views_of(attempts, store.results(sid)), config or DecisionConfig(), best)
    return LogView(info, attempts, best, after, plateau)
