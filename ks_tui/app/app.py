"""KernelSeekApp: wires the engine's events to the main screen and the keys to the engine.

Engine events arrive on the engine's thread and go through an EventPump, which wakes the
UI once per batch. Every call that may block (git, the harness, the engine) runs in a thread
worker; a worker that fails shows a notification instead of taking the app down.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shlex
import subprocess
from collections.abc import Iterable
from pathlib import Path

from textual import on, work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from ks_tui.app.backend import Backend
from ks_tui.app.event_pump import EventPump
from ks_tui.app.messages import AttemptsLoaded, EventsWaiting, QuestionAnswered, SessionReady
from ks_tui.app.screens.confirm import ConfirmScreen
from ks_tui.app.screens.main import MainScreen
from ks_tui.errors import KsError
from ks_tui.events import (AttemptRecorded, BashApprovalRequested, Event, HarnessFinished, HarnessStarted,
                           RolledBack, SessionEnded, StateChanged)


class KernelSeekApp(App):
    TITLE = "KernelSeek"
    BINDINGS = [
        Binding("h", "history", "History"),
        Binding("p", "pause", "Pause"),
        Binding("p", "resume", "Resume"),
        Binding("a", "ask", "Ask"),
        Binding("r", "run_harness", "Run"),
        Binding("R", "run_harness(True)", "Quick run", show=False),
        Binding("e", "edit_kernel", "Edit"),
        Binding("d", "toggle_diff", "Diff base"),
        Binding("o", "sessions", "Sessions", show=False),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(self, backend: Backend | None = None, *, opener=None, session_id: str | None = None,
                 pick_session: bool = False):
        """Either a ready `backend`, or an `opener` (connect.SessionOpener) that opens
        `session_id` (None: a new session) in a worker once the screen is drawn.
        `pick_session` shows the sessions picker first."""
        super().__init__()
        self.backend = backend
        self.opener = opener
        self.session_id = session_id
        self.pick_session = pick_session
        self.agent_state = "idle"
        self._harness_busy = False  # a run asked for or in flight: another r would only queue a repeat
        self._unsubscribe = lambda: None
        self.pump = EventPump(lambda: self.post_message(EventsWaiting()))
        self.main_screen = MainScreen()

    # ---- start-up ------------------------------------------------------------------------

    async def on_mount(self) -> None:
        await self.push_screen(self.main_screen)
        if self.backend is not None:
            self._attach(self.backend)
        elif self.pick_session:
            self.action_sessions()
        elif self.opener is not None:
            self.main_screen.query_one("#conversation").note("opening the session…")
            self._open_session(self.session_id)

    @work(thread=True, exclusive=True, group="open", exit_on_error=False, description="opening the session")
    def _open_session(self, session_id: str | None) -> None:
        self.post_message(SessionReady(self.opener(session_id)))

    @on(SessionReady)
    def _session_ready(self, message: SessionReady) -> None:
        self._switch_to(message.backend)

    def _attach(self, backend: Backend) -> None:
        self.backend = backend
        self.main_screen.query_one("#status").update_info(task=backend.task_name, session=backend.session_id)
        self.load_attempts()
        if backend.engine is not None:
            self._unsubscribe = backend.engine.subscribe(self.pump.push)
            backend.start()
        self.refresh_bindings()

    @work(thread=True, exclusive=True, group="attempts", exit_on_error=False, description="reading attempts")
    def load_attempts(self) -> None:
        backend = self.backend
        view = backend.log_view()
        latest = backend.result("latest") if view.attempts else None
        self.main_screen.post_message(AttemptsLoaded([a.to_dict() for a in view.attempts], latest, view.best))

    # ---- engine events -------------------------------------------------------------------

    @on(EventsWaiting)
    def _drain_events(self) -> None:
        batch = self.pump.drain()
        if not batch or not self.main_screen.is_attached or self._exit:
            return  # events that arrive while the app shuts down have nowhere to go
        for event in batch:
            if isinstance(event, StateChanged):
                self.agent_state = event.state
                self.refresh_bindings()
            elif isinstance(event, BashApprovalRequested):
                self._ask_bash_approval(event)
            elif isinstance(event, HarnessStarted):
                self._harness_busy = True
            elif isinstance(event, (HarnessFinished, SessionEnded)):
                self._harness_busy = False
            elif isinstance(event, AttemptRecorded) and not event.result:
                self.load_attempts()  # a rollback or a human edit: the store has the result
        self.main_screen.apply(batch)
        self._forward_to_overlay(batch)

    def _forward_to_overlay(self, batch: list[Event]) -> None:
        """An open history screen refreshes when a new attempt lands."""
        top = self.screen
        if top is not self.main_screen and any(isinstance(e, (AttemptRecorded, RolledBack)) for e in batch):
            reload = getattr(top, "reload", None)
            if reload is not None:
                reload()

    def post_engine_event(self, event: Event) -> None:
        """Feed one event as the engine would (thread-safe)."""
        self.pump.push(event)

    # ---- commands to the engine ----------------------------------------------------------

    @on(QuestionAnswered)
    def _question_answered(self, message: QuestionAnswered) -> None:
        if message.question_id is None and message.text is None:
            self.main_screen.close_questions("skipped")
        self._call_backend("answer", message.question_id, message.text)

    def _call_backend(self, method: str, *args) -> None:
        if self.backend is None:
            self.notify("no session is open yet", severity="warning")
            return
        self._call_backend_on(self.backend, method, *args)

    @work(thread=True, group="commands", exit_on_error=False)
    def _call_backend_on(self, backend: Backend, method: str, *args) -> None:
        getattr(backend, method)(*args)

    def action_pause(self) -> None:
        self.notify("the agent pauses at its next safe point", timeout=3)
        self._call_backend("pause")

    def action_resume(self) -> None:
        self._call_backend("resume")

    def action_run_harness(self, quick: bool = False) -> None:
        if self._harness_busy:
            self.notify("the harness is already running; its result comes first", severity="warning", timeout=3)
            return
        if self.backend is not None and self.backend.engine_running:
            self._harness_busy = True  # until the engine says the run finished
        self.notify(f"running the harness ({'quick ' if quick else ''}bench)", timeout=2)
        self._call_backend("run_harness_now", quick)

    def action_ask(self) -> None:
        if self.screen is not self.main_screen:
            self.pop_screen()
        self.main_screen.query_one("#questions").action_own_question()

    def action_toggle_diff(self) -> None:
        self.main_screen.toggle_diff_base()

    def action_history(self) -> None:
        if self.backend is None:
            self.notify("no session is open", severity="warning")
            return
        from ks_tui.app.screens.history import HistoryScreen

        self.push_screen(HistoryScreen(self.backend))

    def action_sessions(self) -> None:
        if self.opener is None:
            self.notify("no workspace is open", severity="warning")
            return
        from ks_tui.app.screens.sessions import SessionsScreen

        current = self.backend.session_id if self.backend else None
        self.push_screen(SessionsScreen(self.opener, current), self._session_picked)

    def _session_picked(self, choice: str | None | bool) -> None:
        """A session id, None for a new session, False when the picker was cancelled."""
        if choice is False:
            if self.backend is None:
                self._open_session(self.session_id)  # nothing open yet: what the command line asked
            return
        if self.backend is not None and choice == self.backend.session_id:
            return
        self._open_session(choice)

    def _switch_to(self, backend: Backend) -> None:
        old = self.backend
        if old is not None:
            self._unsubscribe()  # the old session's last events must not land on the new one
            self.pump.drain()
            if old.engine is not None:
                self._call_backend_on(old, "stop")
            self.agent_state = "idle"
            self._harness_busy = False
            self.main_screen.reset()
        self._attach(backend)

    def _ask_bash_approval(self, event: BashApprovalRequested) -> None:
        def answered(ok: bool | None) -> None:
            self._call_backend("approve_bash", event.id, bool(ok))

        self.push_screen(ConfirmScreen(f"The agent wants to run:\n\n  {event.command}\n\nAllow it?",
                                       yes="Allow", no="Refuse"), answered)

    async def action_edit_kernel(self) -> None:
        if self.backend is None:
            self.notify("no session is open", severity="warning")
            return
        try:
            path: Path = await asyncio.to_thread(self.backend.kernel_path)
        except KsError as err:  # e.g. the session's worktree was removed: say how to get it back
            self.notify(str(err), title="cannot edit the kernel", severity="error", markup=False, timeout=10)
            return
        before = await asyncio.to_thread(_digest, path)
        command = [*shlex.split(os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"), str(path)]
        try:
            from textual.app import SuspendNotSupported

            try:
                with self.suspend():
                    code = subprocess.call(command)
            except SuspendNotSupported:  # headless (tests): the editor needs no terminal
                code = await asyncio.to_thread(subprocess.call, command)
        except OSError as err:
            self.notify(f"could not start the editor {command[0]!r}: {err}", severity="error", markup=False)
            return
        if code != 0:
            self.notify(f"the editor exited with status {code}", severity="warning")
        if await asyncio.to_thread(_digest, path) == before:
            self.notify("kernel unchanged", timeout=3)
            return
        # The engine commits the edit as a human attempt before it runs the harness.
        self.action_run_harness()

    @work(exclusive=True, group="quit")
    async def action_quit(self) -> None:
        if self.agent_state == "running":
            if not await self.push_screen_wait(ConfirmScreen("The agent is mid-turn. Stop it and quit?",
                                                             yes="Quit")):
                return
        await self._stop_engine()
        self.exit()

    async def _stop_engine(self) -> None:
        """Stop the agent and give it a moment to close its trace before the process ends."""
        backend = self.backend
        if backend is None or backend.engine is None:
            return
        try:
            await asyncio.to_thread(backend.stop)
            await asyncio.to_thread(backend.join, 2.0)
        except Exception as err:  # quitting must work even when the engine is broken
            self.log.error(f"stopping the engine failed: {err}")

    def check_action(self, action: str, parameters) -> bool | None:
        if action in ("pause", "resume"):
            agent = self.backend is not None and self.backend.engine is not None and self.agent_state != "human"
            return agent and (self.agent_state == "paused") == (action == "resume")
        if action == "sessions":
            return self.opener is not None
        return True

    # ---- errors and the command palette --------------------------------------------------

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        self.report_worker_error(event)

    def report_worker_error(self, event: Worker.StateChanged) -> None:
        """A failed worker, the app's or a screen's, becomes a notification (plain text)."""
        if event.state == WorkerState.ERROR:
            error = event.worker.error
            self.notify(f"{type(error).__name__}: {error}" if not _is_user_error(error) else str(error),
                        title=event.worker.description or event.worker.name or "worker failed",
                        severity="error", timeout=8, markup=False)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("History", "Every attempt of the session (h)", self.action_history)
        yield SystemCommand("Run harness", "Check and time the kernel on every scenario (r)",
                            self.action_run_harness)
        yield SystemCommand("Quick run", "Check and time the quick scenarios (R)",
                            lambda: self.action_run_harness(True))
        yield SystemCommand("Edit kernel", "Open the kernel in $EDITOR (e)", self.action_edit_kernel)
        yield SystemCommand("Ask a question", "Type a question for the agent (a)", self.action_ask)
        if self.check_action("pause", ()):  # only when there is an agent to pause (or resume)
            yield SystemCommand("Pause agent", "Stop at the next safe point (p)", self.action_pause)
        if self.check_action("resume", ()):
            yield SystemCommand("Resume agent", "Carry on after a pause (p)", self.action_resume)
        yield SystemCommand("Toggle diff base", "Latest vs previous or vs best (d)", self.action_toggle_diff)
        yield SystemCommand("Sessions", "Open another session (o)", self.action_sessions)

    def on_unmount(self) -> None:
        # Any way out (an exception included) stops the agent thread; it is a daemon anyway.
        if self.backend is not None and self.backend.engine is not None:
            try:
                self.backend.stop()
            except Exception:
                pass


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _is_user_error(error: BaseException | None) -> bool:
    return isinstance(error, KsError)
