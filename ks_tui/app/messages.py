"""Messages that travel up from widgets and workers to the screens and the app."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual.message import Message


class EventsWaiting(Message):
    """The event pump holds engine events for the UI to drain."""


@dataclass
class QuestionAnswered(Message):
    """The human picked a ranked question, typed their own, or skipped (both None)."""

    question_id: str | None
    text: str | None


@dataclass
class AttemptsLoaded(Message):
    """A worker read the session's attempts (Attempt.to_dict() each, oldest first)."""

    attempts: list[dict[str, Any]]
    latest_result: dict[str, Any] | None
    best: int | None = None    # the log view's best attempt


@dataclass
class DiffLoaded(Message):
    """A worker computed a diff for the main screen's Diff panel."""

    text: str
    title: str
    note: str = ""  # shown instead of a diff (e.g. no best attempt yet)


@dataclass
class SessionReady(Message):
    """A worker opened a session; `backend` is a ks_tui.app.backend.Backend."""

    backend: Any
