"""A Session: the agent loop, the harness, the attempt store and the question bank, as events.

One Session drives one session folder. It runs in its own thread (`start()`), emits the
dataclasses of ks_tui/events.py to subscribers, appends every event that matters to the
trace (so a killed session resumes from it), and takes commands from any thread: pause,
resume, stop, answer_question, send_message, run_harness_now, rollback, approve_bash.
Commands act at safe points (between model turns and tool calls), never mid-request,
except stop, which also aborts the request or harness run in flight.

No Textual here: the TUI and the headless runner consume the same events.
"""

from __future__ import annotations

import hashlib
import logging
import queue
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from ks_tui import events as ev
from ks_tui.agent import prompts
from ks_tui.agent.client import has_api_key, make_client
from ks_tui.agent.conversation import Conversation, conversation_from_events
from ks_tui.agent.files import TaskFiles, ToolRefused
from ks_tui.agent.summary import summarize_result
from ks_tui.agent.tools import ToolBox, tool_schemas
from ks_tui.agent.usage import TokenCount, cost_usd
from ks_tui.config import Config
from ks_tui.errors import KsError

log = logging.getLogger(__name__)

MAX_SHOW_CHARS = 12_000


@dataclass
class _Cmd:
    name: str
    args: tuple = ()


@dataclass
class _Answer:
    question_id: str | None
    text: str | None


@dataclass
class RunTotals:
    """What this run (one process's life of the session) has spent, for the limits."""

    turns: int = 0
    cost: float = 0.0
    tokens: TokenCount = field(default_factory=TokenCount)


class Session:
    """Build with `Session.create(...)` (a new session) or `Session.open(...)` (resume)."""

    def __init__(self, workspace: Path, store, info, cfg: Config, *, autonomous: bool = False,
                 human_present: bool = True, use_agent: bool | None = None):
        from ks_tui.questions import EfficacyStore, default_bank_path, load_bank
        from ks_tui.session import Trace
        from ks_tui.task import load_task

        self.workspace = Path(workspace)
        self.store = store
        self.info = info
        self.id: str = info.id
        self.cfg = cfg
        self.autonomous = autonomous
        self.human_present = human_present and not autonomous
        self.agent_enabled = has_api_key() if use_agent is None else use_agent
        self.task = load_task(store.task_dir(self.id), self.workspace)
        self.bank = load_bank(default_bank_path(self.workspace))
        self.efficacy = EfficacyStore(self.workspace, k=self.bank.config.efficacy_k)
        self.files = TaskFiles(self.task.dir, store.kernel_path(self.id), list(self.task.readonly))
        self.toolbox = ToolBox(self.files, self, enable_bash=cfg.enable_bash)
        self.trace_path = store.trace_path(self.id)
        self.trace = Trace(self.trace_path)

        self._subscribers: list[Callable[[ev.Event], None]] = []
        self._sub_lock = threading.Lock()
        self._cmds: queue.Queue[_Cmd] = queue.Queue()
        self._stop = threading.Event()
        self._paused = threading.Event()
        self._cancel_harness = threading.Event()
        self._approvals: dict[str, queue.Queue] = {}
        self._thread: threading.Thread | None = None
        self._caller = None  # agent.loop.ModelCaller, made on the first model turn
        self._pause_turn = False
        self._decisions_due: list | None = None  # set while tools run: points wait for the results
        self.state: str = "idle"
        self.run = RunTotals()
        self.end: ev.SessionEnded | None = None

        self._restore(Trace.read(self.trace_path))
        # The kernel as last committed; None while the worktree holds an uncommitted edit
        # (a person's), so that edit is committed as theirs before the agent writes.
        self._kernel_known: str | None = self._kernel_sha() if self._kernel_committed() else None

    # ------------------------------------------------------------------ construction

    @classmethod
    def create(cls, workspace: Path, task_name: str, cfg: Config, **kw) -> "Session":
        from ks_tui.attempts import AttemptStore

        store = AttemptStore(workspace)
        info = store.new_session(task_name)
        return cls(workspace, store, info, cfg, **kw)

    @classmethod
    def open(cls, workspace: Path, session_id: str, cfg: Config, **kw) -> "Session":
        from ks_tui.attempts import AttemptStore

        store = AttemptStore(workspace)
        info = store.session(session_id)  # KsError if unknown
        return cls(workspace, store, info, cfg, **kw)

    def _restore(self, records: list[dict]) -> None:
        """Rebuild the conversation and the counters from the trace."""
        self.conv: Conversation = conversation_from_events(records)
        self.resumed = bool(self.conv.messages)
        self.session_tokens = TokenCount()
        self.session_cost = 0.0
        self.session_turns = 0
        self.priced = True
        self.asked: list[str] = []
        self.pending_question: str | None = None
        self._marks: dict[int, int] = {}  # attempt number -> conversation length to roll back to
        self._results: dict[int, dict] = {}
        for rec in records:
            kind, p = rec.get("kind"), rec.get("payload", {})
            if kind == "usage":
                self.session_tokens += TokenCount(p["input_tokens"], p["output_tokens"],
                                                  p["cache_read_tokens"], p["cache_write_tokens"])
                self.session_cost = p.get("session_cost_usd", self.session_cost)
                self.session_turns = max(self.session_turns, p.get("turn", 0))
                self.priced = self.priced and p.get("priced", True)
            elif kind == "question":
                self.asked.append(p["question_id"])
                self.pending_question = p["question_id"]
            elif kind == "attempt":
                num = p["attempt"]["number"]
                self._results[num] = p.get("result") or {}
                if p.get("conversation_len") is not None:
                    self._marks[num] = p["conversation_len"]
                if p["attempt"].get("question"):
                    self.pending_question = None

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
        if event.kind not in ev.EPHEMERAL_KINDS:
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

    def _set_state(self, state: str, detail: str = "") -> None:
        if state != self.state:
            self.state = state
            self.emit(ev.StateChanged(state, detail))

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
        self._cmds.put(_Cmd("stop"))

    def answer_question(self, question_id: str | None = None, text: str | None = None) -> None:
        """Answer the open decision point: a bank question id, a typed question, or neither
        (skip). With no decision point open, a question is sent at the next safe point."""
        self._cmds.put(_Cmd("answer", (_Answer(question_id, text),)))

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
        reason = "stopped"
        try:
            with self.store.lock(self.id):  # one writer per session, for the whole run
                reason = self._main()
        except KsError as e:
            self.emit(ev.ErrorEvent(str(e), recoverable=False))
            reason = f"error: {e.message}"
        except Exception as e:  # a bug: keep the session's record and say so
            log.exception("session crashed")
            self.emit(ev.ErrorEvent(f"internal error: {type(e).__name__}: {e}", recoverable=False))
            reason = "internal error"
        finally:
            self._finish(reason)
        return self.end

    def _finish(self, reason: str) -> None:
        try:
            self.efficacy.settle(self.id, self._history(), final=True)
        except Exception:
            log.exception("efficacy settle failed")
        attempts = self.store.attempts(self.id)
        best = max((a for a in attempts if a.status == "correct" and a.speedup is not None),
                   key=lambda a: a.speedup, default=None)
        self._set_state("stopped", reason)
        self.end = ev.SessionEnded(reason, len(attempts), best.number if best else None,
                                   best.speedup if best else None, self.session_turns,
                                   self.session_tokens.total, round(self.session_cost, 6), self.priced)
        self.emit(self.end)

    def _main(self) -> str:
        self.emit(ev.StateChanged("running" if self.agent_enabled else "human",
                                  "resumed" if self.resumed else "started"))
        self.state = "running" if self.agent_enabled else "human"
        if not self.conv.messages and self.agent_enabled:
            self._user(prompts.first_message(self.task.name, self.files.rel(self.files.kernel)), "system")
            self._decision("session_start", "the session starts")
        while True:
            if not self._safe_point():
                return "stopped"
            if not self.agent_enabled:
                self._set_state("human")
                self._handle(self._cmds.get())
                continue
            pending = self.conv.pending_tool_uses()
            if pending:
                self._run_tools(pending)
                continue
            if self.conv.ready_for_model() or self._pause_turn:
                limit = self._limit_reached()
                if limit:
                    return limit
                outcome = self._model_turn()
                if outcome is not None:
                    return outcome
                continue
            # The agent ended its turn: a decision point, unless a limit ends the session.
            limit = self._limit_reached()
            if limit:
                return limit
            if not self._decision("agent_stop", "the agent ended its turn"):
                if not self.human_present:
                    return "agent finished (no question left to ask)"
                if not self._wait_for_input():
                    return "stopped"

    def _safe_point(self) -> bool:
        """Run queued commands; wait while paused. False when the session must stop."""
        while True:
            try:
                cmd = self._cmds.get_nowait()
            except queue.Empty:
                break
            answer = self._handle(cmd)
            if answer is not None and self.agent_enabled:
                self._inject(answer)
        while self._paused.is_set() and not self._stop.is_set():
            self._set_state("paused")
            try:
                answer = self._handle(self._cmds.get(timeout=0.5))
            except queue.Empty:
                continue
            if answer is not None and self.agent_enabled:
                self._inject(answer)
        if not self._stop.is_set() and self.state == "paused":
            self._set_state("running" if self.agent_enabled else "human")
        return not self._stop.is_set()

    def _handle(self, cmd: _Cmd) -> _Answer | None:
        """Run one command; an answer is returned to a waiting caller, else asked at once."""
        if cmd.name == "harness":
            self._run_harness(*cmd.args, author="human")
        elif cmd.name == "rollback":
            self._rollback_with_conversation(cmd.args[0])
        elif cmd.name == "answer":
            return cmd.args[0]
        return None

    def _inject(self, answer: _Answer) -> bool:
        """A question or message that arrived outside a decision point."""
        from ks_tui.questions import human_question

        if answer.question_id:
            q = self.bank.get(answer.question_id)
            if q is None:
                self.emit(ev.ErrorEvent(f"no question {answer.question_id!r} in the bank"))
                return False
            self._ask(q, "human", point=None)
            return True
        if answer.text and answer.text.strip():
            self._ask(human_question(answer.text), "human", point=None)
            return True
        return False

    def _limit_reached(self) -> str | None:
        if self._stop.is_set():
            return "stopped"
        if self.cfg.max_turns is not None and self.run.turns >= self.cfg.max_turns:
            return f"max turns reached ({self.run.turns})"
        if self.cfg.max_cost_usd is not None and self.run.cost >= self.cfg.max_cost_usd:
            return f"max cost reached (${self.run.cost:.2f})"
        return None

    # ------------------------------------------------------------------ model turns

    def _ensure_caller(self):
        if self._caller is None:
            from ks_tui.agent.loop import ModelCaller

            system = [{"type": "text", "text": self._system_prompt(), "cache_control": {"type": "ephemeral"}}]
            self._caller = ModelCaller(make_client(self.cfg), self.cfg, system, tool_schemas(self.cfg.enable_bash),
                                       stop_event=self._stop)
        return self._caller

    def _system_prompt(self) -> str:
        root = self.files.root
        listing = sorted(p.relative_to(root).as_posix() for p in root.iterdir()
                         if p.is_file() and not p.name.startswith("."))
        readonly = sorted(self.files.rel(p) for p in self.files.readonly if root in p.parents)
        return prompts.system_prompt(self.task.name, getattr(self.task, "description", ""),
                                     self.files.rel(self.files.kernel), self.task.entry, listing, readonly,
                                     self.cfg.enable_bash)

    def _model_turn(self) -> str | None:
        """One model turn. Returns a reason when the session must end, else None."""
        from ks_tui.agent.loop import TurnCallbacks, TurnFailed, TurnStopped

        caller = self._ensure_caller()
        self._set_state("running")
        cb = TurnCallbacks(
            on_text=lambda s: self.emit(ev.TextDelta(s)),
            on_thinking=lambda s: self.emit(ev.ThinkingDelta(s)),
            on_retry=lambda msg, n, delay: self.emit(ev.ErrorEvent(
                f"{msg}; retrying the turn ({n}/{self.cfg.turn_retries}) in {delay:.1f} s", recoverable=True)))
        self._pause_turn = False
        try:
            turn = caller.call(self.conv.request_messages(), cb)
        except TurnStopped:
            return "stopped"
        except TurnFailed as e:
            self.emit(ev.ErrorEvent(str(e), recoverable=not e.fatal))
            if e.fatal:
                return f"error: {e}"
            if not self.human_present:
                return f"api unavailable: {e}"
            return None if self._wait_for_input() else "stopped"

        self.run.turns += 1
        self.session_turns += 1
        self._account(turn)
        for block in turn.content:
            if block.get("type") == "text" and block.get("text"):
                self.emit(ev.AssistantText(block["text"]))
        if turn.stop_reason in ("refusal", "model_context_window_exceeded"):
            # Not added to the conversation: a refused or overflowing turn cannot be continued.
            why = ("the model declined to continue (refusal)" if turn.stop_reason == "refusal" else
                   "the conversation no longer fits the model's context window: roll back or start a new session")
            self.emit(ev.TurnEnded(turn.stop_reason))
            self.emit(ev.ErrorEvent(why, recoverable=False))
            if self.human_present:
                return None if self._wait_for_input() else "stopped"
            return f"ended: {turn.stop_reason}"
        self.conv.add_assistant(turn.content)
        self.emit(ev.AssistantMessage(turn.content, turn.stop_reason, turn.model))
        for block in turn.content:
            if block.get("type") == "tool_use":
                self.emit(ev.ToolCall(block["id"], block["name"], block.get("input") or {}))
        self.emit(ev.TurnEnded(turn.stop_reason))
        if turn.stop_reason == "pause_turn":
            self._pause_turn = True  # send the conversation back as it is; the API resumes
        elif turn.stop_reason == "max_tokens":
            for block in self.conv.pending_tool_uses():
                self._tool_result(block, prompts.TRUNCATED_TOOL, True)
            self._user(prompts.MAX_TOKENS_NOTE, "system")
        return None

    def _account(self, turn) -> None:
        model = turn.model or self.cfg.resolved_model()
        price = self.cfg.price_for(model) or self.cfg.price_for(self.cfg.resolved_model())
        cost = cost_usd(turn.tokens, price)
        if cost is None:
            self.priced = False
            cost = 0.0
        self.session_tokens += turn.tokens
        self.session_cost += cost
        self.run.tokens += turn.tokens
        self.run.cost += cost
        t = turn.tokens
        self.emit(ev.Usage(t.input_tokens, t.output_tokens, t.cache_read_tokens, t.cache_write_tokens,
                           round(cost, 6), round(self.session_cost, 6), self.session_tokens.total,
                           priced=price is not None, turn=self.session_turns))

    # ------------------------------------------------------------------ tools

    def _run_tools(self, tool_uses: list[dict]) -> None:
        self._decisions_due = []
        for block in tool_uses:
            if self._stop.is_set():
                self._tool_result(block, "not run: the session was stopped", True)
                continue
            output, is_error = self.toolbox.execute(block["name"], block.get("input") or {})
            self._tool_result(block, output, is_error)
        # Decision points raised by attempts are handled once every tool_use has its result.
        due, self._decisions_due = self._decisions_due, None
        if due and not self._stop.is_set():
            self._decision(due[0].point, due[0].reason)

    def _tool_result(self, block: dict, output: str, is_error: bool) -> None:
        self.conv.add_tool_result(block["id"], output, is_error)
        self.emit(ev.ToolResult(block["id"], block["name"], output, is_error))

    def _kernel_committed(self) -> bool:
        """True when the worktree kernel equals the session branch's HEAD (the last attempt)."""
        import subprocess

        done = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", str(self.files.kernel)],
                              cwd=self.info.worktree, capture_output=True)
        return done.returncode == 0

    def _kernel_sha(self) -> str:
        try:
            return hashlib.sha256(self.files.kernel.read_bytes()).hexdigest()
        except OSError:
            return ""

    def _commit_human_edit(self) -> None:
        """Edits someone made to the kernel outside the agent become their own attempt."""
        attempt = self.store.commit_human_edit(self.id)
        if attempt is not None:
            self._marks[attempt.number] = len(self.conv)
            self.emit(ev.AttemptRecorded(attempt.to_dict(), {}, len(self.conv)))
        self._kernel_known = self._kernel_sha()

    # ToolHost ------------------------------------------------------------

    def before_edit(self) -> None:
        if self._kernel_sha() != self._kernel_known:
            self._commit_human_edit()

    def after_edit(self) -> None:
        self._kernel_known = self._kernel_sha()

    def tool_run_harness(self, mode: str, quick: bool) -> str:
        return self._run_harness(mode, quick, author="agent")

    def tool_list_attempts(self) -> str:
        attempts = self.store.attempts(self.id)
        if not attempts:
            return "no attempts yet"
        lines = []
        for a in attempts:
            sp = "-" if a.speedup is None else f"{a.speedup:.3f}x"
            extra = f", rollback of {a.rollback_of}" if a.rollback_of else ""
            lines.append(f"{a.number}{' (best)' if a.best else ''}: {a.status} {a.correct or ''} {sp} "
                         f"by {a.author}{extra} - {a.summary}")
        return "\n".join(lines)

    def tool_show_attempt(self, ref) -> str:
        a = self._resolve(ref)
        out = [summarize_result(self.store.result(self.id, a.number), a.to_dict())]
        diff = self.store.diff(self.id, a.number, against="previous")
        out.append(f"diff against the previous attempt:\n{diff}" if diff.strip() else "no diff against the previous attempt")
        text = "\n".join(out)
        return text if len(text) <= MAX_SHOW_CHARS else text[:MAX_SHOW_CHARS] + "\n[... cut]"

    def tool_rollback(self, ref) -> str:
        target = self._resolve(ref)
        new = self.store.rollback(self.id, target.number, author="agent")
        self._after_rollback(target.number, new, conversation_len=None)
        return (f"kernel restored to attempt {target.number} (recorded as attempt {new.number}); "
                "the conversation is unchanged")

    def tool_bash(self, command: str) -> str:
        from ks_tui.agent.bash import run_bash

        if self.human_present:
            req = f"bash-{int(time.time() * 1000)}"
            answer: queue.Queue = queue.Queue()
            self._approvals[req] = answer
            self.emit(ev.BashApprovalRequested(req, command))
            self._set_state("waiting_question", "bash approval")
            try:
                ok = answer.get(timeout=self.cfg.question_timeout_s)
            except queue.Empty:
                ok = False
            finally:
                self._approvals.pop(req, None)
                self._set_state("running")
            if not ok:
                raise ToolRefused("the engineer did not approve this command")
        return run_bash(command, self.info.worktree, self.cfg.bash_timeout_s)

    def _resolve(self, ref):
        try:
            return self.store.resolve(self.id, ref)
        except KsError as e:
            raise ToolRefused(e.message) from None

    # ------------------------------------------------------------------ harness and attempts

    def _run_harness(self, mode: str, quick: bool, author: str) -> str:
        from ks_tui.harness.client import run_harness

        if self._kernel_sha() != self._kernel_known and author == "agent":
            author = "human"  # the file changed under the agent: the run is of a person's kernel
        total = len(self.task.quick) if quick else len(self.task.scenarios)
        self.emit(ev.HarnessStarted(mode, quick, total))
        self._cancel_harness.clear()

        def progress(d: dict) -> None:
            p = d.get("progress", d)
            self.emit(ev.HarnessProgress(p.get("done", 0), p.get("total", total), p.get("scenario", ""),
                                         p.get("phase", "")))

        result = run_harness(self.task, self.files.kernel, mode=mode, quick=quick, on_progress=progress,
                             cancel=self._cancel_harness)
        if result.get("status") == "cancelled":
            return "the harness run was cancelled"
        try:
            attempt = self.store.record(self.id, result, author=author, question=self.pending_question,
                                        summary=self._attempt_summary(mode, quick))
        except KsError as e:  # e.g. the kernel changed while the harness ran
            return summarize_result(result, None, note=f"not recorded: {e.message}")
        self._kernel_known = self._kernel_sha()
        if attempt is None:
            return summarize_result(result, None, note="kernel unchanged since the last attempt: no new attempt recorded")
        self._results[attempt.number] = result
        self._marks[attempt.number] = self._mark_now(author)
        self.pending_question = None
        self.emit(ev.AttemptRecorded(attempt.to_dict(), result, self._marks[attempt.number]))
        self._after_attempt(result)
        return summarize_result(result, attempt.to_dict())

    def _mark_now(self, author: str) -> int:
        """Where a rollback to an attempt recorded now cuts the conversation: for the agent's
        run_harness, just after the user message that will hold this turn's tool results."""
        if author == "agent":
            last_assistant = max((i for i, m in enumerate(self.conv.messages) if m["role"] == "assistant"), default=None)
            if last_assistant is not None:
                return last_assistant + 2
        return len(self.conv)

    def _attempt_summary(self, mode: str, quick: bool) -> str:
        texts = [b["text"] for m in reversed(self.conv.messages) if m["role"] == "assistant"
                 for b in m["content"] if b.get("type") == "text" and b.get("text", "").strip()]
        line = texts[0].strip().splitlines()[0] if texts else f"{mode}{' quick' if quick else ''} run"
        return line if len(line) <= 72 else line[:69] + "..."

    def _history(self):
        from ks_tui.questions import from_attempt_dict

        return [from_attempt_dict(a.to_dict(), self._results.get(a.number)) for a in self.store.attempts(self.id)]

    def _after_attempt(self, result: dict) -> None:
        from ks_tui.questions import detect

        history = self._history()
        self.efficacy.settle(self.id, history)
        points = detect(history, "attempt", self.bank.config)
        if points:
            if self._decisions_due is not None:
                self._decisions_due.extend(points)
            else:
                self._decision(points[0].point, points[0].reason)

    def _rollback_with_conversation(self, ref) -> None:
        """The engineer's rollback: the kernel and the conversation go back to that attempt."""
        try:
            target = self.store.resolve(self.id, ref)
        except KsError as e:
            self.emit(ev.ErrorEvent(e.message))
            return
        later = [a for a in self.store.attempts(self.id) if a.number > target.number]
        new = self.store.rollback(self.id, target.number)
        mark = self._marks.get(target.number)
        cut = mark if mark is not None and mark <= len(self.conv) else None
        if cut is not None and Conversation(self.conv.messages[:cut]).pending_tool_uses():
            cut = None  # never leave a tool_use unanswered; keep the conversation whole instead
        if cut is not None:
            self.conv.truncate(cut)
        self._after_rollback(target.number, new, conversation_len=cut)
        undone = [f"attempt {a.number} ({a.status}{'' if a.speedup is None else f', {a.speedup:.3f}x'}: {a.summary})"
                  for a in later if a.rollback_of is None]
        self._user(prompts.rollback_note(target.number, undone), "system")

    def _after_rollback(self, to: int, new, conversation_len: int | None) -> None:
        self._kernel_known = self._kernel_sha()
        self.emit(ev.RolledBack(to, new.number, conversation_len))
        self._results[new.number] = self._results.get(to, {})
        self._marks[new.number] = len(self.conv)
        self.emit(ev.AttemptRecorded(new.to_dict(), {}, len(self.conv)))

    # ------------------------------------------------------------------ questions

    def _decision(self, point: str, reason: str) -> bool:
        """A decision point: offer ranked questions; True when one was sent to the agent."""
        from ks_tui.questions import build_context, human_question, select

        history = self._history()
        last = self._results.get(history[-1].number) if history else None
        context = build_context(history, last, self.task.language)
        ranked = select(self.bank, point, self.asked, self.efficacy.stats(noise=self.bank.config.noise), context, k=3)
        self.emit(ev.DecisionPointReached(point, reason, [q.to_dict() for q in ranked]))
        if not self.human_present:
            if ranked:
                self._ask(ranked[0], "bank", point)
                return True
            return False
        answer = self._wait_answer(self.cfg.question_timeout_s)
        if answer is None:  # nobody answered in time
            if ranked and not self._stop.is_set():
                self._ask(ranked[0], "timeout", point)
                return True
            return False
        if answer.question_id:
            q = self.bank.get(answer.question_id) or next((r for r in ranked if r.id == answer.question_id), None)
            if q is not None:
                self._ask(q, "human", point)
                return True
            self.emit(ev.ErrorEvent(f"no question {answer.question_id!r} in the bank"))
            return False
        if answer.text and answer.text.strip():
            self._ask(human_question(answer.text), "human", point)
            return True
        return False  # skipped

    def _wait_answer(self, timeout: float) -> _Answer | None:
        """Wait for answer_question, running other commands meanwhile. None on timeout/stop."""
        self._set_state("waiting_question")
        deadline = time.monotonic() + timeout
        try:
            while not self._stop.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                try:
                    cmd = self._cmds.get(timeout=min(left, 0.5))
                except queue.Empty:
                    continue
                answer = self._handle(cmd)
                if answer is not None:
                    return answer
            return None
        finally:
            if not self._stop.is_set():
                self._set_state("running" if self.agent_enabled else "human")

    def _wait_for_input(self) -> bool:
        """Human mode, agent idle: wait until a message or question arrives (True) or stop."""
        if self.conv.ready_for_model():  # e.g. a rollback note was added meanwhile
            return True
        self._set_state("idle")
        while not self._stop.is_set():
            try:
                cmd = self._cmds.get(timeout=0.5)
            except queue.Empty:
                continue
            answer = self._handle(cmd)
            if answer is not None and self._inject(answer):
                self._set_state("running")
                return True
            if self.conv.ready_for_model():  # a rollback note, for instance
                return True
        return False

    def _ask(self, q, chosen_by: str, point: str | None) -> None:
        self.efficacy.record_asked(self.id, q, point=point, history=self._history(), chosen_by=chosen_by)
        self.asked.append(q.id)
        self.pending_question = q.id
        self.emit(ev.QuestionAsked(q.id, q.text, q.category, chosen_by))
        self._user(prompts.question_message(q.text), "question")
