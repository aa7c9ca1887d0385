"""The store's git plumbing: running git in the workspace or a session worktree, objects read
in batches, and the notes refs (results, remarks) written under a cross-process lock.

Part of AttemptStore (ks_tui/attempts/store.py); `self` is the store.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from ks_tui.attempts import trailers as tr
from ks_tui.attempts.model import SessionInfo
from ks_tui.attempts.store_base import StoreBase
from ks_tui.errors import KsError
from ks_tui.harness.secret_env import redact_text

if TYPE_CHECKING:
    import git

NOTES_REF = "refs/notes/ks"
DEFAULT_NAME = "KernelSeek"
DEFAULT_EMAIL = "ks@localhost"


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


def _json_object(text: str) -> dict:
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}



class GitIO(StoreBase):
    """AttemptStore's git commands, batched object reads and the notes refs."""

    @overload
    def _run(self, repo: git.Repo, *args: str, what: str, stdout_as_string: Literal[False], **kw: Any) -> bytes: ...
    @overload
    def _run(self, repo: git.Repo, *args: str, what: str, **kw: Any) -> str: ...

    def _run(self, repo: git.Repo, *args: str, what: str, **kw: Any) -> str | bytes:
        """`git ARGS` in REPO (the workspace's or a session worktree's) with our identity; its output, as text
        unless stdout_as_string=False. KsError, saying WHAT failed, when git does."""
        try:
            return repo.git.execute(["git", *args], env=self._env, **kw)
        except self._git_errors as e:
            raise KsError(f"{what} failed: {_git_error_line(e)}") from None

    def _wt(self, info: SessionInfo) -> git.Repo:
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

    @staticmethod
    def _range(info: SessionInfo) -> str:
        return f"{info.base}..{info.branch}" if info.base else info.branch

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

    def _ref_exists(self, ref: str) -> bool:
        with contextlib.suppress(KsError):
            self._run(self.repo, "rev-parse", "--verify", "--quiet", ref, what="looking up " + ref)
            return True
        return False

    def _blob_of_worktree(self, info: SessionInfo) -> str:
        return self._run(self._wt(info), "hash-object", "--", self._kernel_rel(info), what="hashing the kernel")

    def _blobs_at(self, info: SessionInfo, *commits: str) -> list[str]:
        """The kernel's blob id in each commit, from one git call."""
        rel = self._kernel_rel(info)
        return self._run(self.repo, "rev-parse", *(f"{c}:{rel}" for c in commits),
                         what="reading the kernel blob").split()

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
