"""Carry a session to another checkout: `ks session export ID FILE` / `ks session import FILE`.

A session's attempts live on its branch (ks/<task>/<id>) and its results in git notes, neither of
which a clone of main brings along; a fresh checkout would lose the history. The export is one
.tar.gz holding:
  session.json    the session (id, task, branch, base, created)
  session.bundle  a git bundle of base..branch: only the session's own commits, so the importing
                  repository must already have the base (it is a commit of the branch the session
                  started from); with `--whole`, of the branch and all its history, so any repository
                  takes it (a session made in a workspace on a GPU box, brought home)
  results.json    {commit sha: result} for every attempt that has a stored result (the notes)
  remarks.json    {commit sha: remarks note} for every attempt with remarks (`ks remark`)
  trace.jsonl     the session trace (questions, agent events), when there is one
  efficacy.jsonl  the session's records in the question bank's efficacy file (asks and outcomes)
Import fetches the branch from the bundle, makes the worktree, and writes the notes and files back.
"""

from __future__ import annotations

import contextlib
import io
import json
import tarfile
import tempfile
import zlib
from datetime import datetime
from pathlib import Path

from ks_tui.attempts.model import SessionInfo
from ks_tui.errors import InputFileError, KsError
from ks_tui.harness.secret_env import redact_bytes
from ks_tui.questions.efficacy import EfficacyStore

_MEMBERS = ("session.json", "session.bundle", "results.json", "remarks.json", "trace.jsonl", "efficacy.jsonl")
_MAX_MEMBER_BYTES = 512 * 1024 * 1024


def export_session(store, sid: str, dest: Path, whole: bool = False) -> tuple[SessionInfo, int]:
    """Write the session to dest (.tar.gz); returns the session and its number of attempts.

    whole: the bundle holds the base's history too (the importing repository needs none of it)."""
    info = store.session(sid)
    attempts = store.attempts(info.id)
    if not attempts:
        raise KsError(f"session {info.id} has no attempts to export")
    base = info.base or store._run(store.repo, "rev-parse", f"{attempts[0].sha}~1", what="finding the session's base")
    stored = store.results(info.id)
    results = {a.sha: stored[a.number] for a in attempts if stored.get(a.number)}
    remarks = store.remark_notes(info.id)
    meta = {**info.to_dict(), "base": base}
    meta.pop("worktree")
    dest = Path(dest)
    with tempfile.TemporaryDirectory() as tmp:
        bundle = Path(tmp) / "session.bundle"
        own = [] if whole else [f"^{base}"]
        store._run(store.repo, "bundle", "create", "--quiet", str(bundle), f"refs/heads/{info.branch}", *own,
                   what=f"bundling session {info.id}")
        trace = store.trace_path(info.id)
        part = dest.with_name(dest.name + ".part")
        try:
            with tarfile.open(part, "w:gz") as tar:
                _add_bytes(tar, "session.json", json.dumps(meta, indent=2).encode() + b"\n")
                tar.add(bundle, arcname="session.bundle")
                _add_bytes(tar, "results.json",
                           redact_bytes(json.dumps(results, indent=1, sort_keys=True, default=str).encode()))
                if remarks:
                    _add_bytes(tar, "remarks.json", json.dumps(remarks, indent=1, sort_keys=True).encode())
                if trace.is_file():  # redacted again: a trace written before redaction existed may hold a key
                    _add_bytes(tar, "trace.jsonl", redact_bytes(trace.read_bytes()))
                asks = EfficacyStore(store.workspace).session_records(info.id)
                if asks:
                    _add_bytes(tar, "efficacy.jsonl", "".join(json.dumps(r, sort_keys=True) + "\n" for r in asks).encode())
            part.replace(dest)  # a killed export leaves no half-written FILE
        except OSError as e:
            part.unlink(missing_ok=True)
            raise KsError(f"cannot write {dest}: {e.strerror or e}") from None
    return info, len(attempts)


def import_session(store, src: Path) -> tuple[SessionInfo, int]:
    """Recreate the session exported to src in this workspace; returns it and its number of attempts."""
    src = Path(src)
    parts = _read_export(src)
    meta = _session_meta(src, parts["session.json"])
    sid, branch = meta["id"], meta["branch"]
    if any(ref == branch for ref, _ in store._session_refs()) or store._session_dir(sid).exists():
        raise KsError(f"session {sid} already exists in {store.workspace}",
                      hint=f"its attempts: `ks log -s {sid}`; remove sessions/{sid} and branch {branch} to import again")
    results = _json_member(src, parts, "results.json", "results")
    remarks = _json_member(src, parts, "remarks.json", "remarks")  # absent in exports made before remarks
    with tempfile.TemporaryDirectory() as tmp:
        bundle = Path(tmp) / "session.bundle"
        bundle.write_bytes(parts["session.bundle"])
        try:
            store._run(store.repo, "bundle", "verify", "--quiet", str(bundle), what="checking the bundle")
        except KsError as e:
            raise KsError(f"cannot import session {sid}: {e}",
                          hint=f"the session started from commit {meta['base'][:12]}, which this repository must have "
                               "(fetch or pull the branch it was made on), or export it with `ks session export --whole` "
                               "where it was made") from None
        store._run(store.repo, "fetch", "--quiet", "--no-tags", str(bundle), f"refs/heads/{branch}:refs/heads/{branch}",
                   what=f"fetching session {sid} from the bundle")
    sdir = store._session_dir(sid)
    worktree = sdir / "worktree"
    info = SessionInfo(id=sid, task=meta["task"], branch=branch, worktree=worktree,
                       created=datetime.fromisoformat(meta["created"]), base=meta["base"])
    try:
        store._ensure_sessions_ignored()
        sdir.mkdir(parents=True)
        store._run(store.repo, "worktree", "add", "--quiet", str(worktree), branch, what="creating the session worktree")
        (sdir / "session.json").write_text(json.dumps(info.to_dict(), indent=2) + "\n")
        if "trace.jsonl" in parts:
            store.trace_path(sid).write_bytes(parts["trace.jsonl"])
    except (KsError, OSError) as e:
        _undo_import(store, sdir, worktree, branch)  # half an import would block the next try ("already exists")
        raise KsError(f"cannot import session {sid}: {e.strerror if isinstance(e, OSError) and e.strerror else e}"
                      + (f" ({e.filename})" if isinstance(e, OSError) and e.filename else "")) from None
    if "efficacy.jsonl" in parts:
        lines = parts["efficacy.jsonl"].decode("utf-8", errors="replace").splitlines()
        EfficacyStore(store.workspace).import_records([_json_or_none(line) for line in lines if line.strip()])
    known = {a.sha for a in store.attempts(sid)}
    for sha, result in results.items():
        if sha in known and isinstance(result, dict):
            store._write_note(sha, result)
    for sha, note in remarks.items():
        if sha in known and isinstance(note, str) and note.strip():
            store.restore_remarks(sha, note)
    return info, len(known)


def _json_member(src: Path, parts: dict[str, bytes], name: str, what: str) -> dict:
    """A JSON-object member of the export ({} when absent); InputFileError when it is not one."""
    try:
        data = json.loads(parts.get(name, b"{}"))
        if not isinstance(data, dict):
            raise ValueError("not an object")
    except ValueError as e:  # UnicodeDecodeError is a ValueError too
        raise InputFileError(src, f"{name} is not a JSON object of {what} ({e})") from None
    return data


def _undo_import(store, sdir: Path, worktree: Path, branch: str) -> None:
    import shutil

    if worktree.exists():
        with contextlib.suppress(KsError):
            store._run(store.repo, "worktree", "remove", "--force", str(worktree), what="removing the worktree")
    if sdir.is_dir():
        shutil.rmtree(sdir, ignore_errors=True)
    with contextlib.suppress(KsError):
        store._run(store.repo, "worktree", "prune", what="pruning worktrees")
        store._run(store.repo, "branch", "-D", branch, what="removing the fetched branch")


def _json_or_none(line: str):
    try:
        return json.loads(line)
    except ValueError:
        return None  # a torn line is skipped, as the efficacy file itself skips it


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    member = tarfile.TarInfo(name)
    member.size = len(data)
    member.mtime = int(datetime.now().timestamp())
    tar.addfile(member, io.BytesIO(data))


def _read_export(src: Path) -> dict[str, bytes]:
    """The export's known members as bytes (never extracted to disk: no paths from the archive are used)."""
    try:
        raw = src.read_bytes()
        if raw[:2] == b"\x1f\x8b":  # read the whole gzip stream: its CRC catches damage tarfile would not see
            import gzip

            raw = gzip.decompress(raw)
        with tarfile.open(fileobj=io.BytesIO(raw), mode="r:*") as tar:
            parts = {}
            for member in tar.getmembers():
                if member.name in _MEMBERS and member.isfile() and member.size <= _MAX_MEMBER_BYTES:
                    data = tar.extractfile(member)  # None only for what is not a regular file
                    if data is not None:
                        parts[member.name] = data.read()
    except FileNotFoundError:
        raise KsError(f"{src} not found") from None
    except (tarfile.TarError, OSError, EOFError, zlib.error) as e:
        raise InputFileError(src, f"not a session export ({e})",
                             hint="make one with `ks session export ID FILE`") from None
    missing = [m for m in ("session.json", "session.bundle", "results.json") if m not in parts]
    if missing:
        raise InputFileError(src, f"not a session export (no {', '.join(missing)})",
                             hint="make one with `ks session export ID FILE`")
    return parts


def _session_meta(src: Path, raw: bytes) -> dict:
    from ks_tui.attempts.store import BRANCH_PREFIX, _ID_RE

    try:
        meta = json.loads(raw)
        sid, task, branch, base = (str(meta[k]) for k in ("id", "task", "branch", "base"))
        datetime.fromisoformat(meta["created"])
    except (ValueError, KeyError, TypeError) as e:
        raise InputFileError(src, f"session.json is not a session ({e})") from None
    if not _ID_RE.match(sid) or not _ID_RE.match(task) or branch != f"{BRANCH_PREFIX}/{task}/{sid}":
        raise InputFileError(src, f"session.json names an unusable session (id {sid!r}, branch {branch!r})")
    return meta
