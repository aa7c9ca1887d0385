"""Processes a kernel (or an agent's shell command) leaves behind: found by a mark in their environment, and killed.

The harness child and each bash command of the agent run in a process group of their own, and
killing that group ends them and whatever they forked. A process that called setsid() has left
the group, though, and one forked into the group outlives a parent that exits normally. Either
keeps running after the run: burning the CPU or the GPU under the next measurement, or writing
where it should not. Every process started under the child inherits its environment, so each run
puts a fresh mark there, and at its end the parent kills the group and every process that still
carries the mark. A process that scrubs its environment before it forks escapes this; Linux only
(/proc).
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path
from typing import Mapping

MARK_VARIABLE = "KS_RUN_MARK"


def new_mark() -> str:
    return uuid.uuid4().hex


def marked_environ(mark: str, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """ENVIRON with the run's mark added. A run inside another (`ks bench` in an agent's bash command) keeps the
    outer marks before its own, colon-separated, so the outer run's sweep finds its processes too."""
    outer = environ.get(MARK_VARIABLE, "")
    return {**environ, MARK_VARIABLE: f"{outer}:{mark}" if outer else mark}


def _carries(environ_file: Path, mark: str) -> bool:
    try:
        environ = environ_file.read_bytes()  # a zombie's reads empty; another user's is refused
    except OSError:
        return False
    prefix = f"{MARK_VARIABLE}=".encode()
    return any(entry.startswith(prefix) and mark.encode() in entry[len(prefix):].split(b":")
               for entry in environ.split(b"\0"))


def marked_processes(mark: str, proc_root: Path = Path("/proc")) -> list[int]:
    """Pids of the live processes whose MARK_VARIABLE holds the mark (this process excluded)."""
    try:
        entries = list(proc_root.iterdir())
    except OSError:  # no /proc (not Linux): nothing can be found
        return []
    return sorted(int(e.name) for e in entries
                  if e.name.isdigit() and int(e.name) != os.getpid() and _carries(e / "environ", mark))


def group_members(group: int, proc_root: Path = Path("/proc")) -> list[int]:
    """Pids of the live processes in process group GROUP (zombies and this process excluded). Read from each
    process's stat, which, unlike its environment, stays readable while it is inside execve()."""
    try:
        entries = list(proc_root.iterdir())
    except OSError:
        return []
    out = []
    for e in entries:
        if not e.name.isdigit() or int(e.name) == os.getpid():
            continue
        try:
            stat = (e / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses, so split after the last ')'
        fields = stat[stat.rfind(")") + 1:].split()
        if len(fields) > 2 and fields[0] != "Z" and fields[2] == str(group):
            out.append(int(e.name))
    return sorted(out)


def _kill_marked(pid: int, mark: str) -> None:
    """SIGKILL pid if it still carries the mark. Through a pidfd where there is one: the pid is pinned to one
    process while the mark is read again, so a pid that ended and was reused in between is never signalled."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # no pidfd (old kernel or Python, not Linux), or the process is gone
        fd = None
    try:
        if not _carries(Path(f"/proc/{pid}/environ"), mark):
            return
        if fd is not None:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    finally:
        if fd is not None:
            os.close(fd)


def _kill_pinned(pids: list[int]) -> None:
    """SIGKILL each of PIDS that is still the process it was: pinned by a pidfd opened now, and killed only while
    it is still a member of the run (its group scanned just before). Without pidfds, nothing: the group's kill
    and the mark's sweep remain."""
    for pid in pids:
        try:
            fd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            continue
        try:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
        except (ProcessLookupError, PermissionError, OSError):
            pass
        finally:
            os.close(fd)


SWEEP_PAUSE_S = 0.01
SWEEP_ROUNDS = 200  # at most ~2 s of sweeping, even against a process that keeps forking


def end_leftovers(group: int, mark: str) -> list[int]:
    """Kill the process group and every process still carrying the run's mark; the pids found left running
    (the group's live members and the marked processes).

    One scan is not enough: a process caught inside execve() (a `setsid sleep` turning into `sleep`) has no
    readable environment for that moment, and a killed one keeps its /proc entry until it has exited. So the
    scan repeats until two in a row find nothing, which also leaves the killed processes gone on return. The
    group's members are named from their stat, readable inside execve() too: a background job still in the group
    and mid-exec when the scan ran was killed with the group but went unnamed."""
    # before the group's kill, so that its members are named too
    members = group_members(group)
    found = set(marked_processes(mark)) | set(members)
    _kill_pinned(members)  # one that left the group (setsid) after the scan, its environment scrubbed, still dies
    try:
        os.killpg(group, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    pending, quiet = sorted(found), 0
    for _ in range(SWEEP_ROUNDS):
        for pid in pending:
            _kill_marked(pid, mark)
        time.sleep(SWEEP_PAUSE_S)
        pending = marked_processes(mark)
        found.update(pending)
        quiet = 0 if pending else quiet + 1
        if quiet >= 2:
            break
    return sorted(found)
