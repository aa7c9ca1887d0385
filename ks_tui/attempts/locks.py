"""Locks: one writer per session, and telling a stale git lock from a live one.

The session lock is an flock on `sessions/<id>/.lock` holding the owner's pid: the kernel
releases it when the owner dies, so it can never go stale; the pid is only there to name
the holder in the message. Within one process it is re-entrant (the engine may hold it
around a harness run and call `record` inside).

Git's own `*.lock` files are different: a git killed mid-command leaves them behind and
every later git command fails. We only remove one when no process has it open, no git
process is running in the repository, and it is older than a few seconds.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from pathlib import Path

from ks_tui.errors import KsError

STALE_AFTER_S = 5.0
READ_ONLY_GIT = {b"cat-file", b"log", b"show", b"rev-parse", b"for-each-ref"}

_registry_guard = threading.Lock()
_held: dict[str, list] = {}   # path -> [fd, depth, RLock]


@contextlib.contextmanager
def session_lock(path: Path, session: str):
    key = str(path)
    with _registry_guard:
        entry = _held.setdefault(key, [None, 0, threading.RLock()])
    rlock: threading.RLock = entry[2]
    with rlock:  # threads of one process take turns
        if entry[1] == 0:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
                os.close(fd)
                raise KsError(f"session {session} is busy: another ks process (pid {holder}) "
                              f"is working on it (lock {path})",
                              hint="wait for it to finish; the lock frees itself when that process ends") from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            entry[0] = fd
        entry[1] += 1
        try:
            yield
        finally:
            entry[1] -= 1
            if entry[1] == 0:
                fd, entry[0] = entry[0], None
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, 0)
                os.close(fd)  # closing releases the flock


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()] if os.path.isdir("/proc") else []


def _holders_of(lock: Path) -> list[int]:
    """Processes that have the lock file open."""
    target = str(lock)
    found = []
    for pid in _pids():
        fd_dir = f"/proc/{pid}/fd"
        try:
            for fd in os.listdir(fd_dir):
                with contextlib.suppress(OSError):
                    if os.readlink(f"{fd_dir}/{fd}") == target:
                        found.append(pid)
                        break
        except OSError:
            continue
    return found


def _git_processes_in(roots: list[Path]) -> list[int]:
    """Running git processes whose working folder is inside one of `roots`."""
    me = os.getpid()
    found = []
    root_strs = [str(r) for r in roots]
    for pid in _pids():
        if pid == me:
            continue
        try:
            with open(f"/proc/{pid}/comm") as f:
                comm = f.read().strip()
            if not comm.startswith("git"):
                continue
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except (OSError, ValueError, IndexError):
            continue
        # GitPython keeps `git cat-file --batch` readers alive; they never take locks.
        if ppid == me or any(a in READ_ONLY_GIT for a in argv[1:3]):
            continue
        if any(cwd == r or cwd.startswith(r + os.sep) for r in root_strs):
            found.append(pid)
    return found


def check_git_locks(locks: list[Path], roots: list[Path], *, remove_stale: bool,
                    shared: tuple[Path, ...] = ()) -> list[Path]:
    """Raise KsError for a lock in use or a stale one (unless `remove_stale`); return the
    stale locks removed. A `shared` lock (one every session's git takes for a moment, such
    as the notes ref's) that is in use is passed over: only a stale one is an error."""
    removed = []
    for lock in locks:
        try:
            age = time.time() - lock.stat().st_mtime
        except FileNotFoundError:
            continue
        holders = _holders_of(lock) or _git_processes_in(roots)
        busy = bool(holders) or age < STALE_AFTER_S
        if busy and lock in shared:
            continue
        if busy:
            who = f"process {', '.join(map(str, holders))}" if holders else "a git command that just started"
            raise KsError(f"git is busy in this repository ({who} holds {lock})",
                          hint="wait for it to finish and try again; the lock is not stale, so it was left alone")
        if not remove_stale:
            raise KsError(f"stale git lock {lock} ({age:.0f} s old, no git process running): "
                          "a git command was killed before it finished",
                          hint="rerun with --remove-stale-lock to delete it safely, or delete the file yourself")
        with contextlib.suppress(FileNotFoundError):
            lock.unlink()
        removed.append(lock)
    return removed
