"""Scratch folders of runs whose owner was killed: swept once they are old.

Each run keeps its files in a temporary folder (`ks-harness-*`: the child's result and temporary files;
`ks-job-*`: a cluster job's copy of the task and source) that its process removes at the end. A process
killed with SIGKILL (a Dask worker the nanny replaces, an OOM kill, a preempted box) removes nothing,
and on a machine that pairs for hours such folders pile up in /tmp. No run lives for a day (the harness
times every run out, by default after minutes), so a folder of ours untouched for that long has no owner.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import time
from pathlib import Path

PREFIXES = ("ks-harness-", "ks-job-")
STALE_AFTER_S = 24 * 3600


def sweep_stale(root: Path | None = None, older_than_s: float = STALE_AFTER_S, now: float | None = None) -> list[Path]:
    """Remove this user's run folders in root (the temporary folder) not modified for older_than_s; returns them.
    Never raises: another user's folder, or one removed meanwhile, is left to its fate."""
    root = Path(root if root is not None else tempfile.gettempdir())
    now = time.time() if now is None else now
    removed = []
    for prefix in PREFIXES:
        try:
            folders = list(root.glob(f"{prefix}*"))
        except OSError:
            continue
        for folder in folders:
            try:
                st = folder.lstat()  # a link is not a folder here: never followed
            except OSError:
                continue
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or now - st.st_mtime < older_than_s:
                continue
            shutil.rmtree(folder, ignore_errors=True)
            if not folder.exists():
                removed.append(folder)
    return removed


_swept = False


def sweep_once() -> None:
    """sweep_stale() the first time a process asks (each run would glob /tmp again for nothing)."""
    global _swept
    if not _swept:
        _swept = True
        sweep_stale()
