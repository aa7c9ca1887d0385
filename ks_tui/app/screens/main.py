"""The main screen: Diff, Compile, Benchmark, Questions and Agent panels under a status bar.

At 120x36 and larger the panels sit in a grid; below 100 columns or 30 rows the screen
switches to a narrow layout that shows one of Diff/Compile/Benchmark at a time, named in a tab
strip above it (`v` or a click switches), above the Questions and the Agent panels.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual import on, work
from textual.containers import Container, Vertical
from textual.screen import Screen
from textual.widgets import Footer, OptionList, Tab, Tabs
from textual.worker import get_current_worker

from ks_tui import events as ev
from ks_tui.app import keymap as km
from ks_tui.app.messages import AttemptsLoaded, DiffLoaded
from ks_tui.app.widgets.agent.conversation import Conversation
from ks_tui.app.widgets.bench.bench_panel import BenchPanel
from ks_tui.app.widgets.compile.compile_panel import CompilePanel
from ks_tui.app.widgets.diff.diff_view import DiffView
from ks_tui.app.widgets.questions.question_pane import QuestionPane
from ks_tui.app.widgets.status.status_bar import StatusBar

NARROW_WIDTH = 100
NARROW_HEIGHT = 30
TOP_PANELS = ("diff-panel", "compile-panel", "bench-panel")
TOP_NAMES = ("Diff", "Compile", "Benchmark")


class MainScreen(Screen):
    CSS_PATH = Path(__file__).with_name("main.tcss")
    BINDINGS = km.bindings(km.MAIN_KEYS)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.attempts: list[dict[str, Any]] = []
        self.best: int | None = None  # the attempt the log view marks best, as the engine or a reload told
        self.diff_base = "previous"  # or "best"
        self._top_panel = 0

    def compose(self):
        yield StatusBar(id="status")
        # The narrow layout's names of the three panels it shows one at a time.
        yield Tabs(*(Tab(name, id=f"tab-{panel}") for name, panel in zip(TOP_NAMES, TOP_PANELS)),
                   id="panel-tabs")
        with Container(id="panels"):
            with Vertical(id="diff-panel", classes="panel -current"):
                yield DiffView(id="diff")
            with Vertical(id="bench-panel", classes="panel"):
                yield BenchPanel(id="bench")
            with Vertical(id="questions-panel", classes="panel"):
                yield QuestionPane(id="questions")
            with Vertical(id="compile-panel", classes="panel"):
                yield CompilePanel(id="compile")
            with Vertical(id="agent-panel", classes="panel"):
                yield Conversation(id="conversation")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#diff-panel").border_title = "Diff"
        self.query_one("#compile-panel").border_title = "Compile"
        self.query_one("#bench-panel").border_title = "Benchmark"
        self.query_one("#questions-panel").border_title = "Questions"
        self.query_one("#agent-panel").border_title = "Agent"
        self._set_diff_title()
        self.query_one("#panel-tabs", Tabs).can_focus = False  # v and clicks switch it; tab skips it
        self._apply_size(self.size.width, self.size.height)
        self.query_one(Conversation).focus()

    def on_resize(self, event) -> None:
        self._apply_size(event.size.width, event.size.height)

    def _apply_size(self, width: int, height: int) -> None:
        narrow = width < NARROW_WIDTH or height < NARROW_HEIGHT
        if narrow != self.has_class("-narrow"):
            self.set_class(narrow, "-narrow")
            # The grid places Compile after Questions; stacked, it belongs with Diff and Benchmark on top.
            panels, compile_panel = self.query_one("#panels"), self.query_one("#compile-panel")
            questions = self.query_one("#questions-panel")
            if narrow:
                panels.move_child(compile_panel, before=questions)
            else:
                panels.move_child(compile_panel, after=questions)
            # 80 columns hold every key but not the palette's hint too (ctrl+p still opens it).
            self.query_one(Footer).show_command_palette = not narrow
            self.refresh_bindings()

    def action_cycle_panel(self) -> None:
        self.query_one("#panel-tabs", Tabs).active = f"tab-{TOP_PANELS[(self._top_panel + 1) % len(TOP_PANELS)]}"

    @on(Tabs.TabActivated, "#panel-tabs")
    def _tab_activated(self, event: Tabs.TabActivated) -> None:
        panel = (event.tab.id or "").removeprefix("tab-")
        if panel not in TOP_PANELS:
            return
        self._top_panel = TOP_PANELS.index(panel)
        for panel_id in TOP_PANELS:
            self.query_one(f"#{panel_id}").set_class(panel_id == panel, "-current")

    def check_action(self, action: str, parameters) -> bool | None:
        if action == "cycle_panel":
            return self.has_class("-narrow")  # in the footer only when it does something
        return True

    # ---- events from the engine -------------------------------------------------------

    def apply(self, batch: list[ev.Event]) -> None:
        for event in batch:
            handler = getattr(self, f"_on_{event.kind}", None)
            if handler is not None:
                handler(event)

    def _on_state(self, e: ev.StateChanged) -> None:
        was_human = self.query_one(StatusBar).info.state == "human"
        self.query_one(StatusBar).update_info(state=e.state)
        if e.state == "human" and not was_human and e.detail in ("started", "resumed"):
            self.query_one(QuestionPane).set_human(True)
            self.query_one(Conversation).note(
                f"session {e.detail} in human mode (no agent): e edits the kernel, r runs the harness, "
                "h shows the history; questions from the bank appear after attempts")
        elif e.detail and e.state in ("paused", "stopped"):
            self.query_one(Conversation).note(e.detail)

    def _on_user_message(self, e: ev.UserMessage) -> None:
        self.query_one(Conversation).user(e.text, e.source)

    def _on_text_delta(self, e: ev.TextDelta) -> None:
        self.query_one(Conversation).delta(e.text)

    def _on_assistant_text(self, e: ev.AssistantText) -> None:
        self.query_one(Conversation).assistant(e.text)

    def _on_tool_call(self, e: ev.ToolCall) -> None:
        self.query_one(Conversation).tool_call(e.name, e.input)

    def _on_tool_result(self, e: ev.ToolResult) -> None:
        self.query_one(Conversation).tool_result(e.name, e.output, e.is_error)

    def _on_harness_started(self, e: ev.HarnessStarted) -> None:
        self.query_one(BenchPanel).harness_started(e.mode, e.quick, e.total)
        self.query_one(StatusBar).update_info(harness=f"{e.mode} 0/{e.total}")

    def _on_harness_progress(self, e: ev.HarnessProgress) -> None:
        self.query_one(BenchPanel).harness_progress(e.done, e.total, e.scenario, e.phase, worker=e.worker)
        self.query_one(StatusBar).update_info(harness=f"{e.phase} {e.done}/{e.total}")

    def _on_harness_finished(self, e: ev.HarnessFinished) -> None:
        self.query_one(BenchPanel).harness_finished()
        self.query_one(StatusBar).update_info(harness="")
        if e.attempt is None and e.note:
            self.query_one(Conversation).note(f"harness {e.status}: {e.note}")

    def _on_attempt(self, e: ev.AttemptRecorded) -> None:
        number = e.attempt.get("number")
        self.attempts = [a for a in self.attempts if a.get("number") != number] + [e.attempt]
        if e.best is not None:  # the log view's mark, wherever it moved (another device's run moves it back)
            self.best = e.best or None
        elif e.attempt.get("best"):  # not told: the recorded attempt says it holds the mark
            self.best = number
        self.show_attempts(self.attempts)
        if e.result:
            self.show_result(e.result)
        self.query_one(StatusBar).update_info(harness="")

    def _on_decision_point(self, e: ev.DecisionPointReached) -> None:
        self.query_one(QuestionPane).offer(e.point, e.reason, e.questions)
        self.query_one("#questions-panel").add_class("-pending")
        if self.focused is not None and self.focused.id == "question-input":
            return  # do not yank the cursor away from someone typing
        self.query_one("#question-list", OptionList).focus()

    def _on_question(self, e: ev.QuestionAsked) -> None:
        self.close_questions(f"asked ({e.chosen_by}): {e.text}")

    def close_questions(self, note: str) -> None:
        """The decision point is over: idle pane, and the cursor back to the conversation."""
        pane = self.query_one(QuestionPane)
        pane.settle(note)
        self.query_one("#questions-panel").remove_class("-pending")
        if self.focused is not None and pane in self.focused.ancestors_with_self and not \
                pane.has_class("-typing"):
            self.query_one(Conversation).focus()

    def _on_usage(self, e: ev.Usage) -> None:
        context = e.context_tokens / e.context_window if e.context_window and e.context_tokens else None
        bar = self.query_one(StatusBar)
        bar.update_info(tokens=e.session_tokens, cost_usd=e.session_cost_usd, context=context,
                        priced=bar.info.priced and e.priced)

    def _on_context_compacted(self, e: ev.ContextCompacted) -> None:
        removed = f", {e.removed} oldest messages removed" if e.removed else ""
        self.query_one(Conversation).note(
            f"context: older turns compacted ({e.cleared} items cleared{removed}), about {e.tokens_before:,} -> "
            f"{e.tokens_after:,} of {e.window:,} tokens")
        self.query_one(StatusBar).update_info(context=e.tokens_after / e.window)

    def _on_rollback(self, e: ev.RolledBack) -> None:
        self.query_one(Conversation).note(f"rolled back to attempt {e.to_attempt} (new attempt {e.new_attempt})")

    def _on_error(self, e: ev.ErrorEvent) -> None:
        self.query_one(Conversation).note(f"error: {e.message}", error=True)
        self.notify(e.message, title="engine error", severity="error" if not e.recoverable else "warning",
                    markup=False)

    def on_worker_state_changed(self, event) -> None:
        self.app.report_worker_error(event)  # a screen's workers do not bubble to the app

    def _on_turn_end(self, e: ev.TurnEnded) -> None:
        self.query_one(BenchPanel).harness_finished()

    def _on_thinking_delta(self, e: ev.ThinkingDelta) -> None:
        self.query_one(Conversation).thinking(e.text)

    def _on_bash_approval(self, e: ev.BashApprovalRequested) -> None:
        self.query_one(Conversation).note(f"asks to run: {e.command}")

    def _on_session_end(self, e: ev.SessionEnded) -> None:
        self.query_one(BenchPanel).harness_finished()
        self.query_one(StatusBar).update_info(harness="")
        self.query_one(Conversation).note(f"session ended: {e.reason}")

    def reset(self) -> None:
        """Empty every panel before another session is shown."""
        self.attempts, self.best = [], None
        self.query_one(DiffView).show_message("No attempt yet.")
        self.query_one(CompilePanel).show_result({})
        self.query_one(BenchPanel).show_result({})
        self.query_one(BenchPanel).show_attempts([])
        self.query_one(QuestionPane).settle()
        self.query_one("#questions-panel").remove_class("-pending")
        self.query_one(Conversation).remove_children()
        self.query_one(StatusBar).update_info(attempts=0, best_speedup=None, best_correct="", state="opening",
                                              tokens=0, cost_usd=0.0, priced=True, harness="", context=None)

    # ---- data loaded by workers ---------------------------------------------------------

    def show_attempts(self, attempts: list[dict[str, Any]]) -> None:
        """Show the attempts with the mark on `self.best` (the log view's), nothing decided here."""
        self.attempts = list(attempts)
        for a in self.attempts:
            a["best"] = self.best is not None and a.get("number") == self.best
        best = next((a for a in self.attempts if a["best"]), None)
        self.query_one(StatusBar).update_info(
            attempts=len(self.attempts),
            best_speedup=best.get("speedup") if best else None,
            best_correct=best.get("correct", "") if best else "",
        )
        self.query_one(BenchPanel).show_attempts(self.attempts)
        self.refresh_diff()

    def show_result(self, result: dict[str, Any]) -> None:
        self.query_one(BenchPanel).show_result(result)
        self.query_one(CompilePanel).show_result(result)

    @on(AttemptsLoaded)
    def _attempts_loaded(self, message: AttemptsLoaded) -> None:
        # An attempt event may have landed after the worker read the store: keep it.
        loaded = {a.get("number") for a in message.attempts}
        newer = [a for a in self.attempts if a.get("number") not in loaded
                 and a.get("number", 0) > max(loaded, default=0)]
        if not newer:  # a later event's mark stands over an older read
            self.best = message.best
        self.show_attempts(message.attempts + newer)
        if message.latest_result and not newer:
            self.show_result(message.latest_result)

    @on(DiffLoaded)
    def _diff_loaded(self, message: DiffLoaded) -> None:
        if message.note:
            self.query_one(DiffView).show_message(message.note, style="yellow")
        elif not message.text.strip() and len(self.attempts) == 1:
            self.query_one(DiffView).show_message("The first attempt: nothing earlier to compare with.")
        else:
            self.query_one(DiffView).show_diff(message.text)
        self.query_one("#diff-panel").border_title = message.title

    def toggle_diff_base(self) -> None:
        self.diff_base = "best" if self.diff_base == "previous" else "previous"
        self.refresh_diff()

    def _set_diff_title(self) -> str:
        title = f"Diff · latest vs {self.diff_base} (d toggles)"
        self.query_one("#diff-panel").border_title = title
        return title

    def refresh_diff(self) -> None:
        backend = getattr(self.app, "backend", None)
        title = self._set_diff_title()
        if backend is None or not self.attempts:
            return
        self._load_diff(backend, self.diff_base, title)

    @work(thread=True, exclusive=True, group="diff", exit_on_error=False)
    def _load_diff(self, backend, base: str, title: str) -> None:
        from ks_tui.errors import KsError

        try:
            message = DiffLoaded(backend.diff("latest", base), title)
        except KsError as e:  # e.g. no correct attempt yet to be "best": say so in the panel
            message = DiffLoaded("", title, note=e.message)
        if not get_current_worker().is_cancelled:
            self.post_message(message)
