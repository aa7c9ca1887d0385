"""Harness runs and attempts: run the harness on the worktree kernel, record the attempt,
raise the decision points it brings, and roll back (with or without the conversation)."""

from __future__ import annotations

import subprocess
from typing import TYPE_CHECKING, Sequence

from ks_tui import events as ev
from ks_tui.agent import prompts
from ks_tui.agent.conversation import Conversation
from ks_tui.agent.summary import summarize_result
from ks_tui.attempts import kernel_sha256
from ks_tui.engine.session_base import SessionBase
from ks_tui.errors import KsError

if TYPE_CHECKING:
    from ks_tui import workflow
    from ks_tui.attempts.model import Attempt
    from ks_tui.harness.warm import WarmPool
    from ks_tui.questions import AttemptView


class AttemptsMixin(SessionBase):
    """Part of Session (ks_tui/engine/session.py)."""

    def _run_harness(self, mode: str, quick: bool, author: str) -> str:
        from ks_tui import workflow

        if self._kernel_sha() != self._kernel_known and author == "agent":
            author = "human"  # the file changed under the agent: the run is of a person's kernel
        total = len(self.task.quick) if quick else len(self.task.scenarios)
        self.emit(ev.HarnessStarted(mode, quick, total))
        self._cancel_harness.clear()

        def progress(d: dict) -> None:
            p = d.get("progress", d)
            self.emit(ev.HarnessProgress(p.get("done", 0), p.get("total", total), p.get("scenario", ""),
                                         p.get("phase", ""), worker=p.get("worker") or ""))

        result, measured = workflow.run_harness(self.task, self.files.kernel, mode=mode, quick=quick,
                                                on_progress=progress, cancel=self._cancel_harness,
                                                cluster=getattr(self.cfg, "cluster", ""),
                                                pool=self._harness_pool())
        if result.get("status") == "cancelled":
            self.emit(ev.HarnessFinished("cancelled", None, "the harness run was cancelled"))
            return "the harness run was cancelled"
        recorded = self._record(result, author, mode, quick, measured)
        attempt = recorded.attempt
        self.emit(ev.HarnessFinished(result.get("status", ""), attempt.number if attempt else None, recorded.note))
        if attempt is None:
            return summarize_result(result, None, note=recorded.note)
        self._after_attempt(recorded.attempts)
        return summarize_result(result, attempt.to_dict())

    def _harness_pool(self) -> WarmPool | None:
        """The session's pre-started harness child (harness/warm.py): the next run skips the child's start-up
        and torch import. KS_WARM_HARNESS=0 turns it off."""
        from ks_tui.harness.warm import WarmPool, enabled

        if self._warm_pool is None and enabled():
            self._warm_pool = WarmPool()
        return self._warm_pool

    def _close_harness_pool(self) -> None:
        pool, self._warm_pool = self._warm_pool, None
        if pool is not None:
            pool.close()

    def _record(self, result: dict, author: str, mode: str, quick: bool,
                measured: bytes | None = None) -> workflow.Recorded:
        """workflow.record_run under the session lock the engine holds; the event stream is the trace.
        The attempts are read once there: the event's best mark and the question history both come from them."""
        from ks_tui import workflow

        try:
            recorded = workflow.record_run(self.store, self.id, result, measured, author=author,
                                           question=self.pending_question,
                                           summary=self._attempt_summary(mode, quick), trace=False)
        except KsError as e:  # e.g. the kernel changed while the harness ran
            return workflow.Recorded(None, result, note=f"not recorded: {e}")
        self._kernel_known = self._kernel_sha()
        attempt = recorded.attempt
        if attempt is None:
            return recorded
        self.results[attempt.number] = result
        self.marks[attempt.number] = self._mark_now(author)
        self.pending_question = None
        self.emit(ev.AttemptRecorded(attempt.to_dict(), result, self.marks[attempt.number], recorded.best))
        return recorded

    def _best_number(self, attempts: Sequence[Attempt] | None = None) -> int:
        """The attempt the store marks best now (0 when none is), of `attempts` when the caller has them."""
        attempts = self.store.attempts(self.id) if attempts is None else attempts
        return next((a.number for a in attempts if a.best), 0)

    def _mark_now(self, author: str) -> int:
        """Where a rollback to an attempt recorded now cuts the conversation: for the agent's
        run_harness, just after the user message that will hold this turn's tool results."""
        if author == "agent":
            last_assistant = max((i for i, m in enumerate(self.conv.messages) if m["role"] == "assistant"), default=None)
            if last_assistant is not None:
                return self.conv.base + last_assistant + 2
        return len(self.conv)

    def _attempt_summary(self, mode: str, quick: bool) -> str:
        texts = [b["text"] for m in reversed(self.conv.messages) if m["role"] == "assistant"
                 for b in m["content"] if b.get("type") == "text" and b.get("text", "").strip()]
        # The agent's latest words, first paragraph: the commit subject takes 120 characters of it and
        # the commit body keeps it whole (attempts/trailers.py), so nothing it said about the attempt is cut.
        return texts[0].strip().split("\n\n")[0] if texts else f"{mode}{' quick' if quick else ''} run"

    def _history(self, attempts: Sequence[Attempt] | None = None) -> list[AttemptView]:
        """The attempts as the question bank sees them (read from the store unless given)."""
        from ks_tui.questions import views_of

        return views_of(self.store.attempts(self.id) if attempts is None else attempts, self.results)

    def _after_attempt(self, attempts: Sequence[Attempt] | None = None) -> None:
        from ks_tui import workflow
        from ks_tui.questions import detect

        history = self._history(attempts)
        workflow.settle_questions(self.efficacy, self.id, history)
        points = detect(history, "attempt", self.bank.config)
        if not points or self._deciding:  # one decision point at a time: the open one still waits
            return
        if self._decisions_due is not None:  # tools are running: ask once they all have results
            self._decisions_due.extend(points)
        else:
            self._decision(points[0].point, points[0].reason, history)

    def _rollback_with_conversation(self, ref: str | int) -> None:
        """The engineer's rollback: the kernel and the conversation go back to that attempt."""
        try:
            target = self.store.resolve(self.id, ref)
            later = [a for a in self.store.attempts(self.id) if a.number > target.number]
            new = self.store.rollback(self.id, target.number, trace=False)  # RolledBack is its trace line
        except KsError as e:  # an unknown attempt, or the latest one already: say so, keep the session
            self.emit(ev.ErrorEvent(e.message))
            return
        mark = self.marks.get(target.number)
        cut = mark if mark is not None and mark <= len(self.conv) else None
        if cut is not None and Conversation(self.conv.head(cut)).pending_tool_uses():
            cut = None  # never leave a tool_use unanswered; keep the conversation whole instead
        if cut is not None:
            self.conv.truncate(cut)
        self._after_rollback(target.number, new, conversation_len=cut)
        undone = [f"attempt {a.number} ({a.status}{'' if a.speedup is None else f', {a.speedup:.3f}x'}: {a.summary})"
                  for a in later if a.rollback_of is None]
        self._user(prompts.rollback_note(target.number, undone), "system")

    def _after_rollback(self, to: int, new: Attempt, conversation_len: int | None) -> None:
        self._kernel_known = self._kernel_sha()
        self.emit(ev.RolledBack(to, new.number, conversation_len))
        self.results[new.number] = self.results.get(to, {})
        self.marks[new.number] = len(self.conv)
        self.emit(ev.AttemptRecorded(new.to_dict(), {}, len(self.conv), self._best_number()))

    # kernel tracking ------------------------------------------------------------------------

    def _kernel_committed(self) -> bool:
        """True when the worktree kernel equals the session branch's HEAD (the last attempt)."""
        done = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", str(self.files.kernel)],
                              cwd=self.info.worktree, capture_output=True)
        return done.returncode == 0

    def _kernel_sha(self) -> str:
        try:
            return kernel_sha256(self.files.kernel)
        except OSError:
            return ""

    def _commit_human_edit(self) -> None:
        """Edits someone made to the kernel outside the agent become their own attempt."""
        attempt = self.store.commit_human_edit(self.id)
        if attempt is not None:
            self.marks[attempt.number] = len(self.conv)
            self.emit(ev.AttemptRecorded(attempt.to_dict(), {}, len(self.conv), self._best_number()))
        self._kernel_known = self._kernel_sha()

