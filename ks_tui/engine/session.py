"""The Session: its construction, events out, commands in, and the main loop.

The loop's parts live in sibling modules, each a mixin over the same session state:
turns.py (model turns), toolhost.py (tool calls), runs.py (harness runs, attempts,
rollback), decisions.py (decision points and questions), window.py (the context window);
replay.py rebuilds the state from the trace.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from ks_tui import events as ev
from ks_tui.agent import prompts
from ks_tui.agent.providers import has_credentials
from ks_tui.agent.files import TaskFiles
from ks_tui.agent.tools import ToolBox
from ks_tui.agent.usage import Spend
from ks_tui.config import Config
from ks_tui.engine.decisions import Answer, DecisionsMixin
from ks_tui.engine.replay import TraceEventError, replay
from ks_tui.engine.runs import AttemptsMixin
from ks_tui.engine.toolhost import ToolHostMixin
from ks_tui.engine.turns import TurnsMixin
from ks_tui.engine.window import WindowMixin
from ks_tui.errors import InputFileError, KsError

if TYPE_CHECKING:
    from ks_tui.attempts import AttemptStore
    from ks_tui.attempts.model import SessionInfo

log = logging.getLogger(__name__)


@dataclass
class _Cmd:
    name: str
    args: tuple = ()


class Session(TurnsMixin, WindowMixin, ToolHostMixin, AttemptsMixin, DecisionsMixin):
    """Build with `Session.create(...)` (a new session) or `Session.open(...)` (resume)."""

    def __init__(self, workspace: Path, store: AttemptStore, info: SessionInfo, cfg: Config, *, autonomous: bool = False,
                 human_present: bool = True, use_agent: bool | None = None):
        from ks_tui.questions import EfficacyStore, default_bank_path, load_bank
        from ks_tui.task import load_task
        from ks_tui.trace import Trace

        self.workspace = Path(workspace)
        self.store = store
        self.info = info
        self.id: str = info.id
        self.cfg = cfg
        self.autonomous = autonomous
        self.human_present = human_present and not autonomous
        self.agent_enabled = has_credentials(cfg.provider) if use_agent is None else use_agent
        self.task = load_task(store.task_dir(self.id), self.workspace)
        self.bank = load_bank(default_bank_path(self.workspace))
        self.efficacy = EfficacyStore(self.workspace, k=self.bank.config.efficacy_k, config=self.bank.config)
        self.files = TaskFiles(self.task.dir, store.kernel_path(self.id), list(self.task.readonly))
        self.toolbox = ToolBox(self.files, self, enable_bash=cfg.enable_bash)
        self.trace_path = store.trace_path(self.id)
        self.trace = Trace(self.trace_path)
        self._writes_trace = True  # False when another process holds the session

        self._subscribers: list[Callable[[ev.Event], None]] = []
        self._sub_lock = threading.Lock()
        self._cmds: queue.Queue[_Cmd] = queue.Queue()
        self._stop = threading.Event()
        self._paused = threading.Event()
        self._cancel_harness = threading.Event()
        self._approvals: dict[str, queue.Queue[bool]] = {}
        self._thread: threading.Thread | None = None
        self._caller = None  # agent.loop.ModelCaller, made on the first model turn
        self._warm_pool = None  # harness.warm.WarmPool, started by the first harness run (engine/runs.py)
        self._decisions_due = None  # set while tools run: points wait for the results
        self._deciding = False  # a decision point waits for a person's answer
        self.state = "idle"
        self.run = Spend()  # this process's run of the session, for --max-turns/--max-cost
        self.end: ev.SessionEnded | None = None

        try:
            past = replay(Trace.read(self.trace_path))
        except TraceEventError as e:
            raise InputFileError(self.trace_path, str(e),
                                 hint="the trace was edited or damaged; move that event out of it "
                                      "(the attempts themselves are safe on the session's branch)") from None
        self.conv = past.conv
        self.resumed = bool(self.conv.messages)
        self.spend = past.spend  # the whole session's, across runs
        self.asked = past.asked
        self.pending_question = past.pending_question  # goes on the next attempt's KS-Question
        self.marks = past.marks
        self.results = past.results
        self._cut_tools = past.cut_tools
        self._context_scale = past.context_scale  # API tokens per estimated token (engine/window.py)
        self._api_window = None  # the window a "prompt is too long" refusal named
        # The last reply stopped with pause_turn: it goes back as it is, to be continued.
        self._pause_turn = (past.paused_turn and bool(self.conv.messages)
                            and self.conv.messages[-1]["role"] == "assistant")
        # The kernel as last committed or as the agent last wrote it; None while the worktree
        # holds an edit of a person's, so that edit is committed as theirs before the agent writes.
        now = self._kernel_sha()
        self._kernel_known = now if self._kernel_committed() or now == past.agent_kernel else None

    @classmethod
    def create(cls, workspace: Path, task_name: str, cfg: Config, **kw) -> "Session":
        from ks_tui.attempts import AttemptStore

        store = AttemptStore(workspace)
        return cls(workspace, store, store.new_session(task_name), cfg, **kw)

    @classmethod
    def open(cls, workspace: Path, session_id: str, cfg: Config, **kw) -> "Session":
        from ks_tui.attempts import AttemptStore

        store = AttemptStore(workspace)
        return cls(workspace, store, store.session(session_id), cfg, **kw)  # KsError if unknown

    # ------------------------------------------------------------------ events out

    def subscribe(self, callback: Callable[[ev.Event], None]) -> Callable[[], None]:
        with self._sub_lock:
            self._subscribers.append(callback)

        def unsubscribe() -> None:
            with self._sub_lock:
                if callback in self._subscribers:
                    self._subscribers.remove(callback)
        return unsubscribe

    def events(self, timeout: float | None = None) -> Iterator[ev.Event]:
        """Iterate over events from now until the session ends."""
        q: queue.Queue = queue.Queue()
        unsubscribe = self.subscribe(q.put)
        try:
            while True:
                e = q.get(timeout=timeout)
                yield e
                if isinstance(e, ev.SessionEnded):
                    return
        finally:
            unsubscribe()

    def emit(self, event: ev.Event) -> None:
        if event.kind not in ev.EPHEMERAL_KINDS and self._writes_trace:
            payload = event.to_dict()
            payload.pop("kind", None)
            self.trace.append(event.kind, payload)
        with self._sub_lock:
            subs = list(self._subscribers)
        for cb in subs:
            try:
                cb(event)
            except Exception:  # a broken view must not kill the session
                log.exception("event subscriber failed on %s", event.kind)

    def _set_state(self, state: ev.AgentState, detail: str = "") -> None:
        if state != self.state:
            self.state = state
            self.emit(ev.StateChanged(state, detail))

    def _idle_state(self) -> ev.AgentState:
        return "running" if self.agent_enabled else "human"

    def _user(self, text: str, source: str) -> None:
        self.conv.add_user_text(text)
        self.emit(ev.UserMessage(text, source))

    # ------------------------------------------------------------------ commands in

    def start(self) -> threading.Thread:
        self._thread = threading.Thread(target=self.run_forever, name=f"ks-session-{self.id}", daemon=True)
        self._thread.start()
        return self._thread

    def join(self, timeout: float | None = None) -> bool:
        if self._thread is not None:
            self._thread.join(timeout)
            return not self._thread.is_alive()
        return True

    def pause(self) -> None:
        self._paused.set()

    def resume(self) -> None:
        self._paused.clear()
        self._cmds.put(_Cmd("resume"))

    def stop(self) -> None:
        self._stop.set()
        self._cancel_harness.set()
        if self._caller is not None:
            self._caller.abort()
        for q in list(self._approvals.values()):
            q.put(False)
        self._cmds.put(_Cmd("stop"))  # wakes any wait for a command

    def answer_question(self, question_id: str | None = None, text: str | None = None) -> None:
        """Answer the open decision point: a bank question id, a typed question, or neither
        (skip). With no decision point open, a question is sent at the next safe point; with
        no agent (human mode) it is recorded, goes on the next attempt, and waits in the
        conversation for an agent that joins later."""
        self._cmds.put(_Cmd("answer", (Answer(question_id, text),)))

    def send_message(self, text: str) -> None:
        self.answer_question(None, text)

    def run_harness_now(self, mode: str = "bench", quick: bool = False) -> None:
        self._cmds.put(_Cmd("harness", (mode, quick)))

    def rollback(self, ref: str | int) -> None:
        self._cmds.put(_Cmd("rollback", (ref,)))

    def approve_bash(self, request_id: str, ok: bool) -> None:
        q = self._approvals.get(request_id)
        if q is not None:
            q.put(bool(ok))

    # ------------------------------------------------------------------ the main loop

    def run_forever(self) -> ev.SessionEnded:
        with contextlib.ExitStack() as held:
            try:
                held.enter_context(self.store.lock(self.id))  # one writer per session, for the whole run
            except KsError as e:
                # Another process runs this session: say so to our viewers, but its trace and
                # its efficacy record are that process's to write.
                self._writes_trace = False
                self.emit(ev.ErrorEvent(str(e), recoverable=False))
                return self._finish(f"error: {e.message}", settle=False)
            return self._run_locked()

    def _run_locked(self) -> ev.SessionEnded:
        reason = "stopped"
        try:
            reason = self._main()
        except KsError as e:
            self.emit(ev.ErrorEvent(str(e), recoverable=False))
            reason = f"error: {e.message}"
        except Exception as e:  # a bug: keep the session's record and say so
            log.exception("session crashed")
            self.emit(ev.ErrorEvent(f"internal error: {type(e).__name__}: {e}", recoverable=False))
            reason = "internal error"
        finally:
            self._close_harness_pool()  # no pre-started harness child outlives the run
            end = self._finish(reason)
        return end

    def _finish(self, reason: str, settle: bool = True) -> ev.SessionEnded:
        attempts = self.store.attempts(self.id)
        try:
            if settle:
                self.efficacy.settle(self.id, self._history(attempts), final=True)
        except Exception:
            log.exception("efficacy settle failed")
        best = next((a for a in attempts if a.best), None)  # the store's pick, as `ks log` shows it
        self._set_state("stopped", reason)
        self.end = end = ev.SessionEnded(reason, len(attempts), best.number if best else None,
                                         best.speedup if best else None, self.spend.turns,
                                         self.spend.tokens.total, round(self.spend.cost, 6), self.spend.priced)
        self.emit(end)
        return end

    def _main(self) -> str:
        self.state = self._idle_state()
        self.emit(ev.StateChanged(self.state, "resumed" if self.resumed else "started"))
        if self.agent_enabled and self._needs_intro():
            self._user(prompts.first_message(self.task.name, self.files.rel(self.files.kernel)), "system")
            self._decision("session_start", "the session starts")
        while True:
            if not self._safe_point():
                return "stopped"
            if not self.agent_enabled:
                self._take(self._cmds.get())
                continue
            pending = self.conv.pending_tool_uses()
            if pending:
                self._run_tools(pending)
                continue
            limit = self._limit_reached()
            if limit:
                return limit
            if self.conv.ready_for_model() or self._pause_turn:
                outcome = self._model_turn()
                if outcome is not None:
                    return outcome
                continue
            # The agent ended its turn: a decision point.
            if not self._decision("agent_stop", "the agent ended its turn"):
                if not self.human_present:
                    return "agent finished (no question left to ask)"
                if not self._wait_for_input():
                    return "stopped"

    def _needs_intro(self) -> bool:
        """The agent has not been told the task yet: a new session, or one begun in human
        mode, whose conversation holds only questions and notes."""
        intro = prompts.first_message(self.task.name, self.files.rel(self.files.kernel))
        return not any(m["role"] == "assistant" or any(b.get("text") == intro for b in m["content"])
                       for m in self.conv.messages)

    def _limit_reached(self) -> str | None:
        if self._stop.is_set():
            return "stopped"
        if self.cfg.max_turns is not None and self.run.turns >= self.cfg.max_turns:
            return f"max turns reached ({self.run.turns})"
        if self.cfg.max_cost_usd is not None and self.run.cost >= self.cfg.max_cost_usd:
            return f"max cost reached (${self.run.cost:.2f})"
        return None

    # ------------------------------------------------------------------ commands at safe points

    def _handle(self, cmd: _Cmd) -> Answer | None:
        """Run one command; an answer is returned to the caller, which decides where it goes."""
        if cmd.name == "harness":
            try:
                mode, quick = cmd.args
                self._run_harness(mode, quick, author="human")
            except KsError as e:  # e.g. the kernel file is missing: say so, keep the session
                self.emit(ev.HarnessFinished("error", None, e.message))
                self.emit(ev.ErrorEvent(str(e)))
        elif cmd.name == "rollback":
            self._rollback_with_conversation(cmd.args[0])
        elif cmd.name == "answer":
            return cmd.args[0]
        return None

    def _take(self, cmd: _Cmd) -> bool:
        """Run a command outside a decision point; True when it sent a question."""
        answer = self._handle(cmd)
        return answer is not None and self._ask_answer(answer, point=None)

    def _next_command(self, timeout: float) -> _Cmd | None:
        try:
            return self._cmds.get(timeout=timeout)
        except queue.Empty:
            return None

    def _safe_point(self) -> bool:
        """Run queued commands; wait while paused. False when the session must stop."""
        while (cmd := self._next_command(0)) is not None:
            self._take(cmd)
        while self._paused.is_set() and not self._stop.is_set():
            self._set_state("paused")
            if (cmd := self._next_command(0.5)) is not None:
                self._take(cmd)
        if not self._stop.is_set() and self.state == "paused":
            self._set_state(self._idle_state())
        return not self._stop.is_set()

    def _wait_answer(self, timeout: float) -> Answer | None:
        """Wait for answer_question, running other commands meanwhile. None on timeout/stop."""
        import time

        deadline = time.monotonic() + timeout
        try:
            while not self._stop.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                cmd = self._next_command(left)
                answer = self._handle(cmd) if cmd is not None else None
                if answer is not None:
                    return answer
            return None
        finally:
            if not self._stop.is_set():
                self._set_state(self._idle_state())

    def _wait_for_input(self) -> bool:
        """The agent is idle: wait until a message or question arrives (True) or stop."""
        if self.conv.ready_for_model():  # e.g. a rollback note was added meanwhile
            return True
        self._set_state("idle")
        while not self._stop.is_set():
            if self._take(self._cmds.get()):
                self._set_state("running")
                return True
            if self.conv.ready_for_model():  # a rollback note, for instance
                return True
        return False
