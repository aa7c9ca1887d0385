"""Every key of the screen in one table: key, action, footer text, whether the footer shows it, and
whether it needs an open session. The app and the screens build their BINDINGS from here, the command
palette lists the app's entries, and docs/tui.md's key table follows it.

Each entry has a binding id, so a user can move it to another key: the config file's `[keymap]` table
maps ids to keys (`run = "ctrl+r"`), applied with Textual's App.set_keymap. Entries that share a key
share an id (`p` pauses or resumes; `r` and `R` each have two labels, one per run plan) and move together.

`needs_session`: what the key does goes to the session (the engine or its attempt store). Pressed while
the session is still opening, the app keeps it and carries it out once the session is open (`a` opens
its input at once; the question waits); with no session at all, it says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.binding import Binding


@dataclass(frozen=True)
class Key:
    id: str             # the binding id: what a `[keymap]` entry names
    key: str            # Textual key names, comma-separated for several
    action: str         # the action string, parameters included
    description: str    # the footer's text
    show: bool = True   # in the footer (check_action may still hide it)
    needs_session: bool = False
    palette: str = ""   # the command palette's help line; "" keeps it out of the palette

    @property
    def action_name(self) -> str:
        return self.action.partition("(")[0]

    def binding(self) -> Binding:
        from textual.binding import Binding  # here, so `ks tui` checks a keymap before Textual loads

        return Binding(self.key, self.action, self.description, show=self.show, id=self.id)


# The app's keys, in footer order (after the screen's own, such as the main screen's `v View`). `q Quit`
# comes first: an 80-column footer cuts from the right, and quitting must stay in sight.
APP_KEYS: tuple[Key, ...] = (
    Key("quit", "q", "quit", "Quit"),
    Key("history", "h", "history", "History", needs_session=True, palette="Every attempt of the session"),
    Key("pause", "p", "pause", "Pause", palette="Stop the agent at its next safe point"),
    Key("pause", "p", "resume", "Resume", palette="Let the agent carry on"),
    Key("ask", "a", "ask", "Ask", needs_session=True, palette="Type a question for the agent"),
    # r and R: the run plan (ks_tui/run_plan.py) decides which is the quick subset; check_action shows
    # the entry whose label matches it, and the action runs what the plan says.
    Key("run", "r", "run('default', 'quick')", "Run quick", needs_session=True,
        palette="Check and time the kernel on the quick subset"),
    Key("run", "r", "run('default', 'full')", "Run full", needs_session=True,
        palette="Check and time the kernel on every scenario"),
    Key("run-other", "R", "run('other', 'full')", "Run full", needs_session=True,
        palette="Check and time the kernel on every scenario"),
    Key("run-other", "R", "run('other', 'full!')", "Run full ◀", needs_session=True,
        palette="Check and time the kernel on every scenario: the quick subset passed with a new best"),
    Key("run-other", "R", "run('other', 'quick')", "Run quick", needs_session=True,
        palette="Check and time the kernel on the quick subset"),
    Key("edit", "e", "edit_kernel", "Edit", needs_session=True,
        palette="Open the kernel in $VISUAL or $EDITOR; a change is run and recorded"),
    Key("diff-base", "d", "toggle_diff", "Diff base", palette="Latest vs previous or vs best"),
    Key("sessions", "o", "sessions", "Sessions", show=False, palette="Open another session"),
)

MAIN_KEYS: tuple[Key, ...] = (
    Key("view", "v", "cycle_panel", "View"),  # narrow layout only: next of Diff, Compile, Benchmark
)

HISTORY_KEYS: tuple[Key, ...] = (
    Key("history-back", "escape,h", "app.pop_screen", "Back"),
    Key("history-rollback", "r", "rollback", "Roll back"),
    Key("history-remark", "m", "remark", "Remark"),
    Key("history-compare", "c", "compare", "Compare"),
    Key("history-diff-base", "d", "toggle_base", "Diff base"),
    Key("history-detail", "t", "toggle_detail", "Diff/results"),  # narrow layout only
)

ALL_KEYS: tuple[Key, ...] = APP_KEYS + MAIN_KEYS + HISTORY_KEYS

NEEDS_SESSION: frozenset[str] = frozenset(k.action_name for k in APP_KEYS if k.needs_session)


def bindings(keys: tuple[Key, ...]) -> list[Binding]:
    return [k.binding() for k in keys]


def binding_ids() -> list[str]:
    return list(dict.fromkeys(k.id for k in ALL_KEYS))


def key_of(binding_id: str, keymap: dict[str, str] | None = None) -> str:
    """The key (the first, for several) that `binding_id` is on, after a user's keymap."""
    keys = (keymap or {}).get(binding_id) or next(k.key for k in ALL_KEYS if k.id == binding_id)
    return keys.split(",")[0].strip()


def check_keymap(keymap: dict[str, str]) -> str | None:
    """What is wrong with a user's keymap (one line), or None."""
    known = binding_ids()
    for binding_id, keys in keymap.items():
        if binding_id not in known:
            return f"unknown key binding id {binding_id!r} (known: {', '.join(known)})"
        if not isinstance(keys, str) or not all(part.strip() for part in keys.split(",")):
            return f"keymap entry {binding_id!r} must be a key name such as \"ctrl+r\" (several: \"f5,ctrl+r\")"
    return None
