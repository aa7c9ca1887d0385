"""The sessions picker: the workspace's sessions, most recent first; enter opens one.

Dismisses with the chosen session id, `None` for "new session" (n) or on cancel (esc,
reported as False so the app can tell the two apart).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on, work
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from ks_tui.app import formatting as fmt
from ks_tui.app.widgets.tables import fill_table


SESSION_COLUMNS = [(label, label) for label in ("session", "task", "attempts", "best", "last activity")]


class SessionRows(Message):
    def __init__(self, sessions: list[dict[str, Any]]):
        super().__init__()
        self.sessions = sessions


def session_fields(summary: Any) -> dict[str, Any]:
    """A SessionSummary or a dict, read as a plain dict."""
    if isinstance(summary, dict):
        return summary
    return summary.to_dict()


class SessionsScreen(ModalScreen):
    CSS_PATH = Path(__file__).with_name("sessions.tcss")
    BINDINGS = [
        Binding("escape", "cancel", "Cancel"),
        Binding("n", "new", "New session"),
    ]

    def __init__(self, opener, current: str | None = None):
        super().__init__()
        self.opener = opener
        self.current = current

    def compose(self):
        with Vertical(id="sessions-box"):
            yield Static("Sessions · enter opens · n new session · esc cancels", id="sessions-title")
            yield DataTable(id="sessions", cursor_type="row")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        fill_table(table, SESSION_COLUMNS, [])
        table.focus()
        self._load()

    @work(thread=True, exclusive=True, exit_on_error=False, description="listing sessions")
    def _load(self) -> None:
        rows = [session_fields(s) for s in self.opener.sessions()]
        rows.sort(key=lambda r: str(r.get("last_activity", "")), reverse=True)
        self.post_message(SessionRows(rows))

    def on_worker_state_changed(self, event) -> None:
        self.app.report_worker_error(event)  # a screen's workers do not bubble to the app

    @on(SessionRows)
    def _show(self, message: SessionRows) -> None:
        rows = []
        for row in message.sessions:
            sid = str(row.get("id"))
            best = row.get("best_speedup")
            rows.append((sid, [
                Text(("● " if sid == self.current else "  ") + sid, style="bold"),
                str(row.get("task", "")),
                str(row.get("attempts", "")),
                fmt.speedup(best) if best is not None else "—",
                fmt.clock(row.get("last_activity")),
            ]))
        fill_table(self.query_one(DataTable), SESSION_COLUMNS, rows)
        if not message.sessions:
            self.query_one("#sessions-title", Static).update("No sessions yet · n starts one · esc cancels")

    @on(DataTable.RowSelected)
    def _open(self, event: DataTable.RowSelected) -> None:
        self.dismiss(str(event.row_key.value))

    def action_new(self) -> None:
        self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(False)
