"""A yes/no modal; dismisses with True or False."""

from __future__ import annotations

from pathlib import Path

from textual.binding import Binding
from rich.text import Text
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static


class ConfirmScreen(ModalScreen[bool]):
    CSS_PATH = Path(__file__).with_name("confirm.tcss")
    BINDINGS = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n,escape", "answer(False)", "No"),
    ]

    def __init__(self, question: str, yes: str = "Yes", no: str = "No"):
        super().__init__()
        self.question = question
        self.yes, self.no = yes, no

    def compose(self):
        with Vertical(id="confirm-box"):
            with VerticalScroll(id="confirm-scroll"):  # a long command scrolls; the buttons stay
                yield Static(Text(self.question), id="confirm-question")
            with Horizontal(id="confirm-buttons"):
                yield Button(f"{self.yes} (y)", variant="error", id="confirm-yes")
                yield Button(f"{self.no} (n)", variant="primary", id="confirm-no")

    def on_mount(self) -> None:
        self.query_one("#confirm-no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "confirm-yes")

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)
