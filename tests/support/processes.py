"""Waiting for a process to end, as tests of killed kernels and commands need."""

from __future__ import annotations

import time
from pathlib import Path


def gone(pid: int) -> bool:
    """PID has ended: no such process, or a zombie waiting for its parent (it runs no more)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def wait_gone(pid: int, timeout: float = 15.0) -> bool:
    """True once PID has ended (an orphan is reaped by init a moment after a kill), False after TIMEOUT seconds
    (generous: on a loaded machine a killed process can take seconds to end)."""
    deadline = time.monotonic() + timeout
    while not gone(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
