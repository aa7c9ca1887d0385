"""Keeping a long session inside the model's context window.

Hours of pairing outgrow any window: one read of a 117 kB kernel is ~35k tokens, and each
write_file carries the whole file again. Before a request would pass a share of the window,
the older part of the conversation is compacted in place (`compact`): bulky tool outputs and
the file contents in older tool inputs become one-line stubs, old thinking blocks are dropped,
at the harder levels long old texts are cut, and at the last every message but the task and
the newest 16 is removed (what stubs and texts are left grows with every turn: ~220 tokens a
turn in benchmarks/results/long_session.json, between its removals). The attempt store and the kernel file hold the state
that matters, and the model is told to read again what it needs.

Two properties the rest of the engine relies on:
- `compact` reports how many messages it removed, and the conversation counts them in its
  length (Conversation.base), so the lengths that rollback marks hold stay valid.
- `compact` is a pure function of the messages and its level, so the trace records only the
  level and a resumed session replays it into the same messages.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

# Characters per token for the estimate before any request has been measured. Code and JSON
# run at 3-4 characters a token; erring low makes compaction come early rather than late.
CHARS_PER_TOKEN = 3.0
STUB = "[ks: cleared"  # every stub starts with it; a stub is never cleared again
# Added to the task's message when older messages are removed, with their running count.
REMOVED = "[ks: the {n} messages that followed this one were removed to fit the context window; " \
          "list_attempts and show_attempt hold what was done in them]"
_REMOVED_COUNT = re.compile(re.escape(REMOVED).replace(re.escape("{n}"), r"(\d+)"))


@dataclass(frozen=True)
class Level:
    keep_recent: int  # the newest messages, left whole
    min_chars: int  # tool outputs and tool input strings longer than this are cleared
    text_chars: int | None = None  # old text blocks are cut to this many characters; None: kept
    remove_before: int | None = None  # all messages but the task and this many newest are removed


# Gentlest first; the engine takes the next while the estimate stays above its target.
LEVELS = (Level(8, 2000), Level(4, 400, 4000), Level(2, 120, 400), Level(2, 120, 400, remove_before=16))


@dataclass
class Compaction:
    cleared: int = 0  # blocks cleared, cut or dropped, and messages removed
    removed: int = 0  # messages removed (after the task's)

    def __iadd__(self, other: "Compaction") -> "Compaction":
        self.cleared += other.cleared
        self.removed += other.removed
        return self


def estimate_tokens(obj) -> int:
    """A rough token count of anything JSON can hold (messages, system, tools)."""
    return int(len(json.dumps(obj, ensure_ascii=False)) / CHARS_PER_TOKEN)


def compact(messages: list[dict], level: Level) -> Compaction:
    """Compact, in place, every message but the first (the task) and the newest
    `level.keep_recent`. Returns what was cleared and how many messages were removed."""
    out = Compaction()
    if level.remove_before is not None:
        _remove(messages, level.remove_before, out)
    calls = {b["id"]: b for m in messages if m["role"] == "assistant" for b in m["content"]
             if b.get("type") == "tool_use"}
    older = max(1, len(messages) - level.keep_recent)
    for m in messages[1:older]:
        if m["role"] == "assistant":
            m["content"] = _assistant(m["content"], level, out)
        else:
            m["content"] = [_user_block(b, calls, level, out) for b in m["content"]]
    return out


def _remove(messages: list[dict], keep: int, out: Compaction) -> None:
    """Remove whole assistant/user pairs after the task's message, all but the newest `keep`
    messages, so that no tool_use loses its tool_result: the messages alternate from the
    task's (user, index 0), so the pairs are (1, 2), (3, 4), ..."""
    end = 1 + 2 * max(0, (len(messages) - keep - 1) // 2)
    if end <= 1:
        return
    gone = messages[1:end]
    first = messages[0]["content"]
    ours = [b for b in first if b.get("type") == "text" and _REMOVED_COUNT.fullmatch(b.get("text", ""))]
    found = _REMOVED_COUNT.fullmatch(ours[0]["text"]) if ours else None
    before = int(found.group(1)) if found else 0
    marker = {"type": "text", "text": REMOVED.format(n=before + len(gone))}
    messages[0]["content"] = [b for b in first if b not in ours] + [marker]
    del messages[1:end]
    out.removed += len(gone)
    out.cleared += len(gone)


def _assistant(content: list[dict], level: Level, out: Compaction) -> list[dict]:
    kept = [b for b in content if b.get("type") not in ("thinking", "redacted_thinking")]
    if kept and len(kept) < len(content):  # the API takes old turns without their thinking
        out.cleared += len(content) - len(kept)
        content = kept
    for b in content:
        if b.get("type") == "tool_use" and isinstance(b.get("input"), dict):
            for key, value in b["input"].items():
                if not isinstance(value, str) or len(value) <= level.min_chars or value.startswith(STUB):
                    continue
                stub = f"{STUB}: {len(value)} characters]"
                if len(stub) < len(value):  # every change must save, so repeated compaction ends
                    b["input"][key] = stub
                    out.cleared += 1
        elif b.get("type") == "text":
            _cut_text(b, level, out)
    return content


def _user_block(b: dict, calls: dict[str, dict], level: Level, out: Compaction) -> dict:
    if b.get("type") == "text":
        _cut_text(b, level, out)
        return b
    if b.get("type") != "tool_result":
        return b
    body = _result_text(b.get("content"))
    if len(body) <= level.min_chars or body.startswith(STUB):
        return b
    call = calls.get(b.get("tool_use_id", ""), {})
    stub = (f"{STUB} to fit the context window: {len(body)} characters of output of "
            f"{_call_name(call)}; call the tool again if you need it]")
    if len(stub) >= len(body):  # every change must save, so repeated compaction ends
        return b
    out.cleared += 1
    return {**b, "content": stub}


def _cut_text(b: dict, level: Level, out: Compaction) -> None:
    text = b.get("text") or ""
    if level.text_chars is None or len(text) <= level.text_chars + 100 or STUB in text:
        return
    cut = text[:level.text_chars] + f" {STUB}: {len(text) - level.text_chars} more characters]"
    out.cleared += 1
    b["text"] = cut


def _result_text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(c.get("text", "") if isinstance(c, dict) else str(c) for c in content)
    return ""


def _call_name(call: dict) -> str:
    """read_file(kernel.cu), bash(make ...): the call a stub stands for."""
    name = call.get("name", "a tool")
    given = call.get("input")
    args = given if isinstance(given, dict) else {}
    arg = args.get("path") or args.get("command") or args.get("attempt") or args.get("mode") or ""
    arg = str(arg)
    if arg.startswith(STUB):
        arg = ""
    return f"{name}({arg[:60] + '...' if len(arg) > 60 else arg})"
