"""The Agent panel: the conversation as it streams — user turns, assistant text, tool calls
and a one-line summary of each tool result.

Text deltas extend the current assistant entry in place; the event pump has already joined
runs of deltas, so each batch is one update. Old entries are dropped past a cap so a
session of hours keeps a bounded widget tree.
"""

from __future__ import annotations

import json
from typing import Any

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from ks_tui.app.formatting import one_line

MAX_ENTRIES = 400


class Entry(Static):
    DEFAULT_CSS = """
    Entry { height: auto; margin-bottom: 0; }
    Entry.user { color: $text; text-style: bold; }
    Entry.assistant { color: $text; }
    Entry.tool { color: $text-muted; }
    Entry.error { color: $error; }
    Entry.note { color: $text-muted; text-style: italic; }
    """


def tool_call_text(name: str, args: dict[str, Any]) -> Text:
    """`▸ edit_file(path=kernel.cpp, old_string=…)`: the call, arguments cut short."""
    shown = []
    for key, value in args.items():
        rendered = value if isinstance(value, str) else json.dumps(value)
        shown.append(f"{key}={one_line(str(rendered), 24)}")
    text = Text("▸ ", "cyan")
    text.append(name, "bold cyan")
    text.append(f"({', '.join(shown)})", "cyan")
    return text


class Conversation(VerticalScroll, can_focus=True):
    DEFAULT_CSS = """
    Conversation { height: 1fr; }
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._streaming: Entry | None = None
        self._streamed = ""
        self._thinking: Entry | None = None
        self._thinking_text = ""

    def on_mount(self) -> None:
        self.anchor()  # stay at the bottom while new text arrives, until the user scrolls

    def _add(self, content, cls: str) -> Entry:
        entry = Entry(content, classes=cls)
        self.mount(entry)
        extra = len(self.children) - MAX_ENTRIES
        if extra > 0:
            for old in list(self.children)[:extra]:
                old.remove()
        return entry

    def user(self, text: str, source: str) -> None:
        self._end_stream()
        label = {"question": "question", "system": "system"}.get(source, "you")
        t = Text(f"{label}: ", "bold yellow" if source == "question" else "bold")
        t.append(text)
        self._add(t, "user")

    def delta(self, text: str) -> None:
        self._thinking = None
        self._streamed += text
        if self._streaming is None:
            self._streaming = self._add(Text(self._streamed), "assistant")
        else:
            self._streaming.update(Text(self._streamed))

    def thinking(self, text: str) -> None:
        """Visible thinking streams into its own dim entry, ended by the next text or tool."""
        if self._thinking is None:
            self._thinking_text = ""
            self._thinking = self._add("", "note")
        self._thinking_text += text
        self._thinking.update(Text(self._thinking_text, style="dim italic"))

    def assistant(self, text: str) -> None:
        """The finished block replaces what streamed (they match unless deltas were lost)."""
        if self._streaming is not None:
            self._streaming.update(Text(text))
            self._streaming = None
            self._streamed = ""
        else:
            self._add(Text(text), "assistant")

    def tool_call(self, name: str, args: dict[str, Any]) -> None:
        self._end_stream()
        self._add(tool_call_text(name, args), "tool")

    def tool_result(self, name: str, output: str, is_error: bool) -> None:
        t = Text("  ↳ ", "dim")
        t.append(one_line(output, 200) or "(no output)", "red" if is_error else "dim")
        self._add(t, "error" if is_error else "tool")

    def note(self, text: str, error: bool = False) -> None:
        self._end_stream()
        self._add(Text(text), "error" if error else "note")  # plain text: never markup

    def _end_stream(self) -> None:
        self._thinking = None
        self._streaming = None
        self._streamed = ""
