"""Engine events as a readable stream of lines, for `ks run --headless`."""

from __future__ import annotations

import json
import sys
from typing import TextIO

from ks_tui import events as ev

MAX_ARG_CHARS = 60
MAX_RESULT_LINES = 6


def _short(value, n: int = MAX_ARG_CHARS) -> str:
    s = value if isinstance(value, str) else json.dumps(value)
    s = s.replace("\n", "\\n")
    return s if len(s) <= n else s[: n - 3] + "..."


def format_tool_call(name: str, args) -> str:
    if not isinstance(args, dict):  # the model sent no object: show what it sent (the tool refuses it)
        return f"-> {name}({_short(args)})"
    inner = ", ".join(f"{k}={_short(v)}" for k, v in args.items())
    return f"-> {name}({inner})"


def format_speedup(x) -> str:
    return "-" if x is None else f"{x:.3f}x"


class HeadlessPrinter:
    """Subscribe `printer` to a Session; it writes one readable line (or block) per event."""

    def __init__(self, out: TextIO | None = None, stream_text: bool = True):
        self.out = out or sys.stdout
        self.stream_text = stream_text
        self._mid_text = False  # a streamed text line is open

    def _line(self, s: str = "") -> None:
        if self._mid_text:
            self.out.write("\n")
            self._mid_text = False
        self.out.write(s + "\n")
        self.out.flush()

    def __call__(self, e: ev.Event) -> None:
        if isinstance(e, ev.TextDelta):
            if self.stream_text:
                self.out.write(e.text)
                self.out.flush()
                self._mid_text = True
        elif isinstance(e, ev.AssistantText):
            if not self.stream_text:
                self._line(f"assistant: {e.text}")
            elif self._mid_text:
                self._line()
        elif isinstance(e, ev.UserMessage):
            label = {"question": "question", "system": "ks"}.get(e.source, "you")
            self._line(f"[{label}] {e.text.removeprefix('[ks] ')}")  # ks's notes to the model carry the tag already
        elif isinstance(e, ev.ToolCall):
            self._line(format_tool_call(e.name, e.input))
        elif isinstance(e, ev.ToolResult):
            lines = e.output.splitlines() or [""]
            head = "<- error: " if e.is_error else "<- "
            shown = lines[:MAX_RESULT_LINES] + ([f"   ... {len(lines) - MAX_RESULT_LINES} more lines"]
                                                 if len(lines) > MAX_RESULT_LINES else [])
            self._line(head + shown[0] + "".join("\n   " + ln for ln in shown[1:]))
        elif isinstance(e, ev.HarnessStarted):
            self._line(f"   harness: {e.mode}{' quick' if e.quick else ''}, {e.total} scenarios")
        elif isinstance(e, ev.AttemptRecorded):
            a = e.attempt
            q = f", after question {a['question']}" if a.get("question") else ""
            self._line(f"== attempt {a['number']} ({a.get('author')}): {a.get('status')} {a.get('correct') or ''} "
                       f"{format_speedup(a.get('speedup'))}{q}")
        elif isinstance(e, ev.DecisionPointReached):
            self._line(f"?? decision point {e.point}: {e.reason}")
            for i, offered in enumerate(e.questions, 1):
                self._line(f"   {i}. [{offered['id']}] {offered['text']}")
        elif isinstance(e, ev.QuestionAsked):
            self._line(f"?? asked {e.question_id} ({e.category}, chosen by {e.chosen_by})")
        elif isinstance(e, ev.Usage):
            cost = (f"${e.cost_usd:.4f} (session ${e.session_cost_usd:.4f})" if e.priced
                    else "cost unpriced (no price for the model in the config)")
            window = f"; context {e.context_tokens / e.context_window:.0%} of {e.context_window}" \
                if e.context_window and e.context_tokens else ""
            self._line(f"   turn {e.turn}: {e.input_tokens} in, {e.output_tokens} out, "
                       f"{e.cache_read_tokens} cache read, {e.cache_write_tokens} cache write; {cost}{window}")
        elif isinstance(e, ev.ContextCompacted):
            removed = f" ({e.removed} messages removed)" if e.removed else ""
            self._line(f"   context: {e.cleared} older items cleared{removed}, about {e.tokens_before} -> "
                       f"{e.tokens_after} of {e.window} tokens ({e.reason})")
        elif isinstance(e, ev.RolledBack):
            self._line(f"== rolled back to attempt {e.to_attempt} (new attempt {e.new_attempt})")
        elif isinstance(e, ev.BashApprovalRequested):
            self._line(f"?? bash approval: {e.command}")
        elif isinstance(e, ev.ErrorEvent):
            self._line(f"!! {e.message}")
        elif isinstance(e, ev.TurnEnded):
            if e.stop_reason not in ("tool_use", "end_turn"):
                self._line(f"   (turn ended: {e.stop_reason})")
        elif isinstance(e, ev.SessionEnded):
            self._line()
            self._line(summary_text(e))


def summary_text(e: ev.SessionEnded) -> str:
    cost = f"${e.cost_usd:.4f}" if e.priced else \
        ("unpriced (no price for the model in the config)" if not e.cost_usd else
         f"${e.cost_usd:.4f} and some turns unpriced (no price for their model in the config)")
    best = f"{format_speedup(e.best_speedup)} (attempt {e.best_attempt})" if e.best_attempt else "none correct and timed"
    return "\n".join([f"session ended: {e.reason}",
                      f"  attempts: {e.attempts}",
                      f"  best speedup: {best}",
                      f"  model turns: {e.turns}",
                      f"  tokens: {e.tokens}",
                      f"  cost: {cost}"])
