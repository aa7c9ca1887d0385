"""The bash tool's runner: one command in the worktree, a time limit, output cut to size.

The command gets an allow-listed environment (no credential), runs in a process group and session of its own
(and, where the machine allows, a pid namespace that dies with it), and its output is read by a thread with a
bounded wait: a daemon that keeps the output pipe open (`(setsid sleep 300 &); echo started`) cannot hold the tool
past its time limit, nor past the command's own end.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

from ks_tui.harness import sandbox
from ks_tui.harness.leftovers import end_leftovers, marked_environ, new_mark
from ks_tui.harness.secret_env import child_environ, redact_text

MAX_OUTPUT_CHARS = 20_000
READ_CHUNK = 65536
KEEP_BYTES = 4 * MAX_OUTPUT_CHARS  # the reader keeps the head's size and the tail; the middle is counted, not kept
POLL_S = 0.2
DRAIN_S = 2.0  # after the command (and what it left) ended: how long its output may still take to arrive


class _Drain(threading.Thread):
    """Reads the command's output to its end, keeping the last KEEP_BYTES."""

    def __init__(self, stream):
        super().__init__(daemon=True)
        self.stream, self.chunks, self.kept, self.dropped = stream, [], 0, 0

    def run(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            for chunk in iter(lambda: os.read(self.stream.fileno(), READ_CHUNK), b""):
                self.chunks.append(chunk)
                self.kept += len(chunk)
                while self.kept - len(self.chunks[0]) >= KEEP_BYTES:
                    self.kept -= len(self.chunks[0])
                    self.dropped += len(self.chunks.pop(0))

    def text(self) -> str:
        return b"".join(self.chunks).decode("utf-8", "replace")


def shell_command(command: str) -> list[str]:
    """`bash -c COMMAND`, in a pid namespace of its own where the machine allows one: whatever it leaves running
    ends with it. The file system and network stay as they are (the agent's commands build and test there)."""
    try:
        box = sandbox.current()
    except Exception:  # KS_SANDBOX naming a mode this machine lacks: the harness says so; bash runs as it may
        box = sandbox.Sandbox("none", "")
    return sandbox.wrap_shell(["bash", "-c", command], box)


def run_bash(command: str, cwd: Path, timeout_s: float, cancel: threading.Event | None = None) -> str:
    """Run COMMAND; a timeout or `cancel` (the session stopping) kills it and its children."""
    # A new session and process group, so a timeout kills the command's children too; the mark finds those that
    # left it.
    mark = new_mark()
    proc = subprocess.Popen(shell_command(command), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True,
                            env=marked_environ(mark, child_environ()))
    reader = _Drain(proc.stdout)
    reader.start()
    deadline = time.monotonic() + timeout_s
    status = None
    while status is None:
        try:
            proc.wait(timeout=max(0.0, min(POLL_S, deadline - time.monotonic())))
            status = f"exit code {proc.returncode}"
        except subprocess.TimeoutExpired:
            if cancel is not None and cancel.is_set():
                status = "killed: the session was stopped"
            elif time.monotonic() >= deadline:
                status = f"killed after {timeout_s:g} s (time limit)"
            if status is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    # A background job (`cmd &`, nohup, a daemon) would run on under the next measurement: none outlives its
    # command. Killing them also closes the output pipe they held.
    left = end_leftovers(proc.pid, mark)
    reader.join(timeout=DRAIN_S)
    if reader.is_alive():  # something not ours still holds the pipe (it scrubbed its environment and left);
        # the reader thread is left blocked on it (closing the fd under it could make it read another file)
        status += "; output cut: a process it started still held the output open"
    out = reader.text()
    if reader.dropped or len(out) > MAX_OUTPUT_CHARS:
        cut = reader.dropped + max(0, len(out) - MAX_OUTPUT_CHARS)
        out = f"[... first {cut} characters cut]\n" + out[-MAX_OUTPUT_CHARS:]
    if left:
        status += f"; killed {len(left)} process(es) it left running (pid {', '.join(map(str, left))})"
    return redact_text(f"{status}\n{out}")
