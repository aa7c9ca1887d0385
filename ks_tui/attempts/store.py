"""AttemptStore: sessions as branches + worktrees, attempts as commits, results as notes.

Layout in the workspace's git repository:
  branch   ks/<task>/<id>                 one per session, started from HEAD
  worktree sessions/<id>/worktree/        the session's own checkout and index
  notes    refs/notes/ks                  the full harness JSON of each attempt commit
           refs/notes/ks-remarks          remarks added later (`ks remark`), a line each
  files    sessions/<id>/session.json     id, task, branch, base commit
           sessions/<id>/trace.jsonl      the event trace (ks_tui.trace.Trace)
           sessions/<id>/.lock            one writer per session
The user's own checkout, branch and index are never read for writing: every commit
happens inside the session worktree, with its own index.

The store is one facade over its parts: git_io (git plumbing, notes), session_branches
(sessions), read_model (attempts, best mark, diffs, results), recorder (lock, record, recovery,
rollback) and remark_writer (remarks).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ks_tui.attempts.git_io import (  # noqa: F401  (re-exported: the store's public names)
    DEFAULT_EMAIL,
    DEFAULT_NAME,
    NOTES_REF,
    GitIO,
    identity_env,
    kernel_sha256,
)
from ks_tui.attempts.read_model import ReadModel, mark_best, resolve_in  # noqa: F401
from ks_tui.attempts.recorder import Recorder, baseline_label, default_summary  # noqa: F401
from ks_tui.attempts.remark_writer import RemarkWriter
from ks_tui.attempts.session_branches import _ID_RE, BRANCH_PREFIX, SessionBranches  # noqa: F401
from ks_tui.errors import KsError
from ks_tui.paths import main_workspace


class AttemptStore(SessionBranches, ReadModel, Recorder, RemarkWriter, GitIO):
    """One workspace's sessions and attempts (the methods live in the part modules above)."""

    def __init__(self, workspace: str | os.PathLike, *, remove_stale_locks: bool = False):
        import git

        self._git_errors = (git.GitCommandError, git.InvalidGitRepositoryError, git.NoSuchPathError)
        # From inside a session worktree (<ws>/sessions/<id>/worktree/...) act on <ws>.
        workspace = main_workspace(Path(workspace).resolve())
        try:
            repo = git.Repo(workspace, search_parent_directories=True)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            raise KsError(f"{workspace} is not inside a git repository; attempts are kept as git commits",
                          hint="make a workspace with `ks init DIR`, or run `git init` there and commit "
                               "kernels/") from None
        if repo.bare or repo.working_tree_dir is None:
            raise KsError(f"{workspace} is a bare git repository", hint="use a checkout (`ks init DIR`)")
        top = Path(repo.working_tree_dir).resolve()
        prefix = workspace.relative_to(top) if workspace.is_relative_to(top) else Path()
        common = Path(repo.common_dir).resolve()
        self.repo = repo
        self.top = top
        self.prefix = prefix
        self.workspace = top / prefix
        self.sessions_dir = self.workspace / "sessions"
        self.common_dir = common
        self.remove_stale_locks = remove_stale_locks
        self._env = identity_env(repo)
        self._tasks: dict[str, Any] = {}
        self._worktrees: dict[str, Any] = {}
        self._devices: dict[str, str] = {}  # commit -> device of its stored result, for attempts without KS-Device
        self._codes: dict[str, str] = {}    # commit -> code identity of its kernel ("" without one), see _with_codes
        self._blob_codes: dict[str, str] | None = None  # blob id -> code identity, kept on disk (_code_cache_path)
