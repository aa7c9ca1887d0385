"""AttemptStore: sessions as branches + worktrees, attempts as commits, results as notes.

Layout in the workspace's git repository:
  branch   ks/<task>/<id>                 one per session, started from HEAD
  worktree sessions/<id>/worktree/        the session's own checkout and index
  notes    refs/notes/ks                  the full harness JSON of each attempt commit
           refs/notes/ks-remarks          remarks added later (`ks remark`), a line each
  files    sessions/<id>/session.json     id, task, branch, base commit
           sessions/<id>/trace.jsonl      the event trace (ks_tui.session.Trace)
           sessions/<id>/.lock            one writer per session
The user's own checkout, branch and index are never read for writing: every commit
happens inside the session worktree, with its own index.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import secrets
import shutil
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ks_tui import best_rule
from ks_tui.attempts import code_identity as ci
from ks_tui.attempts import trailers as tr
from ks_tui.attempts.locks import check_git_locks, session_lock
from ks_tui.attempts.model import STATUSES, Attempt, SessionInfo, SessionSummary, current_device, fastest
from ks_tui.attempts.remarks import REMARKS_REF, parse_remarks, remark_line
from ks_tui.errors import InputFileError, KsError
from ks_tui.harness.secret_env import redact_text
from ks_tui.pairs import DECLARED, declared_pair
from ks_tui.paths import main_workspace
from ks_tui.session import Trace

NOTES_REF = "refs/notes/ks"
BRANCH_PREFIX = "ks"
DEFAULT_NAME = "KernelSeek"
DEFAULT_EMAIL = "ks@localhost"
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_HEX_RE = re.compile(r"^[0-9a-fA-F]{4,40}$")
_CACHED_BLOB = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
_CACHED_CODE = re.compile(r"^[0-9a-f]{64}$")


def kernel_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _git_error_line(err: Exception) -> str:
    """The line of git's stderr that says what went wrong: its `fatal:` / `error:` line (which
    names the file, e.g. a stale lock), else its last line, else the exit status."""
    text = str(getattr(err, "stderr", "") or "")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    lines = [ln[len("stderr: "):].strip("'") if ln.startswith("stderr: ") else ln.strip("'") for ln in lines]
    said = next((ln for ln in lines if ln.startswith(("fatal:", "error:"))), None) or (lines[-1] if lines else "")
    if said:
        return said
    status = getattr(err, "status", None)  # no stderr: git's exit status, or what kept git from running
    if isinstance(status, int):
        return f"git exited with status {status}"
    words = str(err).strip().splitlines()
    return words[-1] if words else type(err).__name__


def _write_synced(path: Path, text: str) -> None:
    """Write TEXT to PATH whole and on disk before returning (write, fsync, rename)."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def identity_env(repo) -> dict[str, str]:
    """A default identity for our commits when git has none, without touching config."""
    reader = repo.config_reader()

    def configured(key: str) -> str | None:
        try:
            return reader.get_value("user", key) or None
        except Exception:  # missing section/option
            return None

    env: dict[str, str] = {}
    if not configured("name"):
        for var in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
            env[var] = os.environ.get(var) or DEFAULT_NAME
    if not configured("email"):
        for var in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
            env[var] = os.environ.get(var) or DEFAULT_EMAIL
    return env


class AttemptStore:
    def __init__(self, workspace: str | os.PathLike, *, remove_stale_locks: bool = False):
        import git

        self._git_errors = (git.GitCommandError, git.InvalidGitRepositoryError, git.NoSuchPathError)
        # From inside a session worktree (<ws>/sessions/<id>/worktree/...) act on <ws>.
        workspace = main_workspace(Path(workspace).resolve())
        try:
            repo = git.Repo(workspace, search_parent_directories=True)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            raise KsError(f"{workspace} is not inside a git repository; attempts are kept as git commits",
                          hint="make a workspace with `ks init DIR`, or run `git init` there and commit kernels/") from None
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

    # ------------------------------------------------------------------ git plumbing

    def _run(self, repo, *args: str, what: str, **kw) -> str:
        try:
            return repo.git.execute(["git", *args], env=self._env, **kw)
        except self._git_errors as e:
            raise KsError(f"{what} failed: {_git_error_line(e)}") from None

    def _wt(self, info: SessionInfo):
        import git

        repo = self._worktrees.get(info.id)
        if repo is None:
            try:
                repo = git.Repo(info.worktree)
            except (git.InvalidGitRepositoryError, git.NoSuchPathError):
                repo = None
            if repo is None and (info.worktree / ".git").is_file():
                # The folder is there (with any uncommitted edit in it) but its link to the
                # repository broke: the workspace was moved or copied. `worktree repair` mends
                # both ends; `prune && add` would drop the link and then refuse the folder.
                with contextlib.suppress(KsError):
                    self._run(self.repo, "worktree", "repair", str(info.worktree), what="repairing the worktree link")
                with contextlib.suppress(git.InvalidGitRepositoryError, git.NoSuchPathError):
                    repo = git.Repo(info.worktree)
                if repo is None:
                    raise KsError(f"session {info.id}'s worktree at {info.worktree} is no longer linked to {self.top}",
                                  hint=f"git -C {self.top} worktree repair {info.worktree} "
                                       "(do not delete the folder: it may hold an unrecorded edit)")
            if repo is None:
                raise KsError(f"session {info.id} has no worktree at {info.worktree}",
                              hint=f"recreate it with `git worktree prune && git worktree add {info.worktree} "
                                   f"{info.branch}` (its commits are safe on the branch)") from None
            self._worktrees[info.id] = repo
        return repo

    # ------------------------------------------------------------------ sessions

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

    # ------------------------------------------------------------------ task and kernel

    def _task(self, info: SessionInfo):
        from ks_tui.task import load_task

        task = self._tasks.get(info.id)
        if task is None:
            if not info.worktree.is_dir():
                self._wt(info)  # raises: no worktree, with how to recreate it
            ws = info.worktree / self.prefix
            task = load_task(ws / "kernels" / info.task, ws)
            self._tasks[info.id] = task
        return task

    def task(self, sid: str):
        """The session's Task, loaded from its worktree (ks_tui.task.Task)."""
        return self._task(self.session(sid))

    def task_dir(self, sid: str) -> Path:
        return self._task(self.session(sid)).dir

    def kernel_path(self, sid: str) -> Path:
        return self._task(self.session(sid)).kernel

    def _kernel_rel(self, info: SessionInfo) -> str:
        return self._task(info).kernel.relative_to(info.worktree.resolve()).as_posix()

    # ------------------------------------------------------------------ reading attempts

    def attempts(self, sid: str) -> list[Attempt]:
        return self._attempts(self.session(sid))

    def _attempts(self, info: SessionInfo, *, codes: bool = True) -> list[Attempt]:
        """The session's attempts, oldest first, the best marked; with `codes` each with its kernel's code identity."""
        try:
            out = self._run(self.repo, "log", "-z", "--reverse", "--no-notes", f"--notes={REMARKS_REF}",
                            f"--format={tr.LOG_FORMAT_REMARKS}", self._range(info), "--",
                            what=f"reading the history of session {info.id}", strip_newline_in_stdout=False)
        except KsError:
            if not self._ref_exists(f"refs/heads/{info.branch}"):
                raise self._branch_gone(info) from None
            raise
        attempts = self._with_devices(info, tr.parse_log(out, info.id))
        return mark_best(self._with_codes(info, attempts) if codes else attempts)

    def _with_devices(self, info: SessionInfo, attempts: list[Attempt]) -> list[Attempt]:
        """Attempts recorded before KS-Device existed take the device from their stored result, so
        the best is chosen per device in old sessions too. One read of the session's notes per store,
        and none for a session whose measured attempts all name their device."""
        missing = [a for a in attempts if not a.device and a.status != "unchecked" and a.sha not in self._devices]
        if missing:
            notes = self._result_notes(info)
            for a in missing:
                self._devices[a.sha] = str(_json_object(notes.get(a.sha, "")).get("device") or "")
        for a in attempts:
            if not a.device:
                a.device = self._devices.get(a.sha, "")
        return attempts

    def _with_codes(self, info: SessionInfo, attempts: list[Attempt]) -> list[Attempt]:
        """Each attempt's `code`: the code identity (attempts/code_identity.py) of the kernel its commit holds; ""
        when the commit has no kernel file or it cannot be read (no worktree to read the task from), and then the
        harness's file sha256 stands alone. Kept by commit in the store and by blob id in a file beside git's own
        (`_code_cache_path`): one `git cat-file` finds the blob ids of the commits not seen yet, a second reads only
        the blobs that no earlier run has hashed."""
        todo = [a.sha for a in attempts if a.sha not in self._codes]
        if todo:
            with contextlib.suppress(KsError):
                blobs = self._kernel_blobs(todo, self._kernel_rel(info))
                known = self._known_codes()
                new = [b for b in dict.fromkeys(blobs.values()) if b and b not in known]
                if new:
                    found = {blob: ci.code_identity(data) for blob, data in self._blob_data(new).items()}
                    known.update(found)
                    self._save_codes(found)
                for sha, blob in blobs.items():
                    if not blob or blob in known:  # a blob that could not be read is tried again next time
                        self._codes[sha] = known.get(blob, "")
        for a in attempts:
            a.code = self._codes.get(a.sha, "")
        return attempts

    def _cat_file(self, mode: str, names: list[str]) -> bytes:
        """The output of `git cat-file --batch` or `--batch-check` (MODE) for the object NAMES, from one call."""
        import subprocess

        try:
            done = subprocess.run(["git", "cat-file", f"--{mode}"], cwd=self.top, capture_output=True,
                                  input="".join(f"{n}\n" for n in names).encode(), env={**os.environ, **self._env})
        except OSError as e:
            raise KsError(f"reading the kernels failed: {e}") from None
        if done.returncode != 0:
            said = done.stderr.decode(errors="replace").strip().splitlines()
            raise KsError("reading the kernels failed: " + (said[-1] if said else f"git exit status {done.returncode}"))
        return done.stdout

    def _kernel_blobs(self, commits: list[str], rel: str) -> dict[str, str]:
        """{commit: the blob id of the file `rel` in it, "" when it has none}."""
        rows = self._cat_file("batch-check", [f"{c}:{rel}" for c in commits]).decode(errors="replace").splitlines()
        if len(rows) != len(commits):
            raise KsError("reading the kernels failed: git cat-file answered "
                          f"{len(rows)} lines for {len(commits)} names")
        heads = (row.split() for row in rows)  # "<blob> blob <size>", or "<name> missing"
        return {c: h[0] if len(h) == 3 and h[1] == "blob" else "" for c, h in zip(commits, heads, strict=True)}

    def _blob_data(self, blobs: list[str]) -> dict[str, bytes]:
        """{blob id: its bytes} of the BLOBS git has."""
        out, pos, found = self._cat_file("batch", blobs), 0, {}
        while pos < len(out):
            end = out.index(b"\n", pos)
            head = out[pos:end].split()  # "<blob> blob <size>" and the bytes, or "<name> missing" alone
            pos = end + 1
            if len(head) == 3 and head[2].isdigit():
                size = int(head[2])
                if head[1] == b"blob":
                    found[head[0].decode()] = out[pos:pos + size]
                pos += size + 1
        return found

    def _code_cache_path(self) -> Path:
        """Code identities by blob id, a line "<blob> <identity>" each, beside git's own files (a blob never
        changes, so neither does its identity while code_identity.VERSION stands)."""
        return self.common_dir / f"ks-code-identity-v{ci.VERSION}"

    def _known_codes(self) -> dict[str, str]:
        if self._blob_codes is None:
            self._blob_codes = {}
            with contextlib.suppress(OSError):
                for line in self._code_cache_path().read_text(errors="replace").splitlines():
                    blob, _, code = line.partition(" ")
                    if _CACHED_BLOB.match(blob) and _CACHED_CODE.match(code):
                        self._blob_codes[blob] = code
        return self._blob_codes

    def _save_codes(self, codes: dict[str, str]) -> None:
        """Add CODES to the cache file: one append (other processes may append beside it; a line cut short is
        skipped on reading). Without write access the cache stays in memory."""
        if codes:
            with contextlib.suppress(OSError), open(self._code_cache_path(), "a") as f:
                f.write("".join(f"{b} {c}\n" for b, c in codes.items()))

    @staticmethod
    def _range(info: SessionInfo) -> str:
        return f"{info.base}..{info.branch}" if info.base else info.branch

    def resolve(self, sid: str, ref: str | int) -> Attempt:
        return resolve_in(self.attempts(sid), sid, ref)

    def previous(self, sid: str, ref: str | int) -> Attempt | None:
        """The attempt before `ref` in its session; None for the first."""
        attempts = self.attempts(sid)
        return _before(attempts, resolve_in(attempts, sid, ref))

    def diff(self, sid: str, ref: str | int, against: str | int = "previous") -> str:
        info = self.session(sid)
        attempts = self._attempts(info)
        target = resolve_in(attempts, info.id, ref)
        if against == "previous":
            earlier = _before(attempts, target)
            base = earlier.sha if earlier else (info.base or f"{target.sha}~1")
        else:
            base = resolve_in(attempts, info.id, against).sha
        return self._run(self.repo, "diff", "--no-color", base, target.sha, "--", self._kernel_rel(info),
                         what="computing the diff")

    def result(self, sid: str, ref: str | int) -> dict:
        self._recover_pending(self.session(sid), locked=False)
        target = self.resolve(sid, ref)
        return self._note(target.sha)

    def results(self, sid: str) -> dict[int, dict]:
        """Every attempt's stored result by attempt number ({} when it has none): two git
        calls for the whole session instead of two per attempt."""
        info = self.session(sid)
        self._recover_pending(info, locked=False)
        notes = self._result_notes(info)
        return {a.number: _json_object(notes.get(a.sha, "")) for a in self._attempts(info)}

    def _result_notes(self, info: SessionInfo) -> dict[str, str]:
        """The stored result of every commit of the session, as text, by commit."""
        out = self._run(self.repo, "log", "-z", f"--notes={NOTES_REF}", f"--format=%H{tr.FIELD}%N",
                        self._range(info), "--", what=f"reading the results of session {info.id}",
                        strip_newline_in_stdout=False)
        return dict(r.strip("\n").partition(tr.FIELD)[::2] for r in out.split("\0") if tr.FIELD in r)

    def _note(self, sha: str) -> dict:
        try:
            return _json_object(self.repo.git.notes(f"--ref={NOTES_REF}", "show", sha))
        except self._git_errors:
            return {}

    def kernel_at(self, sid: str, ref: str | int) -> bytes:
        """The kernel file's bytes as committed in that attempt."""
        info = self.session(sid)
        target = resolve_in(self._attempts(info), info.id, ref)
        return self._run(self.repo, "show", f"{target.sha}:{self._kernel_rel(info)}", what="reading the kernel",
                         stdout_as_string=False, strip_newline_in_stdout=False)

    # ------------------------------------------------------------------ writing attempts

    @contextlib.contextmanager
    def lock(self, sid: str):
        info = self.session(sid)
        with session_lock(self._session_dir(info.id) / ".lock", info.id):
            yield

    def check(self, sid: str) -> None:
        """Raise KsError now if an attempt could not be committed (call before a long run)."""
        self._check_worktree(self.session(sid))

    def _ref_exists(self, ref: str) -> bool:
        with contextlib.suppress(KsError):
            self._run(self.repo, "rev-parse", "--verify", "--quiet", ref, what="looking up " + ref)
            return True
        return False

    def _branch_gone(self, info: SessionInfo) -> KsError:
        last = self._last_traced_attempt_sha(info)
        return KsError(f"session {info.id}'s branch {info.branch} no longer exists",
                       hint=f"restore it at its last attempt: git -C {self.top} branch -f {info.branch} {last}" if last
                       else f"restore it from the reflog (git -C {self.top} reflog) with git branch {info.branch} SHA")

    def _last_traced_attempt_sha(self, info: SessionInfo) -> str | None:
        with contextlib.suppress(KsError):
            for rec in reversed(Trace.read(self.trace_path(info.id))):
                sha = (rec.get("payload", {}).get("attempt") or {}).get("sha") if rec.get("kind") == "attempt" else None
                if sha:
                    return sha
        return None

    def _check_worktree(self, info: SessionInfo) -> None:
        """Refuse states we cannot commit from safely; the message says how to get out."""
        wt = self._wt(info)
        gitdir = Path(wt.git_dir)
        # Another session's git takes the shared locks for a moment; ours only if it is ours.
        shared = (self.common_dir / f"{NOTES_REF}.lock", self.common_dir / "packed-refs.lock")
        locks = [gitdir / "index.lock", gitdir / "HEAD.lock",
                 self.common_dir / "refs" / "heads" / f"{info.branch}.lock", *shared]
        check_git_locks(locks, [self.top, info.worktree.resolve()], remove_stale=self.remove_stale_locks,
                        shared=shared)
        if not wt.head.is_valid():
            raise self._branch_gone(info)
        if wt.head.is_detached:
            raise KsError(f"session {info.id}'s worktree has a detached HEAD ({wt.head.commit.hexsha[:8]})",
                          hint=f"reattach it: git -C {info.worktree} switch {info.branch} "
                               "(first `git branch save-mine` there if you made commits you want)")
        if wt.head.ref.path != f"refs/heads/{info.branch}":
            raise KsError(f"session {info.id}'s worktree is on {wt.head.ref.name}, not {info.branch}",
                          hint=f"git -C {info.worktree} switch {info.branch}")
        for marker in ("MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "rebase-merge", "rebase-apply"):
            if (gitdir / marker).exists():
                raise KsError(f"session {info.id}'s worktree is in the middle of a git operation ({marker})",
                              hint=f"finish or abort it in {info.worktree} first")
        kernel = self._task(info).kernel
        if not kernel.is_file():
            raise KsError(f"the kernel {kernel} is missing from the session worktree",
                          hint=f"restore the latest attempt: git -C {info.worktree} checkout -- {self._kernel_rel(info)}")
        # The harness reads the task's read-only files (task.yaml, reference, ...) from this
        # worktree: a result measured against edited ones would not match the commit.
        root = info.worktree.resolve()
        readonly = [p.relative_to(root).as_posix() for p in self._task(info).readonly]
        changed = self._run(wt, "status", "--porcelain", "-uno", "-z", "--", *readonly,
                            what="reading the worktree state", strip_newline_in_stdout=False)
        touched = [e[3:] for e in changed.split("\0") if len(e) > 3]
        if touched:
            raise KsError(f"read-only task files were changed in session {info.id}'s worktree: " + ", ".join(touched),
                          hint=f"results would not match the commit; restore them: git -C {info.worktree} restore "
                               + " ".join(touched))

    def replace_kernel(self, sid: str, source: Path, result: dict | None = None) -> None:
        """Make `source` the session's kernel (for `ks try --kernel`): copied over the worktree's.

        Refused, with the worktree untouched, when the worktree kernel has edits that no commit
        holds (they exist nowhere else) or when `result` names another kernel than `source`.
        """
        info = self.session(sid)
        try:
            data = Path(source).read_bytes()
        except FileNotFoundError:
            raise KsError(f"kernel file {source} not found") from None
        except OSError as e:
            raise KsError(f"cannot read kernel file {source}: {e.strerror or e}") from None
        claimed = (result or {}).get("kernel_sha256")
        if claimed and claimed != hashlib.sha256(data).hexdigest():
            raise KsError(f"the result is for a different kernel (sha256 {claimed[:12]}…) than {source}; "
                          "nothing recorded", hint="pass the file that run measured")
        kernel = self._task(info).kernel
        current = kernel.read_bytes() if kernel.is_file() else None
        if current == data:
            return
        head = self._run(self._wt(info), "rev-parse", f"HEAD:{self._kernel_rel(info)}", what="reading the kernel blob")
        if current is not None and self._blob_of_worktree(info) != head:
            raise KsError(f"session {info.id}'s kernel has edits that no attempt holds; --kernel would overwrite them",
                          hint=f"record them first (`ks try --session {info.id}`), or undo them: "
                               f"git -C {info.worktree} checkout -- {self._kernel_rel(info)}")
        kernel.write_bytes(data)

    def unchanged_since(self, sid: str) -> Attempt | None:
        """The latest attempt if the worktree kernel still equals it (nothing new to record)."""
        info = self.session(sid)
        attempts = self._attempts(info)
        if attempts and self._blob_of_worktree(info) == self._blobs_at(info, attempts[-1].sha)[0]:
            return attempts[-1]
        return None

    def _blob_of_worktree(self, info: SessionInfo) -> str:
        return self._run(self._wt(info), "hash-object", "--", self._kernel_rel(info), what="hashing the kernel")

    def _blobs_at(self, info: SessionInfo, *commits: str) -> list[str]:
        """The kernel's blob id in each commit, from one git call."""
        rel = self._kernel_rel(info)
        return self._run(self.repo, "rev-parse", *(f"{c}:{rel}" for c in commits),
                         what="reading the kernel blob").split()

    def _commit(self, info: SessionInfo, message: str, attempts: list[Attempt], *, allow_empty: bool) -> Attempt:
        """Commit the worktree kernel; the new attempt, with `best` set against `attempts`."""
        wt = self._wt(info)
        rel = self._kernel_rel(info)
        # --only: commit just the kernel even if other files are staged in this worktree.
        # No hooks or signing: an attempt is a record of what ran, and must not be lost to
        # a failing hook or a missing gpg agent.
        args = ["commit", "--quiet", "--no-verify", "--no-gpg-sign", "--cleanup=verbatim", "-m", message]
        if allow_empty:
            args.append("--allow-empty")
        self._run(wt, *args, "--only", "--", rel, what=f"committing the attempt in session {info.id}")
        out = self._run(wt, "log", "-1", "-z", f"--format={tr.LOG_FORMAT}", "HEAD", "--",
                        what="reading the new commit", strip_newline_in_stdout=False)
        new = self._with_codes(info, tr.parse_log(out, info.id)[-1:])[0]
        return mark_best([*attempts, new])[-1]

    def _write_note(self, sha: str, result: dict) -> None:
        self._notes(NOTES_REF, "add", "-f", sha, text=json.dumps(result, indent=1, sort_keys=True, default=str),
                    what="storing the result as a git note")

    def _notes(self, ref: str, action: str, *args: str, text: str, what: str) -> None:
        """`git notes --ref=REF ACTION ARGS -F <text>`. Sessions share the notes refs: writers are
        serialized across processes, and a lost race is retried."""
        guard = self.common_dir / "ks-notes.lock"
        with open(guard, "a+") as g, tempfile.NamedTemporaryFile("w", suffix=".txt") as note:
            note.write(redact_text(text))  # no credential a kernel or command printed goes into git
            note.flush()
            fcntl.flock(g.fileno(), fcntl.LOCK_EX)
            for tries in range(5):
                try:
                    self._run(self.repo, "notes", f"--ref={ref}", action, "-F", note.name, *args, what=what)
                    return
                except KsError:
                    if tries == 4:
                        raise
                    time.sleep(0.1 * (tries + 1))

    def remark(self, sid: str, ref: str | int, text: str, author: str = "human") -> Attempt:
        """Append a remark to an attempt (its commit and summary stay as they are); the attempt
        with its remarks. Also a `remark` line in the session trace."""
        info = self.session(sid)
        target = resolve_in(self._attempts(info), info.id, ref)
        line = remark_line(text, author)
        self._notes(REMARKS_REF, "append", target.sha, text=line, what="storing the remark as a git note")
        Trace(self.trace_path(info.id)).append("remark", {"attempt": target.number, "sha": target.sha,
                                                          "author": author, "text": parse_remarks(line)[0]["text"]})
        return resolve_in(self._attempts(info), info.id, target.number)

    def remark_question(self, sid: str, ref: str | int, question: str, text: str,
                        author: str = "human") -> tuple[Attempt, str | None]:
        """Declare, by a remark, that attempt `ref` answered `question` (a question id the caller has checked
        against the bank): its KS-Question trailer was wrong or missing, and commits are never rewritten.
        Returns the attempt as it reads now and the question it read before (None when none). KsError,
        writing nothing, for an empty reason, a rollback, or the question the attempt already answers."""
        info = self.session(sid)
        target = resolve_in(self._attempts(info), info.id, ref)
        if not " ".join(text.split()):
            raise KsError("a question remark needs the reason (why the recorded question was not the one answered)",
                          hint=f'ks remark {target.number} --question {question} "the probe asked whether ..."')
        if target.rollback_of is not None:
            raise KsError(f"attempt {target.number} is a rollback: it answered no question")
        if target.question == question:
            raise KsError(f"attempt {target.number} already reads as answering {question}")
        before = target.question
        said = f"answered {question}" + (f", not {before}" if before else "") + f": {text}"
        line = remark_line(said, author, question=question)
        self._notes(REMARKS_REF, "append", target.sha, text=line, what="storing the remark as a git note")
        Trace(self.trace_path(info.id)).append("remark", {"attempt": target.number, "sha": target.sha,
                                                          "author": author, "text": parse_remarks(line)[0]["text"],
                                                          "question": question})
        return resolve_in(self._attempts(info), info.id, target.number), before

    def remark_same_call(self, sid: str, ref: str | int, other: str | int, text: str,
                         author: str = "human") -> tuple[Attempt, Attempt]:
        """Declare, by a remark on each, that attempt `ref`'s run was timed in the same device call as
        attempt `other`'s (for runs without a pair tag of their own: made before tags existed, or by
        hand). `ref` joins `other`'s pair (its run's tag or a declared one), or both get a new tag
        `declared:<other's sha>`. KsError, writing nothing, when the two cannot be one call's runs:
        the same attempt, one not measured, measured on different devices, or `ref` already paired."""
        info = self.session(sid)
        attempts = self._attempts(info)
        me, them = resolve_in(attempts, info.id, ref), resolve_in(attempts, info.id, other)
        if me.number == them.number:
            raise KsError(f"attempt {me.number} cannot be declared timed beside itself")
        if not " ".join(text.split()):
            raise KsError("a same-call remark needs the evidence (which call, where its files are)",
                          hint=f'ks remark {me.number} --same-call {them.number} '
                               '"call 5: one interleaved round, results/..."')
        notes = self._result_notes(info)
        results = {a.number: _json_object(notes.get(a.sha, "")) for a in (me, them)}
        for a in (me, them):
            if a.rollback_of is not None or a.status == "unchecked" or not results[a.number]:
                raise KsError(f"attempt {a.number} has no run of its own to pair "
                              f"({'a rollback' if a.rollback_of is not None else 'no stored result'})")
        dev_me, dev_them = (results[a.number].get("device") or a.device for a in (me, them))
        if dev_me and dev_them and dev_me != dev_them:
            raise KsError(f"attempts {me.number} and {them.number} ran on different devices "
                          f"({dev_me}; {dev_them}), so not in one call")
        mine = results[me.number].get("pair") or declared_pair(me.remarks)
        if mine:
            raise KsError(f"attempt {me.number} is already paired (tag {mine}): a run has one call",
                          hint=f"declare the other attempts beside it: ks remark N --same-call {me.number} TEXT")
        theirs = results[them.number].get("pair") or declared_pair(them.remarks)
        tag = theirs or f"{DECLARED}{them.sha[:12]}"
        lines = [(me, remark_line(f"timed in the same call as #{them.number}: {text}", author, pair=tag))]
        if not theirs:  # `them` takes the new tag too
            lines.append((them, remark_line(f"timed in the same call as #{me.number}: {text}", author, pair=tag)))
        for a, line in lines:
            self._notes(REMARKS_REF, "append", a.sha, text=line, what="storing the remark as a git note")
            Trace(self.trace_path(info.id)).append("remark", {"attempt": a.number, "sha": a.sha, "author": author,
                                                              "text": parse_remarks(line)[0]["text"], "pair": tag})
        now = self._attempts(info)
        return resolve_in(now, info.id, me.number), resolve_in(now, info.id, them.number)

    def remark_notes(self, sid: str) -> dict[str, str]:
        """{commit sha: the raw remarks note} for the session's attempts that have remarks (for export)."""
        out = self._run(self.repo, "log", "-z", "--no-notes", f"--notes={REMARKS_REF}", f"--format=%H{tr.FIELD}%N",
                        self._range(self.session(sid)), "--", what="reading the remarks",
                        strip_newline_in_stdout=False)
        notes = (r.strip("\n").partition(tr.FIELD)[::2] for r in out.split("\0") if tr.FIELD in r)
        return {sha: note.strip("\n") + "\n" for sha, note in notes if note.strip()}

    def restore_remarks(self, sha: str, note: str) -> None:
        """Write a remarks note as exported (for import); replaces any note on that commit."""
        self._notes(REMARKS_REF, "add", "-f", sha, text=note, what="storing the remarks as a git note")

    def _trailers(self, info, number, author, status, result, question, rollback_of=None) -> dict:
        mode = result.get("mode")
        if mode and result.get("quick"):
            mode = f"{mode}-quick"
        elif mode and result.get("selection"):
            mode = f"{mode}-subset"  # --scenarios: a hand-picked selection, not the grid
        return {
            "KS-Session": info.id, "KS-Attempt": number, "KS-Author": author, "KS-Status": status,
            "KS-Correct": result.get("correct") or tr.NONE,
            "KS-Speedup": tr.format_speedup(result.get("geomean_speedup")),
            "KS-Baseline": baseline_label(result), "KS-Mode": mode or tr.NONE,
            "KS-Device": result.get("device") or None,
            "KS-Question": question, "KS-Rollback-Of": rollback_of,
        }

    @contextlib.contextmanager
    def _writing(self, info: SessionInfo):
        """One writer per session, and only from a worktree we can commit from."""
        with session_lock(self._session_dir(info.id) / ".lock", info.id):
            self._check_worktree(info)
            self._recover_pending(info, locked=True)
            yield

    def record(self, sid: str, result: dict | None, author: str = "agent", question: str | None = None,
               summary: str = "", *, remeasure: bool = False) -> Attempt | None:
        """Commit the session's kernel with the result's trailers; None if it did not change.

        With `remeasure`, an unchanged kernel is recorded too, as an empty commit: a new
        measurement of the latest attempt's kernel (a full-grid bench after a subset run, say).
        The very result the latest attempt already holds is refused: that is a double record."""
        if author not in ("agent", "human"):
            raise KsError(f"author must be agent or human, not {author!r}")
        result = _checked_result(result)
        info = self.session(sid)
        with self._writing(info):
            self._check_result_kernel(info, result)
            attempts = self._attempts(info)
            if remeasure and attempts and self._blob_of_worktree(info) == self._blobs_at(info, attempts[-1].sha)[0]:
                last = attempts[-1]
                if self._note(last.sha) == json.loads(json.dumps(result, sort_keys=True, default=str)):
                    raise KsError(f"attempt {last.number} already holds this result; nothing recorded")
                summary = summary or f"re-measure of attempt {last.number}: " + \
                    default_summary(last.number + 1, author, result.get("status", "unchecked"), result)
                return self._record(info, result, author, question, summary, new_only=True, attempts=attempts,
                                    allow_unchanged=True)
            return self._record(info, result, author, question, summary, new_only=True, attempts=attempts)

    def keep_unrecorded(self, sid: str, kernel: bytes, result: dict) -> tuple[Path, Path]:
        """Keep a measured kernel that could not be committed (the file changed while the harness
        ran) beside its result, under the session's folder, so a long measurement is not lost."""
        info = self.session(sid)
        folder = self._session_dir(info.id) / "unrecorded"
        folder.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
        kernel_file = folder / f"{stamp}-{self._task(info).kernel.name}"
        result_file = folder / f"{stamp}-result.json"
        kernel_file.write_bytes(kernel)
        result_file.write_text(json.dumps(result, indent=1, default=str))
        return kernel_file, result_file

    def record_measured(self, sid: str, measured: bytes | None, result: dict, **kw) -> Attempt | None:
        """`record`, for a run of the kernel whose bytes were MEASURED (read just before the run).
        When the file changed during the run, the measured bytes and the result are kept
        (`keep_unrecorded`) and the error says where and how to record them."""
        try:
            return self.record(sid, result, **kw)
        except KsError:
            claimed = result.get("kernel_sha256")
            if measured is None or not claimed or hashlib.sha256(measured).hexdigest() != claimed:
                raise
            kernel_file, result_file = self.keep_unrecorded(sid, measured, result)
            raise KsError(f"the kernel changed while the harness ran; the kernel it measured and the result are "
                          f"kept in {kernel_file.parent}", hint=f"record your newer edit with `ks try -s {sid} --no-run`, "
                          f"then the measured one with `ks try -s {sid} --kernel {kernel_file} --result {result_file}`"
                          ) from None

    def _check_result_kernel(self, info: SessionInfo, result: dict) -> None:
        claimed = result.get("kernel_sha256")
        actual = kernel_sha256(self._task(info).kernel) if claimed else None
        if claimed and claimed != actual:
            raise KsError(f"the result is for a different kernel (sha256 {claimed[:12]}…) than the one in "
                          f"session {info.id}'s worktree ({actual[:12]}…); nothing recorded",
                          hint="the kernel changed after the harness ran; run it again")

    def _record(self, info: SessionInfo, result: dict, author: str, question: str | None, summary: str,
                *, new_only: bool, attempts: list[Attempt] | None = None,
                allow_unchanged: bool = False) -> Attempt | None:
        """Commit the worktree kernel as the next attempt (lock held, worktree checked).

        None when it equals the latest attempt's kernel, or with `new_only` False (a human
        edit) also when there is no attempt yet and it equals the session's start."""
        attempts = self._attempts(info) if attempts is None else attempts
        last = attempts[-1].sha if attempts else (info.base or info.branch)
        now_blob = self._blob_of_worktree(info)
        # The branch, not "HEAD": in self.repo that is the user's checkout.
        last_blob, tip_blob = self._blobs_at(info, last, info.branch)
        if now_blob == last_blob and (attempts or not new_only) and not allow_unchanged:
            return None
        status = result.get("status", "unchecked")
        number = (attempts[-1].number if attempts else 0) + 1
        summary = summary or default_summary(number, author, status, result)
        message = tr.build_message(summary, self._trailers(info, number, author, status, result, question))
        pending = self._pending_path(info)
        if status != "unchecked" and result:  # written ahead: a kill between commit and note loses no result
            _write_synced(pending, json.dumps({"attempt": number, "result": result}, default=str))
        # The seed kernel as attempt 1 changes no file.
        new = self._commit(info, message, attempts, allow_empty=(now_blob == tip_blob))
        if status != "unchecked" and result:
            self._write_note(new.sha, result)
            pending.unlink(missing_ok=True)
        return new

    def _pending_path(self, info: SessionInfo) -> Path:
        return self._session_dir(info.id) / "pending-result.json"

    def _recover_pending(self, info: SessionInfo, *, locked: bool) -> None:
        """A result written ahead of its commit whose note is missing (the process was killed
        between the two) becomes the attempt's note. Only the lock holder drops a pending
        result whose commit never happened: another process may be between the two steps."""
        pending = self._pending_path(info)
        if not pending.is_file():
            return
        try:
            data = json.loads(pending.read_text())
            number, result = int(data["attempt"]), data["result"]
        except (OSError, ValueError, KeyError, TypeError):
            if locked:
                pending.unlink(missing_ok=True)
            return
        done = next((a for a in self._attempts(info) if a.number == number), None)
        if done is not None and not self._note(done.sha):
            self._write_note(done.sha, result)
        if done is not None or locked:
            pending.unlink(missing_ok=True)

    def commit_human_edit(self, sid: str, result: dict | None = None) -> Attempt | None:
        """Commit a person's edit of the kernel as its own attempt (KS-Author: human) before
        anyone else writes to it. Status "unchecked" unless a harness result is given."""
        checked = _checked_result(result or {"status": "unchecked"})
        info = self.session(sid)
        with self._writing(info):
            self._check_result_kernel(info, checked)
            return self._record(info, checked, "human", None, "human edit" if result is None else "", new_only=False)

    def rollback(self, sid: str, ref: str | int, author: str = "human", *, trace: bool = True) -> Attempt:
        """A new commit whose kernel equals attempt `ref`'s, after saving an unrecorded edit.

        `trace=False` when the caller records the rollback in the trace itself (the engine
        emits RolledBack), so it appears there once."""
        info = self.session(sid)
        with self._writing(info):
            attempts = self._attempts(info)
            target = resolve_in(attempts, info.id, ref)
            # A person's unsaved edit becomes history first.
            saved = self._record(info, {"status": "unchecked"}, "human", None, "human edit", new_only=False,
                                 attempts=attempts)
            attempts = [*attempts, saved] if saved else attempts
            latest = attempts[-1]
            latest_blob, target_blob = self._blobs_at(info, latest.sha, target.sha)
            if latest_blob == target_blob:
                raise KsError(f"the latest attempt ({latest.number}) already has attempt {target.number}'s kernel; "
                              "nothing to roll back")
            self._run(self._wt(info), "checkout", target.sha, "--", self._kernel_rel(info), what="restoring the kernel")
            result = self._note(target.sha)
            fields = self._trailers(info, latest.number + 1, author, target.status, result, None,
                                    rollback_of=target.number)
            # Without a stored result, carry the target's trailers as they were.
            fields.update({"KS-Correct": target.correct or tr.NONE, "KS-Speedup": tr.format_speedup(target.speedup),
                           "KS-Baseline": target.baseline or tr.NONE, "KS-Mode": target.mode or tr.NONE,
                           "KS-Device": target.device or None})
            message = tr.build_message(f"rollback to attempt {target.number}: {target.summary}", fields)
            new = self._commit(info, message, attempts, allow_empty=False)
            if result:
                self._write_note(new.sha, result)
            if trace:
                Trace(self.trace_path(info.id)).append("rollback", {
                    "to_attempt": target.number, "new_attempt": new.number, "to_sha": target.sha, "sha": new.sha,
                    "source": "attempts"})
            return new


def baseline_label(result: dict) -> str:
    """Which baseline the speedup is against: one name, or the set when scenarios differ."""
    names = sorted({(s.get("baseline") or {}).get("name") for s in result.get("scenarios") or []
                    if isinstance(s, dict) and s.get("baseline")} - {None})
    if not names:
        return tr.NONE
    return names[0] if len(names) == 1 else "best-of " + "+".join(names)


def default_summary(number: int, author: str, status: str, result: dict) -> str:
    parts = [f"attempt {number} ({author}): {status}"]
    if result.get("correct"):
        parts.append(str(result["correct"]))
    if result.get("geomean_speedup") is not None:
        parts.append(f"{result['geomean_speedup']:.3f}x")
    return ", ".join(parts)


def _checked_result(result: dict | None) -> dict:
    """A copy of a harness result whose status can be recorded (KsError otherwise)."""
    result = dict(result or {})
    status = result.get("status", "unchecked")
    if status == "cancelled":
        raise KsError("the harness run was cancelled; nothing recorded")
    if status not in STATUSES:
        raise KsError(f"unknown result status {status!r}", hint="one of " + ", ".join(STATUSES))
    return result


def _json_object(text: str) -> dict:
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def mark_best(attempts: list[Attempt]) -> list[Attempt]:
    """Set `best` on the fastest correct attempt (the earliest on a tie, so a rollback never
    takes the mark from the attempt it copies). A quick-subset geomean is not comparable with
    a full-grid one (nor is a --scenarios selection's): the fastest full-grid run wins, and only
    while there is none a quick or subset run.

    Nor is a speedup measured on another device: the same kernel read 1.1598x on an H200 and
    1.1479x on an H100 (issue 8). Only attempts measured on `current_device` compete, and those
    recorded before attempts named their device (no KS-Device trailer), which compare as before."""
    here = current_device(attempts)
    best = fastest([a for a in attempts if best_rule.comparable(a.device, here)])
    for a in attempts:
        a.best = a is best
    return attempts


def _before(attempts: list[Attempt], target: Attempt) -> Attempt | None:
    earlier = [a for a in attempts if a.number < target.number]
    return earlier[-1] if earlier else None


def resolve_in(attempts: list[Attempt], sid: str, ref: str | int) -> Attempt:
    """The attempt `ref` names: a number (or #number), a hash prefix, "best" or "latest"."""
    text = str(ref).strip().lstrip("#")
    if not attempts:
        raise KsError(f"session {sid} has no attempts yet", hint="record one with `ks try --session ID`")
    if text == "latest":
        return attempts[-1]
    if text == "best":
        best = next((a for a in attempts if a.best), None)
        if best is None:
            raise KsError(f"session {sid} has no correct attempt with a measured speedup yet")
        return best
    if text.isdigit():
        n = int(text)
        for a in attempts:
            if a.number == n:
                return a
        # An all-digit hash prefix (one in ~40 commits at 8 digits) is still a hash.
        if not (len(text) >= 4 and any(a.sha.startswith(text) for a in attempts)):
            raise KsError(f"session {sid} has no attempt {n}", hint=f"attempts are 1..{attempts[-1].number}")
    if _HEX_RE.match(text):
        hits = [a for a in attempts if a.sha.startswith(text.lower())]
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            raise KsError(f"{text} matches {len(hits)} attempts of session {sid}", hint="give more hash digits")
    raise KsError(f"no attempt {text!r} in session {sid}",
                  hint="name an attempt by number, hash prefix, `best` or `latest`")
