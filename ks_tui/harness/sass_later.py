"""The SASS summary of a fresh CUDA build, made while the kernel is checked instead of before.

`cuobjdump --dump-sass` over a big library and the opcode count take seconds, and nothing in the
check needs them. So build(..., sass_later=True) publishes the library with the summary pending,
the runner starts it here on a thread once the library is loaded, and joins it before the result is
written: the result's `compile.sass` is the same as before, and the cached record is completed too
(a run killed before that leaves it pending, and the next cache hit makes it). Standard library only.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from pathlib import Path

PENDING = "pending"  # compile.sass_reason while the summary is being made


class SassJob:
    def __init__(self, record: dict, lib_path: Path):
        self.record, self.lib_path = record, Path(lib_path)
        self.seconds = 0.0
        self._value: tuple[dict | None, str | None] = (None, "SASS summary not made")
        self._thread = threading.Thread(target=self._work, name="ks-sass", daemon=True)
        self._thread.start()

    def _work(self) -> None:
        from ks_tui.harness.build import sass_summary

        t0 = time.monotonic()
        try:
            self._value = sass_summary(self.lib_path)
        except Exception as e:  # a summary is information, never a verdict
            self._value = (None, f"SASS summary failed: {type(e).__name__}: {e}")
        self.seconds = time.monotonic() - t0

    def finish(self, timings: dict | None = None) -> None:
        """Wait for the summary, put it on the record, and complete the cached record."""
        t0 = time.monotonic()
        self._thread.join()
        self.record["sass"], self.record["sass_reason"] = self._value
        if timings is not None:
            timings["sass_s"] = round(self.seconds, 4)
            timings["sass_wait_s"] = round(time.monotonic() - t0, 4)
        _rewrite(self.lib_path.parent / "compile.json", self._value)


def start(record: dict | None, lib_path: Path | None) -> SassJob | None:
    """A job for a record whose summary is pending (a fresh build, or a cached one a killed run left so)."""
    if not record or lib_path is None or record.get("sass_reason") != PENDING:
        return None
    return SassJob(record, lib_path)


def _rewrite(path: Path, value: tuple) -> None:
    """The cached record with the summary, written atomically; a cache that went away is no error."""
    try:
        cached = json.loads(path.read_text())
        cached["sass"], cached["sass_reason"] = value
        fd, tmp = tempfile.mkstemp(prefix=".compile-", dir=path.parent)
        with os.fdopen(fd, "w") as f:
            json.dump(cached, f)
        os.replace(tmp, path)
    except (OSError, ValueError):
        pass
