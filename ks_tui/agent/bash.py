"""The bash tool's runner: one command in the worktree, a time limit, output cut to size."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

from ks_tui.harness.leftovers import end_leftovers, marked_environ, new_mark

MAX_OUTPUT_CHARS = 20_000
POLL_S = 0.2


def run_bash(command: str, cwd: Path, timeout_s: float, cancel: threading.Event | None = None) -> str:
    """Run COMMAND; a timeout or `cancel` (the session stopping) kills it and its children."""
    # A new process group, so a timeout kills the command's children too; the mark finds those that left it.
    mark = new_mark()
    proc = subprocess.Popen(["bash", "-c", command], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, text=True, errors="replace", start_new_session=True,
                            env=marked_environ(mark))
    deadline = time.monotonic() + timeout_s
    status = None
    while status is None:
        try:
            out, _ = proc.communicate(timeout=max(0.0, min(POLL_S, deadline - time.monotonic())))
            status = f"exit code {proc.returncode}"
        except subprocess.TimeoutExpired:  # communicate may be called again: output is kept
            if cancel is not None and cancel.is_set():
                status = "killed: the session was stopped"
            elif time.monotonic() >= deadline:
                status = f"killed after {timeout_s:g} s (time limit)"
            if status is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                out, _ = proc.communicate()
    # A background job (`cmd &`, nohup, a daemon) would run on under the next measurement: none outlives its command.
    left = end_leftovers(proc.pid, mark)
    if len(out) > MAX_OUTPUT_CHARS:
        out = f"[... first {len(out) - MAX_OUTPUT_CHARS} characters cut]\n" + out[-MAX_OUTPUT_CHARS:]
    if left:
        status += f"; killed {len(left)} process(es) it left running (pid {', '.join(map(str, left))})"
    return f"{status}\n{out}"
