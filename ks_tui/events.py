"""Typed events a Session emits; the TUI and the headless runner consume the same stream.

Plain dataclasses, no Textual: the engine must stay importable without a UI. Every event
has `kind` (a stable string, also used as the trace's `kind`) and `to_dict()`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

AgentState = Literal["idle", "running", "waiting_question", "paused", "human", "stopped"]


@dataclass
class Event:
    kind = "event"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, **asdict(self)}


@dataclass
class StateChanged(Event):
    state: AgentState
    detail: str = ""
    kind = "state"


@dataclass
class UserMessage(Event):
    text: str
    source: str = "human"  # human | question | system
    kind = "user_message"


@dataclass
class TextDelta(Event):
    text: str
    kind = "text_delta"


@dataclass
class AssistantText(Event):
    """A finished text block of the assistant (the deltas joined)."""

    text: str
    kind = "assistant_text"


@dataclass
class ToolCall(Event):
    id: str
    name: str
    input: dict[str, Any]
    kind = "tool_call"


@dataclass
class ToolResult(Event):
    id: str
    name: str
    output: str
    is_error: bool = False
    kernel_sha: str | None = None  # the kernel after the agent's write_file / edit_file
    kind = "tool_result"


@dataclass
class HarnessStarted(Event):
    mode: str  # check | bench
    quick: bool
    total: int
    kind = "harness_started"


@dataclass
class HarnessProgress(Event):
    done: int
    total: int
    scenario: str = ""
    phase: str = ""  # compile | check | bench | recheck
    worker: str = ""  # the Dask worker's address, in a run spread over a cluster
    kind = "harness_progress"


@dataclass
class HarnessFinished(Event):
    """Screen-only: the run is over. A recorded run is also an AttemptRecorded."""

    status: str  # the result's status, or "cancelled"
    attempt: int | None = None  # the attempt it was recorded as; None: not recorded
    note: str = ""  # why it was not recorded
    kind = "harness_finished"


@dataclass
class AttemptRecorded(Event):
    """A harness run became a commit. `attempt` is Attempt.to_dict(); `result` the harness JSON."""

    attempt: dict[str, Any]
    result: dict[str, Any] = field(default_factory=dict)
    conversation_len: int | None = None  # where a rollback to this attempt cuts the conversation
    # The attempt the store marks best once this one is recorded (0: none; None: not told). Not always
    # this one or the one before: a run on another device moves the mark to that device's fastest.
    best: int | None = None
    kind = "attempt"


@dataclass
class DecisionPointReached(Event):
    point: str  # session_start | plateau | failure_streak | agent_stop | suspicious_gain | every_n_steps
    reason: str
    questions: list[dict[str, Any]] = field(default_factory=list)  # ranked, Question.to_dict()
    kind = "decision_point"


@dataclass
class QuestionAsked(Event):
    question_id: str
    text: str
    category: str
    chosen_by: str  # human | bank | timeout
    kind = "question"


@dataclass
class Usage(Event):
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float
    session_cost_usd: float
    session_tokens: int
    priced: bool = True  # False: the model has no price in the config; costs read 0
    turn: int = 0  # model turn number within the session
    context_tokens: int = 0  # the request's prompt as the API counted it (input + cache read + write)
    context_estimate: int = 0  # ks's own estimate of that prompt (agent/context.py), for calibration
    context_window: int = 0  # the configured window the prompt must fit
    kind = "usage"


@dataclass
class ContextCompacted(Event):
    """Older turns were compacted to fit the context window (agent/context.py). `levels`
    are indexes into context.LEVELS, applied in order; replaying them rebuilds the messages."""

    levels: list[int]
    reason: str  # threshold (the estimate passed compact_at) | too_long (the API refused the prompt)
    tokens_before: int
    tokens_after: int
    window: int
    cleared: int
    removed: int = 0  # whole messages removed (the last level), counted in the conversation's length
    kind = "context_compacted"


@dataclass
class RolledBack(Event):
    to_attempt: int
    new_attempt: int
    conversation_len: int | None = None  # messages kept; None: the conversation was not cut
    kind = "rollback"


@dataclass
class ErrorEvent(Event):
    message: str
    recoverable: bool = True
    kind = "error"


@dataclass
class TurnEnded(Event):
    stop_reason: str
    kind = "turn_end"


# ---- the engine's events ----


@dataclass
class ThinkingDelta(Event):
    """A piece of the model's visible thinking, streamed (not written to the trace)."""

    text: str
    kind = "thinking_delta"


@dataclass
class AssistantMessage(Event):
    """The assistant's whole content for one turn, exactly as it goes back to the API.

    The trace keeps it so a resumed session rebuilds the same conversation.
    """

    content: list[dict[str, Any]]
    stop_reason: str
    model: str = ""
    kind = "assistant_message"


@dataclass
class BashApprovalRequested(Event):
    """The agent wants to run a shell command; answer with Session.approve_bash(id, ok)."""

    id: str
    command: str
    kind = "bash_approval"


@dataclass
class SessionEnded(Event):
    """The agent loop finished (limit reached, stopped, or a fatal error); a summary."""

    reason: str
    attempts: int
    best_attempt: int | None
    best_speedup: float | None
    turns: int
    tokens: int
    cost_usd: float
    priced: bool = True
    kind = "session_end"


# Events that only drive the screen; the trace does not keep them.
EPHEMERAL_KINDS = frozenset({"text_delta", "thinking_delta", "harness_progress", "harness_finished"})
