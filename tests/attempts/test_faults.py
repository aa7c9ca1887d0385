"""Faults: each is one clear KsError, and the kernel in the worktree is never lost."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ks_tui.attempts import AttemptStore
from ks_tui.errors import KsError
from tests.attempts.conftest import TASK_YAML, git, result_for

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def session(workspace):
    store = AttemptStore(workspace)
    s = store.new_session("toy")
    kernel = store.kernel_path(s.id)
    store.record(s.id, result_for(kernel))
    kernel.write_text(kernel.read_text() + "// precious edit\n")
    return store, s, kernel


def worktree_gitdir(s) -> Path:
    return Path(git(s.worktree, "rev-parse", "--absolute-git-dir").strip())


def test_workspace_that_is_not_a_git_repo(tmp_path, git_env):
    (tmp_path / "plain" / "kernels").mkdir(parents=True)
    with pytest.raises(KsError, match="not inside a git repository"):
        AttemptStore(tmp_path / "plain")


def test_workspace_without_commits_or_with_an_uncommitted_task(tmp_path, git_env):
    ws = tmp_path / "fresh"
    (ws / "kernels" / "toy").mkdir(parents=True)
    for name, text in (("task.yaml", TASK_YAML), ("kernel.cpp", "// k\n"), ("reference.py", "#\n")):
        (ws / "kernels" / "toy" / name).write_text(text)
    git(ws, "init", "-q")
    with pytest.raises(KsError, match="no commits yet"):
        AttemptStore(ws).new_session("toy")
    (ws / "README").write_text("x\n")
    git(ws, "add", "README")
    git(ws, "commit", "-qm", "readme only")
    with pytest.raises(KsError, match="not committed in HEAD"):
        AttemptStore(ws).new_session("toy")


def test_sessions_folder_is_hidden_from_the_user_status_even_without_a_gitignore(workspace):
    git(workspace, "rm", "-q", "--cached", ".gitignore")
    (workspace / ".gitignore").unlink()
    git(workspace, "commit", "-qm", "no ignore file")
    before = git(workspace, "status", "--porcelain")
    AttemptStore(workspace).new_session("toy")
    assert git(workspace, "status", "--porcelain") == before
    assert "/sessions/" in (workspace / ".git" / "info" / "exclude").read_text()


@pytest.mark.parametrize("bad", ["nope", "../etc", "a/b"])
def test_unknown_or_malformed_session(workspace, bad):
    with pytest.raises(KsError, match="session"):
        AttemptStore(workspace).attempts(bad)


def test_detached_worktree_is_refused_until_reattached(session):
    store, s, kernel = session
    git(s.worktree, "checkout", "-q", "--detach")
    with pytest.raises(KsError, match="detached HEAD"):
        store.record(s.id, result_for(kernel))
    assert "precious edit" in kernel.read_text()
    git(s.worktree, "switch", "-q", s.branch)
    assert store.record(s.id, result_for(kernel)).number == 2


def test_worktree_on_another_branch_is_refused(session):
    store, s, kernel = session
    git(s.worktree, "switch", "-q", "-c", "elsewhere")
    with pytest.raises(KsError, match="not ks/toy/"):
        store.commit_human_edit(s.id)
    assert "precious edit" in kernel.read_text()


def test_changed_read_only_task_files_are_refused(session):
    store, s, kernel = session
    task_yaml = kernel.parent / "task.yaml"
    task_yaml.write_text(task_yaml.read_text() + "# tampered\n")
    with pytest.raises(KsError, match="read-only task files.*task.yaml"):
        store.record(s.id, result_for(kernel))
    assert len(store.attempts(s.id)) == 1


def test_missing_kernel_is_refused(session):
    store, s, kernel = session
    kernel.unlink()
    with pytest.raises(KsError, match="missing"):
        store.commit_human_edit(s.id)


def test_stale_index_lock_is_reported_then_removed_on_request(session):
    store, s, kernel = session
    lock = worktree_gitdir(s) / "index.lock"
    lock.write_text("")
    old = time.time() - 120
    os.utime(lock, (old, old))
    with pytest.raises(KsError, match="stale git lock") as e:
        store.record(s.id, result_for(kernel))
    assert "--remove-stale-lock" in str(e.value)
    assert lock.exists() and "precious edit" in kernel.read_text()

    fixer = AttemptStore(store.workspace, remove_stale_locks=True)
    assert fixer.record(s.id, result_for(kernel)).number == 2
    assert not lock.exists()


def test_a_lock_held_by_a_live_process_is_never_removed(session):
    store, s, kernel = session
    lock = worktree_gitdir(s) / "index.lock"
    lock.write_text("")
    old = time.time() - 120
    os.utime(lock, (old, old))
    holder = subprocess.Popen([sys.executable, "-c",
                               "import sys,time; f=open(sys.argv[1]); print('ready', flush=True); time.sleep(60)",
                               str(lock)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        eager = AttemptStore(store.workspace, remove_stale_locks=True)
        with pytest.raises(KsError, match=f"process {holder.pid}"):
            eager.record(s.id, result_for(kernel))
        assert lock.exists()
    finally:
        holder.kill()
        holder.wait()


def test_a_fresh_lock_is_treated_as_live(session):
    store, s, kernel = session
    lock = worktree_gitdir(s) / "index.lock"
    lock.write_text("")
    eager = AttemptStore(store.workspace, remove_stale_locks=True)
    with pytest.raises(KsError, match="git is busy"):
        eager.record(s.id, result_for(kernel))
    assert lock.exists()


def test_a_fresh_lock_on_the_shared_notes_ref_does_not_stop_another_session(session):
    """Every session's `git notes add` takes refs/notes/ks.lock for a moment: one session
    recording must not make another's check fail, while a stale one is still reported."""
    store, s, kernel = session
    lock = store.common_dir / "refs" / "notes" / "ks.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text("")
    store.check(s.id)
    old = time.time() - 120
    os.utime(lock, (old, old))
    with pytest.raises(KsError, match="stale git lock"):
        store.check(s.id)
    assert lock.exists()


def test_second_writer_on_a_session_gets_a_clear_message(session):
    store, s, kernel = session
    code = ("import sys,time; from ks_tui.attempts import AttemptStore\n"
            "st = AttemptStore(sys.argv[1])\n"
            "with st.lock(sys.argv[2]):\n"
            "    print('ready', flush=True); time.sleep(60)\n")
    holder = subprocess.Popen([sys.executable, "-c", code, str(store.workspace), s.id], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(KsError, match=f"busy.*pid {holder.pid}"):
            store.record(s.id, result_for(kernel))
    finally:
        holder.kill()
        holder.wait()
    # The lock died with its holder: no stale lock to clean up.
    assert store.record(s.id, result_for(kernel)).number == 2


def test_lock_is_reentrant_within_one_process(session):
    store, s, kernel = session
    with store.lock(s.id):
        assert store.record(s.id, result_for(kernel)).number == 2


def test_cancelled_and_unknown_statuses_are_not_recorded(session):
    store, s, kernel = session
    for status in ("cancelled", "weird"):
        with pytest.raises(KsError):
            store.record(s.id, result_for(kernel, status=status))
    assert len(store.attempts(s.id)) == 1


def test_a_merge_in_progress_in_the_worktree_is_refused(session):
    store, s, kernel = session
    store.record(s.id, result_for(kernel))                       # attempt 2: the precious edit
    git(s.worktree, "switch", "-q", "-c", "side", s.base)
    kernel.write_text("// a conflicting idea\n")
    git(s.worktree, "commit", "-qam", "side idea")
    git(s.worktree, "switch", "-q", s.branch)
    git(s.worktree, "merge", "-q", "side", check=False)          # conflicts on the kernel
    with pytest.raises(KsError, match="MERGE_HEAD"):
        store.record(s.id, result_for(kernel))
    git(s.worktree, "merge", "--abort")
    assert "precious edit" in kernel.read_text()
    assert len(store.attempts(s.id)) == 2
