"""Sessions nobody will come back to, found and removed: `ks sessions prune`, and a failed start cleaning up.

Only sessions without a single attempt are ever candidates:
- empty: no attempt and no word from the agent in its trace (a launch closed at once, Esc in the picker, a start
  that failed on a bad key, an unknown model or an API outage), idle for EMPTY_IDLE at least;
- abandoned: no attempt, a conversation that led to none, idle for ABANDONED_IDLE at least.
Never removed: a session with attempts, one whose worktree holds uncommitted changes (a person's edit), one that
another ks process is working on. Removing one takes its worktree, its branch and its folder (trace included).
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from dataclasses import dataclass
from datetime import timedelta

from ks_tui.errors import KsError
from ks_tui.trace import Trace

EMPTY_IDLE = timedelta(minutes=10)
ABANDONED_IDLE = timedelta(days=7)
AGENT_KINDS = frozenset({"assistant_message", "assistant_text", "tool_call", "tool_result"})


@dataclass
class Candidate:
    id: str
    task: str
    why: str          # "empty" or "abandoned"
    idle_s: float


def _trace_facts(store, sid: str) -> tuple[bool, float]:
    """(the agent said or did something, seconds since the session's files last changed)."""
    path = store.trace_path(sid)
    talked = False
    if path.is_file():
        with contextlib.suppress(OSError):
            talked = any(e.get("kind") in AGENT_KINDS for e in Trace.read(path))
    folder = path.parent
    times = [p.stat().st_mtime for p in (folder, path, folder / "session.json") if p.exists()]
    return talked, time.time() - max(times, default=0.0)


def _dirty(store, info) -> bool:
    """The worktree's tracked files differ from its branch (a person's edit not yet an attempt)."""
    if not (info.worktree / ".git").exists():
        return False
    try:
        out = subprocess.run(["git", "-C", str(info.worktree), "status", "--porcelain", "--untracked-files=no"],
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return True  # cannot tell: keep it
    return out.returncode != 0 or bool(out.stdout.strip())


def candidates(store, empty_idle: timedelta = EMPTY_IDLE,
               abandoned_idle: timedelta = ABANDONED_IDLE) -> list[Candidate]:
    out = []
    for s in store.sessions():
        if s.attempts:
            continue
        talked, idle = _trace_facts(store, s.id)
        why = "abandoned" if talked else "empty"
        if idle < (abandoned_idle if talked else empty_idle).total_seconds():
            continue
        try:
            info = store.session(s.id)
        except KsError:
            continue
        if _dirty(store, info):
            continue
        out.append(Candidate(s.id, s.task, why, idle))
    return out


def remove_session(store, sid: str) -> None:
    """Take the session's worktree, branch and folder away; KsError when another process holds it or it has
    attempts."""
    info = store.session(sid)
    with store.lock(sid):  # refused (busy) while another ks process works on it
        if store.attempts(info.id):
            raise KsError(f"session {sid} has attempts; it is not removed")
        if (info.worktree / ".git").exists():
            store._run(store.repo, "worktree", "remove", "--force", str(info.worktree), what="removing the worktree")
        with contextlib.suppress(KsError):
            store._run(store.repo, "worktree", "prune", what="forgetting removed worktrees")
        with contextlib.suppress(KsError):
            store._run(store.repo, "branch", "-D", info.branch, what="removing the session's branch")
    shutil.rmtree(store._session_dir(sid), ignore_errors=True)


def discard_if_empty(store, sid: str) -> bool:
    """After a start that failed (bad key, unknown model, API down, the picker left): remove the session just made
    if nothing happened in it. True when it was removed."""
    try:
        info = store.session(sid)
        if store.attempts(info.id) or _trace_facts(store, sid)[0] or _dirty(store, info):
            return False
        remove_session(store, sid)
        return True
    except KsError:
        return False
