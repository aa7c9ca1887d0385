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
    kind = "harness_progress"


@dataclass
class AttemptRecorded(Event):
    """A harness run became a commit. `attempt` is Attempt.to_dict(); `result` the harness JSON."""

    attempt: dict[str, Any]
    result: dict[str, Any] = field(default_factory=dict)
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
    kind = "usage"


@dataclass
class RolledBack(Event):
    to_attempt: int
    new_attempt: int
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
