"""One model turn: a streaming Messages API call, retried as a whole when the stream fails.

The SDK retries 429/529/5xx and connection errors that happen before a stream starts. An
`event: error` (or a dropped connection) after the stream has started is raised to us
instead; the partial reply is thrown away and the same request is sent again.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from ks_tui.agent.client import describe_api_error, prompt_too_long
from ks_tui.agent.providers import explain_refusal, shape_request
from ks_tui.agent.usage import TokenCount
from ks_tui.config import Config


@dataclass
class Turn:
    content: list[dict]
    stop_reason: str
    tokens: TokenCount
    model: str
    retries: int = 0


class TurnFailed(Exception):
    def __init__(self, message: str, fatal: bool):
        super().__init__(message)
        self.fatal = fatal  # True: retrying cannot help (bad key, unknown model, bad request)


class ContextTooLong(TurnFailed):
    """The API refused the prompt as longer than the context window: compaction can help."""

    def __init__(self, message: str, tokens: int, limit: int):
        super().__init__(message, fatal=True)
        self.tokens = tokens
        self.limit = limit


class StreamCut(Exception):
    """The stream ended without a stop reason: the connection dropped mid-answer."""


class TurnStopped(Exception):
    """The user stopped the session while the model was answering."""


@dataclass
class TurnCallbacks:
    on_text: Callable[[str], None] = lambda s: None
    on_thinking: Callable[[str], None] = lambda s: None
    on_retry: Callable[[str, int, float], None] = lambda msg, n, delay: None  # message, retry number, delay


@dataclass
class ModelCaller:
    client: Any  # the provider's SDK client (agent/providers.py: make_client); requests go as shaped dicts
    cfg: Config
    system: list[dict]
    tools: list[dict]
    stop_event: threading.Event = field(default_factory=threading.Event)
    _stream: Any = None  # the SDK's message stream in flight

    def params(self, messages: list[dict]) -> dict:
        p = {"model": self.cfg.resolved_model(), "max_tokens": self.cfg.max_tokens, "system": self.system,
             "tools": self.tools, "messages": messages,
             # The automatic breakpoint caches the conversation prefix as it grows.
             "cache_control": {"type": "ephemeral"}}
        thinking = self.cfg.thinking_param()
        if thinking:
            p["thinking"] = thinking
        return shape_request(self.cfg.provider, p)

    def abort(self) -> None:
        """Stop the stream in flight (from another thread)."""
        self.stop_event.set()
        stream = self._stream
        if stream is not None:
            try:
                stream.close()
            except Exception:  # closing a half-read response may raise; the reader sees the stop
                pass

    def call(self, messages: list[dict], cb: TurnCallbacks) -> Turn:
        params = self.params(messages)
        retries = 0
        while True:
            if self.stop_event.is_set():
                raise TurnStopped()
            try:
                turn = self._stream_interruptible(params, cb)
                turn.retries = retries
                return turn
            except TurnStopped:
                raise
            except Exception as err:  # SDK errors; classified below
                if self.stop_event.is_set():
                    raise TurnStopped() from None
                msg, retryable = (str(err), True) if isinstance(err, StreamCut) else \
                    describe_api_error(err, params["model"])
                if not retryable:
                    too_long = prompt_too_long(err)
                    if too_long:
                        raise ContextTooLong(msg, *too_long) from None
                    raise TurnFailed(explain_refusal(self.cfg.provider, msg), fatal=True) from None
                if retries >= self.cfg.turn_retries:
                    raise TurnFailed(f"{msg} (gave up after {retries} retries of the turn)", fatal=False) from None
                retries += 1
                delay = self.cfg.turn_retry_delay_s * 2 ** (retries - 1)
                cb.on_retry(msg, retries, delay)
                if self.stop_event.wait(delay):
                    raise TurnStopped() from None

    def _stream_interruptible(self, params: dict, cb: TurnCallbacks) -> Turn:
        """The request runs in a helper thread so that stop() returns at once even while the
        SDK is still waiting for the response to begin (closing a stream cannot reach that)."""
        box: dict = {}

        def work() -> None:
            try:
                box["turn"] = self._stream_once(params, cb)
            except BaseException as e:  # handed to the caller below
                box["error"] = e

        helper = threading.Thread(target=work, name="ks-model-request", daemon=True)
        helper.start()
        while helper.is_alive():
            helper.join(timeout=0.2)
            if self.stop_event.is_set() and helper.is_alive():
                raise TurnStopped()  # the helper ends on its own; its answer is dropped
        if "error" in box:
            raise box["error"]
        return box["turn"]

    def _stream_once(self, params: dict, cb: TurnCallbacks) -> Turn:
        with self.client.messages.stream(**params) as stream:
            self._stream = stream
            try:
                for ev in stream:
                    if self.stop_event.is_set():
                        raise TurnStopped()
                    if ev.type == "text":
                        cb.on_text(ev.text)
                    elif ev.type == "thinking":
                        cb.on_thinking(ev.thinking)
                msg = stream.get_final_message()
            finally:
                self._stream = None
        if msg.stop_reason is None:
            raise StreamCut("the stream ended before its stop reason (connection dropped)")
        content = [b.to_dict(mode="json", exclude_none=True) for b in msg.content]
        return Turn(content, msg.stop_reason, TokenCount.from_sdk(msg.usage), msg.model)


