"""The session trace: `sessions/<id>/trace.jsonl`, one JSON object per line.

Each line is {"time": ISO-8601 UTC, "kind": str, "payload": {...}}. Every append is flushed
and fsync'd before it returns, so a session killed at any moment keeps every event it had
finished writing. The only damage a kill can do is a torn *last* line: the reader skips it,
and the next writer moves it aside (to trace.jsonl.torn) before appending, so a torn line
never ends up in the middle of the file.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ks_tui.errors import InputFileError
from ks_tui.harness.secret_env import redact_text


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class Trace:
    """Append-only JSONL log of one session's events."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._checked_tail = False

    def append(self, kind: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
        record = {"time": _now(), "kind": kind, "payload": payload if payload is not None else {}}
        # No credential goes into the trace, whoever printed it (a kernel, a command, an error message).
        line = redact_text(json.dumps(record, ensure_ascii=False, default=str)) + "\n"
        if not self._checked_tail:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._set_aside_torn_tail()
            self._checked_tail = True
        # O_APPEND keeps concurrent writers' lines whole (each line is one write call).
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        return record

    def _set_aside_torn_tail(self) -> None:
        """A last line without its newline is a write that never finished: keep it apart."""
        try:
            with open(self.path, "rb+") as f:
                size = f.seek(0, os.SEEK_END)
                if size == 0:
                    return
                f.seek(size - 1)
                if f.read(1) == b"\n":
                    return
                # Find where the torn line starts (after the last newline).
                chunk = 4096
                pos = size
                start = 0
                while pos > 0:
                    step = min(chunk, pos)
                    pos -= step
                    f.seek(pos)
                    block = f.read(step)
                    nl = block.rfind(b"\n")
                    if nl >= 0:
                        start = pos + nl + 1
                        break
                f.seek(start)
                torn = f.read()
                if _whole_event(torn):  # only its newline is missing (written by hand, say): keep it
                    f.seek(0, os.SEEK_END)
                    f.write(b"\n")
                    f.flush()
                    os.fsync(f.fileno())
                    return
                with open(self.path.with_name(self.path.name + ".torn"), "ab") as side:
                    side.write(torn + b"\n")
                    side.flush()
                    os.fsync(side.fileno())
                f.truncate(start)
                f.flush()
                os.fsync(f.fileno())
        except FileNotFoundError:
            return

    @staticmethod
    def read(path: str | os.PathLike) -> list[dict[str, Any]]:
        """All complete events, oldest first. A torn last line is skipped; a bad line
        elsewhere is real damage and is reported with its line number."""
        path = Path(path)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return []
        lines = data.split(b"\n")
        events: list[dict[str, Any]] = []
        last = len(lines) - 1
        for i, raw in enumerate(lines):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
                problem = _not_an_event(obj)
                if problem:
                    raise ValueError(problem)
                obj.setdefault("payload", {})
            except (ValueError, UnicodeDecodeError) as e:
                if i == last:  # no newline after it: a write cut short by a kill
                    break
                raise InputFileError(path, f"trace line is not a JSON event ({e})", line=i + 1) from None
            events.append(obj)
        return events


def _not_an_event(obj: Any) -> str:
    """Why a parsed line is not a trace event ("" when it is one)."""
    if not isinstance(obj, dict) or not isinstance(obj.get("kind"), str):
        return "not an event object"
    if not isinstance(obj.get("payload", {}), dict):
        return "its payload is not an object"
    return ""


def _whole_event(raw: bytes) -> bool:
    try:
        return not _not_an_event(json.loads(raw))
    except (ValueError, UnicodeDecodeError):
        return False
