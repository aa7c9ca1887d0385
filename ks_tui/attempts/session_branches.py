"""Sessions as branches `ks/<task>/<id>` with a worktree and a folder under sessions/<id>/:
making one, finding one (by session.json, by branch, or a hint at an export), listing them,
and the session's task as its worktree holds it.

Part of AttemptStore (ks_tui/attempts/store.py); `self` is the store.
"""

from __future__ import annotations

import contextlib
import json
import re
import secrets
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from ks_tui.attempts.model import SessionInfo, SessionSummary
from ks_tui.attempts.store_base import StoreBase
from ks_tui.errors import InputFileError, KsError
from ks_tui.trace import Trace

if TYPE_CHECKING:
    from ks_tui.task import Task

BRANCH_PREFIX = "ks"
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class SessionBranches(StoreBase):
    """AttemptStore's sessions: create, find, list; the session task."""

    def _session_dir(self, sid: str) -> Path:
        return self.sessions_dir / sid

    def trace_path(self, sid: str) -> Path:
        return self._session_dir(sid) / "trace.jsonl"

    def trace(self, sid: str) -> Trace:
        return Trace(self.trace_path(self.session(sid).id))

    def _ensure_sessions_ignored(self) -> None:
        """sessions/ must not show up in the user's `git status`: add it to the repo-local
        exclude file (never to a tracked file) when no ignore rule covers it yet."""
        rel = (self.prefix / "sessions" / "x").as_posix()
        try:
            self.repo.git.check_ignore("-q", rel)
            return
        except self._git_errors:
            pass
        exclude = self.common_dir / "info" / "exclude"
        exclude.parent.mkdir(parents=True, exist_ok=True)
        with open(exclude, "a") as f:
            f.write(f"\n# KernelSeek sessions (worktrees, traces)\n/{(self.prefix / 'sessions').as_posix()}/\n")

    def new_session(self, task_name: str) -> SessionInfo:
        from ks_tui.task import load_task

        task = load_task(task_name, self.workspace)
        kernels = (self.workspace / "kernels").resolve()
        if not task.dir.is_relative_to(kernels):
            raise KsError(f"task {task.dir} is outside {kernels}", hint="sessions work on tasks under the workspace's kernels/")
        if not self.repo.head.is_valid():
            raise KsError(f"{self.top} has no commits yet", hint="commit kernels/ first (git add kernels && git commit)")
        task_rel = (self.prefix / task.dir.relative_to(self.workspace.resolve())).as_posix()
        kernel_rel = (self.prefix / task.kernel.relative_to(self.workspace.resolve())).as_posix()
        tracked = self.repo.git.ls_tree("--name-only", "HEAD", "--", f"{task_rel}/task.yaml", kernel_rel).split()
        if len(tracked) < 2:
            raise KsError(f"task {task.name} is not committed in HEAD ({task_rel})",
                          hint=f"a session starts from HEAD: git add {task_rel} && git commit")
        self._ensure_sessions_ignored()
        sid = datetime.now().strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)
        branch = f"{BRANCH_PREFIX}/{task.name}/{sid}"
        sdir = self._session_dir(sid)
        worktree = sdir / "worktree"
        base = self.repo.head.commit.hexsha
        sdir.mkdir(parents=True, exist_ok=False)
        try:
            self._run(self.repo, "worktree", "add", "--quiet", "-b", branch, str(worktree), base,
                      what="creating the session worktree")
        except KsError:
            # e.g. a post-checkout hook that fails after git made the branch and the worktree:
            # take both away, so no half-made session is left to list.
            with contextlib.suppress(KsError):
                self._run(self.repo, "worktree", "remove", "--force", str(worktree), what="removing the worktree")
            with contextlib.suppress(KsError):
                self._run(self.repo, "branch", "-D", branch, what="removing the branch")
            shutil.rmtree(sdir, ignore_errors=True)
            raise
        created = datetime.now(timezone.utc)
        info = SessionInfo(id=sid, task=task.name, branch=branch, worktree=worktree, created=created, base=base)
        (sdir / "session.json").write_text(json.dumps(info.to_dict(), indent=2) + "\n")
        Trace(self.trace_path(sid)).append("session_created", {"task": task.name, "branch": branch, "base": base})
        return info

    def uncommitted_task_changes(self, task_name: str) -> list[str]:
        """Files of the task with uncommitted changes in the user's checkout: a new session
        starts from HEAD and will not see them (worth telling the user)."""
        rel = (self.prefix / "kernels" / task_name).as_posix()
        out = self._run(self.repo, "status", "--porcelain", "-z", "--", rel, what="reading the checkout state",
                        strip_newline_in_stdout=False)
        return [e[3:] for e in out.split("\0") if len(e) > 3]

    def session(self, sid: str) -> SessionInfo:
        sid = str(sid).strip()
        if not _ID_RE.match(sid):
            raise KsError(f"{sid!r} is not a session id", hint="list sessions with `ks sessions`")
        meta = self._session_dir(sid) / "session.json"
        if meta.is_file():
            try:
                d = json.loads(meta.read_text())
                return SessionInfo(id=d["id"], task=d["task"], branch=d["branch"],
                                   worktree=self._session_dir(sid) / "worktree",
                                   created=datetime.fromisoformat(d["created"]), base=d.get("base", ""))
            except (ValueError, KeyError, TypeError) as e:
                raise InputFileError(meta, f"unreadable session file ({e})") from None
        # No session.json (folder removed): the branch alone still identifies the session.
        for ref, when in self._session_refs():
            if ref.split("/")[-1] == sid:
                return self._info_from_branch(ref, when)
        # A fresh clone has no session branches; an export committed beside the task brings one back.
        exports = sorted(self.workspace.glob(f"kernels/**/*{sid}*.tar.gz"))
        if exports:
            raise KsError(f"no session {sid!r} in {self.workspace}",
                          hint=f"an export of it is here: `ks session import {exports[0].relative_to(self.workspace)}`")
        known = [r.split("/")[-1] for r, _ in self._session_refs()][-5:]
        raise KsError(f"no session {sid!r} in {self.workspace}",
                      hint="sessions here: " + (", ".join(known) if known else "none (start one with `ks session new TASK`)"))

    def _info_from_branch(self, ref: str, when: str) -> SessionInfo:
        """A session as its branch `ks/<task>/<id>` names it, when session.json is gone or unreadable."""
        _, task, sid = ref.split("/")
        return SessionInfo(id=sid, task=task, branch=ref, worktree=self._session_dir(sid) / "worktree",
                           created=datetime.fromisoformat(when), base="")

    def _session_refs(self) -> list[tuple[str, str]]:
        """(branch, time of its tip commit) of every session branch, most recently active last:
        by its last commit, or by its creation when that is later (a new session's branch
        points at the old commit it started from)."""
        out = self.repo.git.for_each_ref("--format=%(refname)%09%(creatordate:iso-strict)",
                                         f"refs/heads/{BRANCH_PREFIX}/")
        refs = []
        for line in out.splitlines():
            ref, _, when = line.partition("\t")
            ref = ref.removeprefix("refs/heads/")
            if ref.count("/") == 2:
                refs.append((ref, when))
        return sorted(refs, key=lambda r: max(datetime.fromisoformat(r[1]), self._created(r[0].split("/")[-1],
                                                                                           r[1])))

    def _created(self, sid: str, fallback: str) -> datetime:
        try:
            when = datetime.fromisoformat(json.loads((self._session_dir(sid) / "session.json").read_text())["created"])
        except (OSError, ValueError, KeyError, TypeError):
            return datetime.fromisoformat(fallback)
        return when if when.tzinfo else when.replace(tzinfo=timezone.utc)

    def sessions(self) -> list[SessionSummary]:
        summaries = []
        for ref, when in self._session_refs():
            sid = ref.split("/")[-1]
            try:
                info = self.session(sid)
            except KsError:  # one unreadable session.json must not hide every other session
                info = self._info_from_branch(ref, when)
            attempts = self._attempts(info, codes=False)  # counts and the best: no kernel read
            best = next((a for a in attempts if a.best), None)
            last = attempts[-1].time if attempts else info.created
            summaries.append(SessionSummary(
                id=sid, task=info.task, branch=info.branch, attempts=len(attempts),
                best_speedup=best.speedup if best else None, best_attempt=best.number if best else None,
                last_activity=last, worktree_ok=(info.worktree / ".git").exists()))
        summaries.sort(key=lambda s: s.last_activity.timestamp())
        return summaries

    def latest_session(self) -> SessionInfo:
        refs = self._session_refs()
        if not refs:
            raise KsError(f"no sessions in {self.workspace}", hint="start one with `ks session new TASK`")
        return self.session(refs[-1][0].split("/")[-1])

    def _task(self, info: SessionInfo) -> Task:
        from ks_tui.task import load_task

        task = self._tasks.get(info.id)
        if task is None:
            if not info.worktree.is_dir():
                self._wt(info)  # raises: no worktree, with how to recreate it
            ws = info.worktree / self.prefix
            task = load_task(ws / "kernels" / info.task, ws)
            self._tasks[info.id] = task
        return task

    def task(self, sid: str) -> Task:
        """The session's Task, loaded from its worktree (ks_tui.task.Task)."""
        return self._task(self.session(sid))

    def task_dir(self, sid: str) -> Path:
        return self._task(self.session(sid)).dir

    def kernel_path(self, sid: str) -> Path:
        return self._task(self.session(sid)).kernel

    def _kernel_rel(self, info: SessionInfo) -> str:
        return self._task(info).kernel.relative_to(info.worktree.resolve()).as_posix()
