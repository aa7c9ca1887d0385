"""Carries engine events from whatever thread emits them to the UI, in batches.

The engine calls `EventPump.push` from its own thread (or the UI's). Events queue up and
the UI is told once that some are waiting; when it drains them, runs of text deltas and
harness progress are folded together, so a fast token stream or a chatty benchmark costs
one redraw per batch instead of one per event.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from ks_tui.events import Event, HarnessProgress, TextDelta, ThinkingDelta


def coalesce(events: list[Event]) -> list[Event]:
    """Merge adjacent text (or thinking) deltas into one and keep only the last of adjacent progress events
    (of each cluster worker: every worker's line stays on the screen)."""
    merged: list[Event] = []
    for event in events:
        last = merged[-1] if merged else None
        if type(event) in (TextDelta, ThinkingDelta) and type(last) is type(event):
            merged[-1] = type(event)(text=last.text + event.text)
        elif isinstance(event, HarnessProgress) and isinstance(last, HarnessProgress) and last.worker == event.worker:
            merged[-1] = event
        else:
            merged.append(event)
    return merged


class EventPump:
    """Thread-safe queue with a single wake-up per batch."""

    def __init__(self, wake: Callable[[], None]):
        self._wake = wake
        self._lock = threading.Lock()
        self._queue: list[Event] = []
        self._wake_pending = False

    def push(self, event: Event) -> None:
        with self._lock:
            self._queue.append(event)
            if self._wake_pending:
                return
            self._wake_pending = True
        self._wake()

    def drain(self) -> list[Event]:
        with self._lock:
            batch, self._queue = self._queue, []
            self._wake_pending = False
        return coalesce(batch)
