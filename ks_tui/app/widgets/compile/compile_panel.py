"""The Compile panel: the latest build's errors and resource use."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from ks_tui.app.widgets.compile.compile_report import compile_report


class CompilePanel(VerticalScroll, can_focus=True):
    DEFAULT_CSS = """
    CompilePanel { height: 1fr; }
    """

    def compose(self):
        yield Static(Text("Nothing built yet.", style="dim"), id="compile-body")

    def show_result(self, result: dict[str, Any]) -> None:
        self.query_one("#compile-body", Static).update(compile_report(result))
        self.scroll_home(animate=False)
