"""KernelSeekApp: wires the engine's events to the main screen and the keys to the engine.

Engine events arrive on the engine's thread and go through an EventPump, which wakes the
UI once per batch. Every call that may block (git, the harness, the engine) runs in a thread
worker; a worker that fails shows a notification instead of taking the app down.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import os
import shlex
import subprocess
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any

from textual import on, work
from textual.actions import parse as parse_action
from textual.app import App, SystemCommand
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from ks_tui.app import keymap as km
from ks_tui.app.backend import Backend
from ks_tui.app.event_pump import EventPump
from ks_tui.app.messages import AttemptsLoaded, EventsWaiting, QuestionAnswered, SessionReady
from ks_tui.app.screens.confirm import ConfirmScreen
from ks_tui.app.screens.main import MainScreen
from ks_tui.errors import KsError
from ks_tui.events import (AttemptRecorded, BashApprovalRequested, Event, HarnessFinished, HarnessStarted,
                           RolledBack, SessionEnded, StateChanged)
from ks_tui.run_plan import DEFAULT, OTHER, RunPlan, full_grid_offer, plan_for

SMALL_TASK = plan_for(0, 0)  # the plan until a task's is known: r runs the full grid


class KernelSeekApp(App):
    TITLE = "KernelSeek"
    BINDINGS = km.bindings(km.APP_KEYS)

    def __init__(self, backend: Backend | None = None, *, opener=None, session_id: str | None = None,
                 pick_session: bool = False, keymap: dict[str, str] | None = None):
        """Either a ready `backend`, or an `opener` (connect.SessionOpener) that opens
        `session_id` (None: a new session) in a worker once the screen is drawn.
        `pick_session` shows the sessions picker first. `keymap`: binding ids to keys (keymap.py)."""
        super().__init__()
        self.backend = backend
        self.opener = opener
        self.session_id = session_id
        self.pick_session = pick_session
        self.user_keymap = dict(keymap or {})
        self.agent_state = "idle"
        self._harness_busy = False  # a run asked for or in flight: another r would only queue a repeat
        self.run_plan: RunPlan | None = None  # which run r and R start (ks_tui/run_plan.py)
        self._offer_full = False  # the latest quick run passed with a new best: R's label says so
        self._opening = False  # a session is being opened
        # Keys pressed while it opens, carried out once it is open: (what, call), in order.
        self._waiting: list[tuple[str, Callable[[], Any]]] = []
        self._unsubscribe = lambda: None
        self.pump = EventPump(lambda: self.post_message(EventsWaiting()))
        self.main_screen = MainScreen()

    # ---- start-up ------------------------------------------------------------------------

    async def on_mount(self) -> None:
        if self.user_keymap:
            self.set_keymap(self.user_keymap)
        if self.opener is not None and self.backend is None:
            self.run_plan = self.opener.run_plan()  # the task's, so the first footer names the right run
        await self.push_screen(self.main_screen)
        if self.opener is not None and not self.pick_session:
            self.main_screen.query_one("#status").update_info(task=self.opener.task_name)
        if self.backend is not None:
            self._attach(self.backend)
        elif self.pick_session:
            self.action_sessions()
        elif self.opener is not None:
            self.main_screen.query_one("#conversation").note("opening the session…")
            self._open(self.session_id)

    def _open(self, session_id: str | None) -> None:
        self._opening = True
        self.main_screen.query_one("#status").update_info(state="opening")
        self.refresh_bindings()
        self._open_session(session_id)

    @work(thread=True, exclusive=True, group="open", exit_on_error=False, description="opening the session")
    def _open_session(self, session_id: str | None) -> None:
        self.post_message(SessionReady(self.opener(session_id)))

    def _open_failed(self) -> None:
        """The session did not open (the worker's error is its own notification): drop what waited for it."""
        if any(w.group == "open" and w.state in (WorkerState.PENDING, WorkerState.RUNNING) for w in self.workers):
            return  # another open took its place (the picker): what waits goes to that one
        self._opening = False
        dropped, self._waiting = [what for what, _ in self._waiting], []
        self.main_screen.query_one("#status").update_info(state="idle")
        if dropped:
            self.notify(f"not done, the session did not open: {'; '.join(dropped)}", severity="warning",
                        timeout=8, markup=False)
        self.refresh_bindings()

    def _when_open(self, what: str, call: Callable[[], Any]) -> None:
        """Keep `call` for when the session opens (once per `what`), or say that there is no session."""
        if not self._opening:
            self.notify("no session is open", severity="warning")
            return
        if any(w == what for w, _ in self._waiting):
            self.notify(f"{what}: already waiting for the session to open", timeout=3, markup=False)
            return
        self._waiting.append((what, call))
        self.notify(f"{what} once the session is open", timeout=3, markup=False)

    async def _carry_out_waiting(self) -> None:
        waiting, self._waiting = self._waiting, []
        for _, call in waiting:
            done = call()
            if inspect.isawaitable(done):
                await done

    @on(SessionReady)
    def _session_ready(self, message: SessionReady) -> None:
        self._switch_to(message.backend)

    def _attach(self, backend: Backend) -> None:
        self.backend = backend
        self._opening = False
        self.run_plan = backend.run_plan() or self.run_plan
        self._offer_full = False
        status = self.main_screen.query_one("#status")
        status.update_info(task=backend.task_name, session=backend.session_id, agent=backend.has_agent)
        if backend.engine is None:
            status.update_info(state="idle")  # browsing: nothing will say otherwise
        self.load_attempts()
        if backend.engine is not None:
            self._unsubscribe = backend.engine.subscribe(self.pump.push)
            backend.start()
        self.refresh_bindings()
        if self._waiting:
            self.call_later(self._carry_out_waiting)

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
        if any(isinstance(e, AttemptRecorded) and e.result for e in batch):
            self._offer_full_grid()

    def _offer_full_grid(self) -> None:
        """After a person's quick run that passed with a new best, on a task that runs quick first: say
        that the full grid is worth its minutes, and R's footer label points at it."""
        plan = self.run_plan or SMALL_TASK
        why = full_grid_offer(self.main_screen.attempts) if plan.quick_first else None
        if bool(why) != self._offer_full:
            self._offer_full = bool(why)
            self.refresh_bindings()
        if why:
            line = f"{why}: {km.key_of('run-other', self.user_keymap)} runs {plan.describe(OTHER)}"
            self.main_screen.query_one("#conversation").note(line)
            self.notify(line, title="quick run passed", timeout=10, markup=False)

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
            what = {"answer": "the question goes out"}.get(method, method)
            self._when_open(what, lambda: self._call_backend(method, *args))
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

    def action_run(self, which: str = DEFAULT, label: str = "") -> None:
        """Run `which` of the plan (DEFAULT for r, OTHER for R); `label` only picks the footer's entry."""
        plan = self.run_plan or SMALL_TASK
        if self.backend is None:
            self._when_open(f"run {plan.describe(which)}", lambda: self.action_run(which))
            return
        if self._harness_busy:
            self.notify("the harness is already running; its result comes first", severity="warning", timeout=3)
            return
        if not self.backend.engine_running:
            self.notify("this session's loop has ended, so nothing runs the harness: open the session again (o) "
                        "or run `ks try --session ID`", severity="warning", timeout=8, markup=False)
            return
        self._harness_busy = True  # until the engine says the run finished
        if self._offer_full:  # the offer is for the run after a quick pass: this one
            self._offer_full = False
            self.refresh_bindings()
        self.notify(f"running {plan.describe(which)}: check and bench", timeout=3)
        self._call_backend_on(self.backend, "run_harness_now", plan.is_quick(which))

    def action_ask(self) -> None:
        if self.screen is not self.main_screen:
            self.pop_screen()
        self.main_screen.query_one("#questions").action_own_question()

    def action_toggle_diff(self) -> None:
        self.main_screen.toggle_diff_base()

    def action_history(self) -> None:
        if self.backend is None:
            self._when_open("the history opens", self.action_history)
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
                self._open(self.session_id)  # nothing open yet: what the command line asked
            return
        if self.backend is not None and choice == self.backend.session_id:
            return
        self._open(choice)

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
            self._when_open("the kernel opens in the editor", self.action_edit_kernel)
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
        self.action_run(DEFAULT)

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
            agent = self.backend is not None and self.backend.has_agent and self.agent_state != "human"
            return agent and (self.agent_state == "paused") == (action == "resume")
        if action == "sessions":
            return self.opener is not None
        if action == "run" and len(parameters) == 2:
            return self._run_label_shown(*parameters)
        return True

    def _run_label_shown(self, which: str, label: str) -> bool:
        """r and R each have one footer entry per label; the plan (and a quick run's offer) picks one."""
        wanted = (self.run_plan or SMALL_TASK).label(which)
        offer = which == OTHER and self._offer_full
        if label == "full!":
            return wanted == "full" and offer
        return wanted == label and not (label == "full" and offer)

    # ---- errors and the command palette --------------------------------------------------

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        self.report_worker_error(event)
        if event.worker.group == "open" and event.state in (WorkerState.ERROR, WorkerState.CANCELLED):
            self._open_failed()

    def report_worker_error(self, event: Worker.StateChanged) -> None:
        """A failed worker, the app's or a screen's, becomes a notification (plain text)."""
        if event.state == WorkerState.ERROR:
            error = event.worker.error
            self.notify(f"{type(error).__name__}: {error}" if not _is_user_error(error) else str(error),
                        title=event.worker.description or event.worker.name or "worker failed",
                        severity="error", timeout=8, markup=False)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for key in km.APP_KEYS:  # the keymap table's entries that the footer would show now
            _, name, params = parse_action(key.action)
            if key.palette and self.check_action(name, params):
                title = key.description.rstrip(" ◀")
                yield SystemCommand(title, f"{key.palette} ({km.key_of(key.id, self.user_keymap)})",
                                    partial(self.run_action, key.action))

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
