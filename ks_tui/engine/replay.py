"""What a session's trace says so far: the conversation, the spend and the question state.

A pure fold over trace records, so a killed session resumes exactly where its trace ends.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ks_tui.agent.conversation import Conversation, apply_event
from ks_tui.agent.usage import Spend, TokenCount


@dataclass
class Replayed:
    conv: Conversation
    spend: Spend = field(default_factory=Spend)
    asked: list[str] = field(default_factory=list)       # question ids, oldest first
    pending_question: str | None = None                   # asked, not yet on an attempt
    marks: dict[int, int] = field(default_factory=dict)   # attempt -> conversation length to roll back to
    results: dict[int, dict] = field(default_factory=dict)  # attempt -> its harness result
    agent_kernel: str | None = None     # the kernel's sha256 after the agent's last edit
    cut_tools: set[str] = field(default_factory=set)  # tool_use ids of replies cut by max_tokens
    paused_turn: bool = False           # the last reply stopped with pause_turn: send it back
    context_scale: float | None = None  # API tokens per estimated token, from the last measured request


class TraceEventError(ValueError):
    """A trace record that parses but lacks what its kind needs (an edited or damaged trace)."""


def replay(records: list[dict]) -> Replayed:
    out = Replayed(Conversation())
    for n, rec in enumerate(records, 1):
        try:
            apply_event(out.conv, rec)
            _fold(out, rec)
        except (KeyError, TypeError, AttributeError, ValueError, IndexError) as e:
            raise TraceEventError(f"event {n} ({rec.get('kind')}) lacks what its kind needs: "
                                  f"{type(e).__name__}: {e}") from None
    return out


def _fold(out: Replayed, rec: dict) -> None:
    """The spend, question and attempt state one record changes."""
    kind, p = rec.get("kind"), rec.get("payload", {})
    if kind == "usage":
        out.spend.tokens += TokenCount(p["input_tokens"], p["output_tokens"],
                                       p["cache_read_tokens"], p["cache_write_tokens"])
        out.spend.cost = p.get("session_cost_usd", out.spend.cost)
        out.spend.turns = max(out.spend.turns, p.get("turn", 0))
        out.spend.priced = out.spend.priced and p.get("priced", True)
        if p.get("context_estimate") and p.get("context_tokens"):
            out.context_scale = p["context_tokens"] / p["context_estimate"]
    elif kind == "question":
        out.asked.append(p["question_id"])
        out.pending_question = p["question_id"]
    elif kind == "attempt":
        num = p["attempt"]["number"]
        out.results[num] = p.get("result") or out.results.get(num, {})
        if p.get("conversation_len") is not None:
            out.marks[num] = p["conversation_len"]
        if p["attempt"].get("question"):
            out.pending_question = None
    elif kind == "rollback":  # the restored kernel's result stands for the new attempt too
        out.results[p["new_attempt"]] = out.results.get(p["to_attempt"], {})
    elif kind == "tool_result" and p.get("kernel_sha"):
        out.agent_kernel = p["kernel_sha"]
    if kind == "assistant_message":
        if p.get("stop_reason") == "max_tokens":
            out.cut_tools |= {b["id"] for b in p.get("content", []) if b.get("type") == "tool_use"}
        out.paused_turn = p.get("stop_reason") == "pause_turn"
    elif kind == "user_message":
        out.paused_turn = False
