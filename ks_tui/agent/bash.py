"""The bash tool's runner: one command in the worktree, a time limit, output cut to size."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

MAX_OUTPUT_CHARS = 20_000


def run_bash(command: str, cwd: Path, timeout_s: float) -> str:
    # A new process group, so a timeout kills the command's children too.
    proc = subprocess.Popen(["bash", "-c", command], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, text=True, errors="replace", start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout_s)
        status = f"exit code {proc.returncode}"
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        status = f"killed after {timeout_s:g} s (time limit)"
    if len(out) > MAX_OUTPUT_CHARS:
        out = f"[... first {len(out) - MAX_OUTPUT_CHARS} characters cut]\n" + out[-MAX_OUTPUT_CHARS:]
    return f"{status}\n{out}"
