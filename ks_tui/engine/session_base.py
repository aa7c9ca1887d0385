"""What the parts of Session share: the state Session.__init__ sets, and the methods one part calls in another.

Session (session.py) is made of mixins over one state (turns.py, window.py, toolhost.py, runs.py,
decisions.py). Each derives from SessionBase, so a part read alone names what it takes from the others
and a type checker can check it. At run time the class holds only annotations: the method stubs below
exist for the type checker alone, and each is implemented once, in the part or in Session.
"""

from __future__ import annotations

import queue
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

if TYPE_CHECKING:
    from ks_tui import events as ev
    from ks_tui.agent.conversation import Conversation
    from ks_tui.agent.files import TaskFiles
    from ks_tui.agent.loop import ModelCaller
    from ks_tui.agent.tools import ToolBox
    from ks_tui.agent.usage import Spend
    from ks_tui.attempts import AttemptStore
    from ks_tui.attempts.model import Attempt, SessionInfo
    from ks_tui.config import Config
    from ks_tui.engine.decisions import Answer
    from ks_tui.harness.warm import WarmPool
    from ks_tui.questions import AttemptView, Bank, DecisionPoint, EfficacyStore, Question
    from ks_tui.task import Task
    from ks_tui.trace import Trace
    from ks_tui.workflow import Recorded


class SessionBase:
    """The shared state of a Session (set in Session.__init__; see there for what each holds)."""

    workspace: Path
    store: AttemptStore
    info: SessionInfo
    id: str
    cfg: Config
    autonomous: bool
    human_present: bool
    agent_enabled: bool
    task: Task
    bank: Bank
    efficacy: EfficacyStore
    files: TaskFiles
    toolbox: ToolBox
    trace_path: Path
    trace: Trace
    state: ev.AgentState
    run: Spend
    spend: Spend
    end: ev.SessionEnded | None
    conv: Conversation
    resumed: bool
    asked: list[str]
    pending_question: str | None
    marks: dict[int, int]
    results: dict[int, dict]
    _writes_trace: bool
    _subscribers: list[Callable[[ev.Event], None]]
    _sub_lock: threading.Lock
    _stop: threading.Event
    _paused: threading.Event
    _cancel_harness: threading.Event
    _approvals: dict[str, queue.Queue[bool]]
    _thread: threading.Thread | None
    _caller: ModelCaller | None
    _decisions_due: list[DecisionPoint] | None
    _deciding: bool
    _cut_tools: set[str]
    _context_scale: float | None
    _api_window: int | None
    _pause_turn: bool
    _kernel_known: str | None
    _warm_pool: WarmPool | None

    if TYPE_CHECKING:
        # session.py
        def emit(self, event: ev.Event) -> None: ...
        def _set_state(self, state: ev.AgentState, detail: str = "") -> None: ...
        def _user(self, text: str, source: str) -> None: ...
        def _wait_answer(self, timeout: float) -> Answer | None: ...
        def _wait_for_input(self) -> bool: ...

        # turns.py
        def _ensure_caller(self) -> ModelCaller: ...

        # window.py
        def _request_estimate(self) -> int: ...
        def _window(self) -> int: ...
        def _measured(self, prompt_tokens: int, estimate: int) -> None: ...
        def _fit_context(self) -> int: ...
        def _compact_refused(self, tokens: int, limit: int) -> bool: ...
        def _compact(self, reason: str, window: int, raw: int | None = None) -> bool: ...

        # toolhost.py
        def _run_tools(self, tool_uses: list[dict]) -> None: ...
        def _tool_result(self, block: dict, output: str, is_error: bool) -> None: ...

        # runs.py
        def _run_harness(self, mode: str, quick: bool, author: str) -> str: ...
        def _close_harness_pool(self) -> None: ...
        def _record(self, result: dict, author: str, mode: str, quick: bool,
                    measured: bytes | None = None) -> Recorded: ...
        def _best_number(self, attempts: Sequence[Attempt] | None = None) -> int: ...
        def _history(self, attempts: Sequence[Attempt] | None = None) -> list[AttemptView]: ...
        def _after_attempt(self, attempts: Sequence[Attempt] | None = None) -> None: ...
        def _rollback_with_conversation(self, ref: str | int) -> None: ...
        def _after_rollback(self, to: int, new: Attempt, conversation_len: int | None) -> None: ...
        def _kernel_committed(self) -> bool: ...
        def _kernel_sha(self) -> str: ...
        def _commit_human_edit(self) -> None: ...

        # decisions.py
        def _decision(self, point: str, reason: str, history: list[AttemptView] | None = None) -> bool: ...
        def _ask_answer(self, answer: Answer, point: str | None, ranked: Sequence[Question] = ()) -> bool: ...
