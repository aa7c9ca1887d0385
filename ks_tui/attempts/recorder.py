"""Recording attempts: the session lock and worktree checks, committing a measured kernel with
its result (written ahead, so a kill between commit and note loses nothing: recovery),
a person's edit, and rollback (a new commit, history kept).

Part of AttemptStore (ks_tui/attempts/store.py); `self` is the store.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

from ks_tui.attempts import trailers as tr
from ks_tui.attempts.git_io import NOTES_REF, _write_synced, kernel_sha256
from ks_tui.attempts.locks import check_git_locks, session_lock
from ks_tui.attempts.model import STATUSES, Attempt, SessionInfo
from ks_tui.attempts.read_model import mark_best, resolve_in
from ks_tui.attempts.store_base import StoreBase
from ks_tui.errors import KsError
from ks_tui.trace import Trace


class Recorder(StoreBase):
    """AttemptStore's lock, checks, record, recovery and rollback."""

    @contextlib.contextmanager
    def lock(self, sid: str) -> Iterator[None]:
        info = self.session(sid)
        with session_lock(self._session_dir(info.id) / ".lock", info.id):
            yield

    def check(self, sid: str) -> None:
        """Raise KsError now if an attempt could not be committed (call before a long run)."""
        self._check_worktree(self.session(sid))

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
    def _writing(self, info: SessionInfo) -> Iterator[None]:
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
        if not claimed:
            return
        actual = kernel_sha256(self._task(info).kernel)
        if claimed != actual:
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
    baselines = [s["baseline"] for s in result.get("scenarios") or [] if isinstance(s, dict) and s.get("baseline")]
    names: list[str] = sorted({b.get("name") for b in baselines} - {None})
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
