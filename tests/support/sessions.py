"""Starting an engine Session for a test, the way `ks run --autonomous` does."""

from __future__ import annotations

from pathlib import Path

from ks_tui import events as ev
from ks_tui.config import load_config
from ks_tui.engine import Session


def autonomous_session(ws: Path, max_turns: int, sid: str | None = None, **over) -> tuple[Session, list[ev.Event]]:
    """A new attention_cpu session in `ws` (or session `sid` resumed), autonomous with nobody at
    the screen, config overrides `over`; returns it and the list its events are appended to."""
    cfg = load_config(ws).with_overrides(max_turns=max_turns, **over)
    kw = dict(autonomous=True, human_present=False)
    session = Session.open(ws, sid, cfg, **kw) if sid else Session.create(ws, "attention_cpu", cfg, **kw)
    seen: list[ev.Event] = []
    session.subscribe(seen.append)
    return session, seen
