"""Model turns: one streamed request, its stop reason, and what it cost.

Stop reasons (docs/design.md, docs/agent.md): tool_use leaves tool calls for the main loop to run;
end_turn and stop_sequence leave the conversation with the assistant, which the main loop
turns into the agent_stop decision point; max_tokens answers any cut tool call and asks the
model to go on in smaller steps; pause_turn sends the turn back as it is; refusal and
model_context_window_exceeded are not kept and end the agent's run, unless compacting older
turns (window.py) makes room, when the request goes again. An empty reply is not kept
either: the model is asked to go on.
"""

from __future__ import annotations

from ks_tui import events as ev
from ks_tui.agent import prompts
from ks_tui.agent.client import make_client
from ks_tui.agent.conversation import sendable
from ks_tui.agent.providers import model_limits
from ks_tui.agent.tools import tool_schemas
from ks_tui.agent.usage import cost_usd
from ks_tui.engine.session_base import SessionBase

# Turns that cannot be continued: the reply is dropped and the agent's run ends.
DEAD_ENDS = {
    "refusal": "the model declined to continue (refusal)",
    "model_context_window_exceeded":
        "the conversation no longer fits the model's context window: roll back or start a new session",
}


class TurnsMixin(SessionBase):
    """Part of Session (ks_tui/engine/session.py): the model side of the loop."""

    def _ensure_caller(self):
        if self._caller is None:
            from ks_tui.agent.loop import ModelCaller

            system = [{"type": "text", "text": self._system_prompt(), "cache_control": {"type": "ephemeral"}}]
            client = make_client(self.cfg)
            self._caller = ModelCaller(client, self._model_config(client), system,
                                       tool_schemas(self.cfg.enable_bash), stop_event=self._stop)
        return self._caller

    def _model_config(self, client):
        """The config for the model's requests, inside the limits the server states for the model
        (agent/providers.py): a smaller window is kept to as a refusal's would be, and max_tokens
        is lowered to the model's output limit. Without a statement the config decides."""
        window, out = model_limits(client, self.cfg.provider, self.cfg.resolved_model())
        if window:
            self._api_window = min(window, self._api_window or window)
        return self.cfg.with_overrides(max_tokens=out) if out and out < self.cfg.max_tokens else self.cfg

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
        from ks_tui.agent.loop import ContextTooLong, TurnCallbacks, TurnFailed, TurnStopped

        caller = self._ensure_caller()
        estimate = self._request_estimate() if self._pause_turn else self._fit_context()
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
        except ContextTooLong as e:
            if self._compact_refused(e.tokens, e.limit):
                return None  # older turns were compacted: the loop sends the request again
            self.emit(ev.ErrorEvent(f"{e} ({DEAD_ENDS['model_context_window_exceeded']})", recoverable=False))
            return self._wait_or_end("ended: the conversation does not fit the context window")
        except TurnFailed as e:
            self.emit(ev.ErrorEvent(str(e), recoverable=not e.fatal))
            if e.fatal:
                return f"error: {e}"
            return self._wait_or_end(f"api unavailable: {e}")

        self._account(turn, estimate)
        for block in turn.content:
            if block.get("type") == "text" and block.get("text"):
                self.emit(ev.AssistantText(block["text"]))
        if turn.stop_reason == "model_context_window_exceeded" and self._compact("too_long", self._window()):
            self.emit(ev.TurnEnded(turn.stop_reason))  # the cut reply is dropped; ask again with room
            return None
        if turn.stop_reason in DEAD_ENDS:
            self.emit(ev.TurnEnded(turn.stop_reason))
            self.emit(ev.ErrorEvent(DEAD_ENDS[turn.stop_reason], recoverable=False))
            return self._wait_or_end(f"ended: {turn.stop_reason}")
        turn.content = sendable(turn.content)
        if not turn.content:
            # The API refuses an empty assistant message in the history: ask for the rest instead.
            self.emit(ev.TurnEnded(turn.stop_reason))
            self._user(prompts.EMPTY_REPLY_NOTE, "system")
            return None
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

    def _wait_or_end(self, reason: str) -> str | None:
        """The agent cannot go on by itself: a person may roll back or write (None), else end."""
        if not self.human_present:
            return reason
        return None if self._wait_for_input() else "stopped"

    def _account(self, turn, estimate: int) -> None:
        model = turn.model or self.cfg.resolved_model()
        price = self.cfg.price_for(model) or self.cfg.price_for(self.cfg.resolved_model())
        cost = cost_usd(turn.tokens, price)
        self.spend.add(turn.tokens, cost)
        self.run.add(turn.tokens, cost)
        t = turn.tokens
        prompt = t.input_tokens + t.cache_read_tokens + t.cache_write_tokens
        self._measured(prompt, estimate)
        self.emit(ev.Usage(t.input_tokens, t.output_tokens, t.cache_read_tokens, t.cache_write_tokens,
                           round(cost or 0.0, 6), round(self.spend.cost, 6), self.spend.tokens.total,
                           priced=price is not None, turn=self.spend.turns, context_tokens=prompt,
                           context_estimate=estimate, context_window=self._window()))
