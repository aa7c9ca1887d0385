"""A one-line text modal for a remark on an attempt; dismisses with the text, or None."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class RemarkScreen(ModalScreen[str | None]):
    CSS_PATH = Path(__file__).with_name("remark.tcss")
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, number: int, summary: str):
        super().__init__()
        self.number, self.summary = number, summary

    def compose(self):
        with Vertical(id="remark-box"):
            yield Static(Text(f"Remark on attempt #{self.number}: {self.summary}"), id="remark-title")
            yield Static("Kept beside the attempt (git notes); its commit and summary stay as they are. "
                         "Enter saves, Escape cancels.", id="remark-help")
            yield Input(placeholder="a correction, a re-measurement, what was learned", id="remark-input")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if not text:
            self.notify("a remark needs some text", severity="warning")
            return
        self.dismiss(text)

    def action_cancel(self) -> None:
        self.dismiss(None)
