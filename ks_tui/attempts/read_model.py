"""The read model: a session's attempts from one `git log` (trailers, remarks, devices, code
identities), the best mark, naming an attempt (number, hash, best, latest), diffs and results.

Part of AttemptStore (ks_tui/attempts/store.py); `self` is the store.
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

from ks_tui import best_rule
from ks_tui.attempts import code_identity as ci
from ks_tui.attempts import trailers as tr
from ks_tui.attempts.git_io import _json_object
from ks_tui.attempts.model import Attempt, SessionInfo, current_device, fastest
from ks_tui.attempts.remarks import REMARKS_REF
from ks_tui.attempts.store_base import StoreBase
from ks_tui.errors import KsError
from ks_tui.trace import Trace

_HEX_RE = re.compile(r"^[0-9a-fA-F]{4,40}$")
_CACHED_BLOB = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
_CACHED_CODE = re.compile(r"^[0-9a-f]{64}$")


class ReadModel(StoreBase):
    """AttemptStore's attempts, naming them, diffs and results."""

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

    def kernel_at(self, sid: str, ref: str | int) -> bytes:
        """The kernel file's bytes as committed in that attempt."""
        info = self.session(sid)
        target = resolve_in(self._attempts(info), info.id, ref)
        return self._run(self.repo, "show", f"{target.sha}:{self._kernel_rel(info)}", what="reading the kernel",
                         stdout_as_string=False, strip_newline_in_stdout=False)

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


def mark_best(attempts: list[Attempt]) -> list[Attempt]:
    """Set `best` on the fastest correct attempt (the earliest on a tie, so a rollback never
    takes the mark from the attempt it copies). A quick-subset geomean is not comparable with
    a full-grid one (nor is a --scenarios selection's): the fastest full-grid run wins, and only
    while there is none a quick or subset run.

    Nor is a speedup measured on another device: one kernel's speedup differs from GPU to GPU. Only
    attempts measured on `current_device` compete, and those recorded before attempts named their
    device (no KS-Device trailer), which compare as before."""
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
