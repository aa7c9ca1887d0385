"""Keeping the conversation inside the model's context window (agent/context.py does the cutting).

Before each request the prompt's size is estimated from its characters, scaled by what the
API counted for the last request (API tokens per estimated token). Past `compact_at` of the
window the older turns are compacted, level by level, until the estimate is under half of
that share; a request the API still refuses as too long is compacted with the API's own count
and sent again. Each compaction is one trace record, so a resumed session rebuilds the same
messages, and the model is told in a note what was cleared.
"""

from __future__ import annotations

from ks_tui import events as ev
from ks_tui.agent import prompts
from ks_tui.agent.context import LEVELS, Compaction, estimate_tokens
from ks_tui.engine.session_base import SessionBase


class WindowMixin(SessionBase):
    """Part of Session (ks_tui/engine/session.py): the conversation's size against the window."""

    def _context_tokens(self, raw: int | None = None) -> int:
        """The next request's prompt (or `raw`, an unscaled estimate of it), scaled by the last
        measurement: API tokens per estimated token."""
        return int((self._request_estimate() if raw is None else raw) * (self._context_scale or 1.0))

    def _request_estimate(self) -> int:
        """The unscaled estimate of the request about to go out (kept to calibrate the next)."""
        caller = self._ensure_caller()
        return estimate_tokens(self.conv.messages) + estimate_tokens([caller.system, caller.tools])

    def _window(self) -> int:
        """The configured window, or the API's own when a refusal showed it is smaller."""
        return min(self.cfg.context_window, self._api_window or self.cfg.context_window)

    def _measured(self, prompt_tokens: int, estimate: int) -> None:
        if prompt_tokens > 0 and estimate > 0:
            self._context_scale = prompt_tokens / estimate

    def _fit_context(self) -> int:
        """Compact when the next request would pass compact_at of the window. Returns the
        request's unscaled estimate, which the turn keeps to calibrate the next one."""
        raw = self._request_estimate()
        if self._context_tokens(raw) > self.cfg.compact_at * self._window() and \
                self._compact("threshold", self._window(), raw):
            raw = self._request_estimate()  # the compacted conversation, with the note to the model
        return raw

    def _compact_refused(self, tokens: int, limit: int) -> bool:
        """The API refused the prompt as too long: calibrate on its count and compact.
        True when something was cleared (send the request again)."""
        raw = self._request_estimate()
        if raw > 0:
            self._context_scale = tokens / raw
        self._api_window = limit  # later requests are kept under it too
        return self._compact("too_long", self._window(), raw)

    def _compact(self, reason: str, window: int, raw: int | None = None) -> bool:
        """Apply LEVELS in turn until the estimate is under half of compact_at of `window`.
        `raw`: the unscaled estimate of the conversation as it is, when the caller has it."""
        msgs = self.conv.messages
        if not msgs or msgs[-1]["role"] != "user":  # a pause_turn reply goes back unchanged
            return False
        target = 0.5 * self.cfg.compact_at * window
        before = self._context_tokens(raw)
        done, total, after = [], Compaction(), before
        for i, level in enumerate(LEVELS):
            step = self.conv.compact(level)
            if step.cleared:
                done.append(i)
                total += step
                after = self._context_tokens()
            if after <= target:
                break
        if not done:
            return False
        self.emit(ev.ContextCompacted(done, reason, before, after, window, total.cleared, total.removed))
        self._user(prompts.compacted_note(before, window, total.cleared, total.removed), "system")
        return True
