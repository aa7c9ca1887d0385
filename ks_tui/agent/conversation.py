"""The conversation sent to the model, and how it is rebuilt from a trace.

Messages are plain dicts in the Messages API shape. The rules the API enforces are kept
here: roles alternate, the assistant's content goes back unchanged, and every tool_use is
answered by a tool_result in the next user message (tool results first, text after).
"""

from __future__ import annotations

import copy
from typing import Any, Iterable

from ks_tui.agent.context import LEVELS, Compaction, compact


class Conversation:
    """Lengths (len, truncate, head) count the messages that compaction removed after the
    first one (`base`), so a length taken before a removal still names the same point."""

    def __init__(self, messages: list[dict] | None = None):
        self.messages: list[dict] = messages or []
        self.base = 0  # messages removed after the first (agent/context.py)

    def __len__(self) -> int:
        return self.base + len(self.messages)

    def head(self, n: int) -> list[dict]:
        """The messages of the conversation as it was at length n (the task's alone when
        the rest of that stretch was removed since)."""
        return self.messages[:max(1, n - self.base)]

    def compact(self, level) -> Compaction:
        done = compact(self.messages, level)
        self.base += done.removed
        return done

    def snapshot(self) -> list[dict]:
        return copy.deepcopy(self.messages)

    def _user_content(self) -> list[dict]:
        """The content list of a trailing user message, created when needed."""
        if not self.messages or self.messages[-1]["role"] != "user":
            self.messages.append({"role": "user", "content": []})
        return self.messages[-1]["content"]

    def add_user_text(self, text: str) -> None:
        self._user_content().append({"type": "text", "text": text})

    def add_tool_result(self, tool_use_id: str, output: str, is_error: bool) -> None:
        content = self._user_content()
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id, "content": output}
        if is_error:
            block["is_error"] = True
        # Tool results must precede any text in the same user message.
        first_text = next((i for i, b in enumerate(content) if b["type"] != "tool_result"), len(content))
        content.insert(first_text, block)

    def add_assistant(self, content: list[dict]) -> None:
        content = copy.deepcopy(sendable(content))
        if not content:
            return  # the API refuses an empty assistant message in the history
        if self.messages and self.messages[-1]["role"] == "assistant":
            # A pause_turn reply was sent back as it was; the API's continuation extends it.
            self.messages[-1]["content"].extend(content)
        else:
            self.messages.append({"role": "assistant", "content": content})

    def pending_tool_uses(self) -> list[dict]:
        """tool_use blocks of the last assistant message not yet answered."""
        if not self.messages:
            return []
        if self.messages[-1]["role"] == "assistant":
            return [b for b in self.messages[-1]["content"] if b.get("type") == "tool_use"]
        if len(self.messages) >= 2 and self.messages[-2]["role"] == "assistant":
            answered = {b.get("tool_use_id") for b in self.messages[-1]["content"] if b.get("type") == "tool_result"}
            return [b for b in self.messages[-2]["content"]
                    if b.get("type") == "tool_use" and b["id"] not in answered]
        return []

    def truncate(self, n: int) -> None:
        del self.messages[len(self.head(n)):]

    def ready_for_model(self) -> bool:
        """True when the last message is the user's and no tool_use waits for its result."""
        return bool(self.messages) and self.messages[-1]["role"] == "user" and not self.pending_tool_uses()

    def request_messages(self) -> list[dict]:
        return self.messages


def sendable(content: list[dict]) -> list[dict]:
    """The blocks of a reply that may go back to the API: it refuses a text block that is
    empty or only whitespace (400 "text content blocks must be non-empty"), which a reply
    can hold, so keeping one would fail every later request of the session."""
    return [b for b in content if b.get("type") != "text" or (b.get("text") or "").strip()]


def conversation_from_events(events: Iterable[dict[str, Any]]) -> Conversation:
    """Fold trace records (event dicts, oldest first) back into the conversation.

    Only events that change the conversation matter: user messages, whole assistant
    messages, tool results, compactions (agent/context.py) and rollbacks (which cut the
    conversation back).
    """
    conv = Conversation()
    for rec in events:
        apply_event(conv, rec)
    return conv


def apply_event(conv: Conversation, rec: dict[str, Any]) -> None:
    """Fold one trace record into the conversation (KeyError/TypeError when it lacks a field)."""
    kind = rec.get("kind")
    ev = rec.get("payload", rec)  # a trace line {time, kind, payload} or a bare event dict
    if kind == "user_message":
        conv.add_user_text(ev["text"])
    elif kind == "assistant_message":
        conv.add_assistant(ev["content"])
    elif kind == "tool_result":
        conv.add_tool_result(ev["id"], ev["output"], ev.get("is_error", False))
    elif kind == "rollback" and ev.get("conversation_len") is not None:
        conv.truncate(ev["conversation_len"])
    elif kind == "context_compacted":
        for level in ev["levels"]:
            conv.compact(LEVELS[level])  # IndexError for a level this version lacks
