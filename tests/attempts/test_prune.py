"""`ks sessions prune`: empty and abandoned sessions go (worktree, branch, folder); sessions with attempts, with a
person's uncommitted edit, or recently active stay. Real git workspaces, real `ks` processes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from ks_tui.attempts import AttemptStore
from ks_tui.trace import Trace
from tests.attempts.conftest import git, result_for

REPO = Path(__file__).resolve().parents[2]


def ks(ws, *args):
    return subprocess.run([sys.executable, "-m", "ks_tui", "--workspace", str(ws), *args], capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)


def _age(store, sid, days: float) -> None:
    """Make the session look idle for DAYS (its folder, trace and session.json)."""
    when = time.time() - days * 86400
    folder = store.trace_path(sid).parent
    for p in (store.trace_path(sid), folder / "session.json", folder):
        if p.exists():
            os.utime(p, (when, when))


def test_prune_removes_empty_and_abandoned_sessions_only(workspace):
    store = AttemptStore(workspace)
    empty = store.new_session("toy").id
    talked = store.new_session("toy").id
    Trace(store.trace_path(talked)).append("assistant_message", {"content": [{"type": "text", "text": "hi"}]})
    worked = store.new_session("toy")
    (worked.worktree / "kernels/toy/kernel.cpp").write_text("// changed\n")
    store.record(worked.id, result_for(worked.worktree / "kernels/toy/kernel.cpp"))
    edited = store.new_session("toy")
    (edited.worktree / "kernels/toy/kernel.cpp").write_text("// a person's edit, not yet an attempt\n")
    fresh = store.new_session("toy").id
    for sid in (empty, talked, worked.id, edited.id):
        _age(store, sid, days=8)

    dry = ks(workspace, "sessions", "prune", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"would remove {empty}  toy  empty" in dry.stdout and f"would remove {talked}  toy  abandoned" in dry.stdout
    assert len(dry.stdout.splitlines()) == 2  # not the one with an attempt, the edited one, nor the fresh one
    assert len(store.sessions()) == 5  # a dry run removes nothing

    refused = ks(workspace, "sessions", "prune")  # no terminal to ask on: --yes is needed
    assert refused.returncode == 2 and "--yes" in refused.stderr and "Traceback" not in refused.stderr

    done = ks(workspace, "sessions", "prune", "--yes")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "removed 2 session(s)"
    left = {s.id for s in AttemptStore(workspace).sessions()}
    assert left == {worked.id, edited.id, fresh}
    branches = git(workspace, "branch", "--list", "ks/*")
    assert empty not in branches and talked not in branches
    assert not store.trace_path(empty).parent.exists()
    assert empty not in git(workspace, "worktree", "list")


def test_a_screen_launch_that_did_nothing_leaves_no_session(workspace):
    """`ks` opened and closed at once (or Esc in the picker): the session it made is gone; one whose kernel a
    person edited stays."""
    from ks_tui.app.connect import SessionOpener
    from ks_tui.commands.tui_cmd import _discard_empty
    from ks_tui.config import Config

    shutil.copy(REPO / "question_bank.yaml", workspace / "question_bank.yaml")  # the engine loads the bank
    opener = SessionOpener(workspace, Config(), "toy", use_agent=False)
    idle = opener(None)
    edited = opener(None)
    (edited.kernel_path()).write_text("// typed by a person\n")
    _discard_empty(opener.created)
    assert {s.id for s in AttemptStore(workspace).sessions()} == {edited.session_id}
    assert idle.session_id not in git(workspace, "branch", "--list", "ks/*")
