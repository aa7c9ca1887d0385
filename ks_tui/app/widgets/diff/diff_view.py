"""The Diff panel: a unified diff of the kernel, highlighted, in a scrollable view."""

from __future__ import annotations

import re

from rich.syntax import Syntax
from rich.text import Text
from textual.containers import ScrollableContainer
from textual.widgets import Static

# C0 controls but tab and newline, DEL, and C1: a terminal acts on them (a carriage return or an escape
# sequence inside a kernel's comment would move the cursor and break the panel's border).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """`text` safe to draw: bytes that were not UTF-8 (git's output keeps them as surrogate escapes)
    become U+FFFD, and control characters their caret form (^M, ^[) in place."""
    try:
        text = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:  # a surrogate that stands for no byte
        text = text.encode("utf-8", "replace").decode("utf-8")
    return _CONTROL.sub(lambda m: f"^{chr(ord(m.group()) ^ 0x40)}" if ord(m.group()) < 0x80 else "\ufffd", text)


def hunks_only(diff: str) -> str:
    """Drop git's file header (diff --git, index, ---/+++): one file, so it says nothing."""
    lines = diff.split("\n")  # not splitlines: a carriage return inside a line is that line's
    for i, line in enumerate(lines):
        if line.startswith("@@"):
            return "\n".join(lines[i:])
    return diff


class DiffView(ScrollableContainer, can_focus=True):
    DEFAULT_CSS = """
    DiffView { height: 1fr; }
    DiffView > Static { width: auto; }
    """

    def __init__(self, placeholder: str = "No attempt yet.", **kwargs):
        super().__init__(**kwargs)
        self._placeholder = placeholder
        self._body = Static(Text(placeholder, style="dim"))

    def compose(self):
        yield self._body

    def show_diff(self, diff: str) -> None:
        if not diff.strip():
            self._body.update(Text("No change in the kernel.", style="dim"))
        else:
            # The diff lexer colours +/- lines and hunk headers; a fixed theme keeps snapshots stable.
            self._body.update(Syntax(hunks_only(printable(diff)), "diff", theme="monokai", background_color="default",
                                     word_wrap=False))
        self.scroll_home(animate=False)

    def show_message(self, message: str, style: str = "dim") -> None:
        self._body.update(Text(printable(message), style=style))
