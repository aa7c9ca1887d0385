"""The history screen: every attempt of the session, its diff and per-scenario results.

Under the table, `ks log`'s lines on the plateau: the last real gain and, when the best mark sits
on a run that was no gain, by how much it leads. Enter or moving the cursor shows an attempt, its
whole summary and its remarks; `m` adds a remark to it (as `ks remark` does); `r` rolls back to it
after a confirmation (a new attempt, history kept); `c` marks one attempt and, pressed again on
another, shows the diff between the two; `d` switches the diff base between previous and best.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on, work
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static
from textual.worker import get_current_worker

from ks_tui import best_rule
from ks_tui.app import formatting as fmt
from ks_tui.app import keymap as km
from ks_tui.app.screens.confirm import ConfirmScreen
from ks_tui.app.screens.remark import RemarkScreen
from ks_tui.app.widgets.bench.bench_panel import headline
from ks_tui.app.widgets.bench.bench_table import BenchTable
from ks_tui.app.widgets.diff.diff_view import DiffView
from ks_tui.app.widgets.tables import fill_table
from ks_tui.attempts.model import short_device
from ks_tui.attempts.remarks import remark_text

NARROW_WIDTH = 100
SUMMARY_CHARS = 60  # the table's summary column; a longer one is shown whole under the results
QUESTION_CHARS = 24  # the question column; the whole question is shown under the results


class AttemptList(Message):
    def __init__(self, attempts: list[dict[str, Any]], plateau: list[str] | None = None):
        super().__init__()
        self.attempts = attempts
        self.plateau = plateau or []  # `ks log`'s lines under its table (the last gain, the best's lead)


class AttemptDetail(Message):
    def __init__(self, number: int, title: str, diff: str, result: dict[str, Any] | None,
                 profile: dict[str, Any] | None = None):
        super().__init__()
        self.number, self.title, self.diff, self.result = number, title, diff, result
        self.profile = profile or {}  # `ks profile N` summaries kept with the attempt


ATTEMPT_COLUMNS = [(label, label) for label in
                   ("#", "time", "author", "status", "correct", "speedup", "question", "summary")]


def latest_device(attempts: list[dict[str, Any]]) -> str:
    """The machine the session measures on now (best_rule.latest_device, over attempt dicts)."""
    return best_rule.latest_device((a.get("device") or "", a.get("rollback_of") is None) for a in attempts)


def attempt_cells(a: dict[str, Any], here: str = "", devices: tuple[str, ...] = ()) -> list[Text]:
    """One row; `here`: the session's current device (a run measured on another one says where, its name
    shortened against the session's `devices` as `ks log` does)."""
    status = a.get("status", "?")
    best = bool(a.get("best"))
    sp = a.get("speedup")
    question = a.get("question") or ""
    if a.get("rollback_of"):
        question = f"rollback of #{a['rollback_of']}"
    return [
        Text(f"{'★' if best else ' '}{a.get('number')}", style="bold magenta" if best else "bold"),
        Text(fmt.clock(a.get("time"))),
        Text(a.get("author", "?"), style="cyan" if a.get("author") == "human" else ""),
        Text(status, style=fmt.STATUS_STYLE.get(status, "")),
        Text(a.get("correct", "") or "—"),
        Text(fmt.speedup(sp), justify="right",
             style="bold magenta" if best else ("red" if sp is not None and sp < 1 else "")),
        Text(fmt.one_line(question, QUESTION_CHARS) if question else "—", style="dim" if not question else ""),
        Text(("✎ " if a.get("remarks") else "") + (f"[on {short_device(a['device'], devices)}] "
                                                    if here and a.get("device") and a["device"] != here else "")
             + fmt.one_line(a.get("summary", "") or "", SUMMARY_CHARS), style="dim"),
    ]


def notes_view(attempt: dict[str, Any] | None) -> Text:
    """The attempt's whole summary when the table's column cuts it, then the remarks added
    after the fact (`ks remark`), one line each."""
    attempt = attempt or {}
    text = Text(overflow="fold")
    for r in attempt.get("remarks") or []:  # first: a correction matters more than the summary
        text.append("\n" if text.plain else "")
        text.append("✎ ", "yellow")
        text.append(remark_text(r))
    question = attempt.get("question") or ""
    if len(question) > QUESTION_CHARS and not attempt.get("rollback_of"):
        text.append("\n" if text.plain else "")
        text.append(f"question: {question}", "dim")
    whole = attempt.get("description") or attempt.get("summary") or ""
    if len(whole) > SUMMARY_CHARS:
        text.append("\n" if text.plain else "")
        text.append(whole, "dim")
    return text


class HistoryScreen(Screen):
    CSS_PATH = Path(__file__).with_name("history.tcss")
    BINDINGS = km.bindings(km.HISTORY_KEYS)

    def __init__(self, backend, **kwargs):
        super().__init__(**kwargs)
        self.backend = backend
        self.attempts: list[dict[str, Any]] = []
        self.base: str = "previous"
        self.compare_from: int | None = None
        self.selected: int | None = None
        self.session_label = backend.session_id  # what the title calls the session

    def compose(self):
        yield Static(self._title(), id="history-title")
        table = DataTable(id="attempts", cursor_type="row", zebra_stripes=True)
        yield table
        yield Static("", id="history-plateau")
        with Horizontal(id="history-detail"):
            with Vertical(id="history-diff-panel", classes="panel -current"):
                yield DiffView("Select an attempt.", id="history-diff")
            with Vertical(id="history-results-panel", classes="panel"):
                yield Static("", id="history-headline")
                with VerticalScroll(id="history-notes-box", can_focus=True):  # long notes scroll
                    yield Static("", id="history-notes")
                yield BenchTable(id="history-results")
        yield Footer(compact=True)

    def _title(self) -> Text:
        t = Text()
        t.append("History", "bold")
        t.append(f" · {self.backend.task_name} · session {self.session_label}")
        if self.compare_from is not None:
            t.append(f" · comparing from #{self.compare_from}: pick another and press c", "yellow")
        return t

    def on_mount(self) -> None:
        table = self.query_one("#attempts", DataTable)
        fill_table(table, ATTEMPT_COLUMNS, [])
        self.query_one("#history-diff-panel").border_title = "Diff"
        self.query_one("#history-results-panel").border_title = "Results"
        self._set_narrow(self.size.width < NARROW_WIDTH)
        table.focus()
        self.reload()

    def on_resize(self, event) -> None:
        narrow = event.size.width < NARROW_WIDTH
        if narrow != self.has_class("-narrow"):
            self._set_narrow(narrow)
            self.refresh_bindings()

    def _set_narrow(self, narrow: bool) -> None:
        self.set_class(narrow, "-narrow")
        self.query_one(Footer).show_command_palette = not narrow  # 80 columns: the keys, `q Quit` included

    def check_action(self, action: str, parameters) -> bool | None:
        if action == "toggle_detail":
            return self.has_class("-narrow")  # both are on screen when wide
        return True

    # ---- loading ---------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="history-list", exit_on_error=False,
          description="reading attempts")
    def reload(self) -> None:
        self.post_message(AttemptList(*self.backend.history()))

    @on(AttemptList)
    def _show_list(self, message: AttemptList) -> None:
        self.attempts = message.attempts
        table = self.query_one("#attempts", DataTable)
        keep = self.selected
        here = latest_device(self.attempts)
        devices = tuple(sorted({a.get("device") for a in self.attempts if a.get("device")}))
        fill_table(table, ATTEMPT_COLUMNS, [(str(a.get("number")), attempt_cells(a, here, devices))
                                            for a in self.attempts])
        plateau = self.query_one("#history-plateau", Static)
        plateau.update(Text("\n".join(message.plateau), style="dim"))
        plateau.display = bool(message.plateau)
        if not self.attempts:
            self.query_one("#history-diff", DiffView).show_message("No attempts in this session yet.")
            return
        numbers = [a.get("number") for a in self.attempts]
        row = numbers.index(keep) if keep in numbers else len(numbers) - 1
        table.move_cursor(row=row)
        self._select(numbers[row])

    @on(DataTable.RowHighlighted, "#attempts")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key is not None and event.row_key.value is not None:
            self._select(int(event.row_key.value))

    def _select(self, number: int, against: str | int | None = None) -> None:
        self.selected = number
        self._load_detail(number, self.base if against is None else against)

    @work(thread=True, exclusive=True, group="history-detail", exit_on_error=False,
          description="reading an attempt")
    def _load_detail(self, number: int, against: str | int) -> None:
        from ks_tui.errors import KsError

        try:
            diff = self.backend.diff(number, against)
        except KsError as e:  # e.g. no correct attempt to be "best" yet
            diff = f"# {e.message}"
        result = self.backend.result(number)
        profile = self.backend.profile(number) if hasattr(self.backend, "profile") else {}
        if get_current_worker().is_cancelled:
            return
        base = f"#{against}" if isinstance(against, int) else against
        self.post_message(AttemptDetail(number, f"Diff · #{number} vs {base}", diff, result, profile))

    @on(AttemptDetail)
    def _show_detail(self, message: AttemptDetail) -> None:
        if message.number != self.selected:
            return  # the cursor moved on while this was loading
        self.query_one("#history-diff-panel").border_title = message.title
        self.query_one("#history-diff", DiffView).show_diff(message.diff)
        result = message.result or {}
        self.query_one("#history-results-panel").border_title = f"Results · #{message.number}"
        self.query_one("#history-headline", Static).update(headline(result) if result else "")
        notes = notes_view(next((a for a in self.attempts if a.get("number") == message.number), None))
        if message.profile:
            from ks_tui.harness.profile import summary_lines

            notes.append("\n" if notes.plain else "")
            notes.append("\n".join(summary_lines(message.profile)), "cyan")
        shown = self.query_one("#history-notes", Static)
        shown.update(notes)
        shown.display = bool(notes.plain)
        self.query_one("#history-notes-box").display = bool(notes.plain)
        self.query_one("#history-results", BenchTable).show_scenarios(result.get("scenarios") or [])

    def on_worker_state_changed(self, event) -> None:
        self.app.report_worker_error(event)  # a screen's workers do not bubble to the app

    # ---- actions -----------------------------------------------------------------------

    def action_toggle_base(self) -> None:
        self.base = "best" if self.base == "previous" else "previous"
        if self.selected is not None:
            self._select(self.selected)

    def action_toggle_detail(self) -> None:
        for panel in self.query(".panel"):
            panel.toggle_class("-current")

    def action_compare(self) -> None:
        if self.selected is None:
            return
        if self.compare_from is None or self.compare_from == self.selected:
            self.compare_from = self.selected
            self.notify(f"attempt #{self.selected} marked; move to another and press c", timeout=3)
        else:
            first, self.compare_from = self.compare_from, None
            self._select(self.selected, against=first)
        self.query_one("#history-title", Static).update(self._title())

    def action_remark(self) -> None:
        number = self.selected
        if number is None:
            return
        attempt = next((a for a in self.attempts if a.get("number") == number), {})

        def given(text: str | None) -> None:
            if text:
                self._remark(number, text)

        self.app.push_screen(RemarkScreen(number, fmt.one_line(attempt.get("summary", "") or "", 50)), given)

    @work(thread=True, exclusive=True, group="history-remark", exit_on_error=False, description="remark")
    def _remark(self, number: int, text: str) -> None:
        self.backend.remark(number, text)
        self.reload()

    def action_rollback(self) -> None:
        number = self.selected
        if number is None:
            return
        latest = self.attempts[-1].get("number") if self.attempts else None
        if number == latest:
            self.notify("that is already the latest attempt", severity="warning")
            return

        def confirmed(yes: bool | None) -> None:
            if yes:
                self._rollback(number)

        self.app.push_screen(ConfirmScreen(
            f"Roll back to attempt #{number}?\nA new attempt will hold its kernel; nothing is deleted.",
            yes="Roll back"), confirmed)

    @work(thread=True, exclusive=True, group="history-rollback", exit_on_error=False,
          description="rollback")
    def _rollback(self, number: int) -> None:
        self.backend.rollback(number)  # the engine does it at its next safe point
        self.app.call_from_thread(self.app.notify, f"rolling back to attempt #{number}", timeout=3)
        # The cursor stays on the attempt rolled back to (the new one copies it): a remark typed next is
        # about the attempt the person chose, so the list is read again without moving the selection.
        self.reload()
