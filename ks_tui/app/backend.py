"""What the screens drive: one session's attempt store and, when running, its engine.

Every method here may block (git, the harness, the engine's locks), so the app only calls
them from thread workers. The engine does the deciding; this is a thin pass-through that
keeps the screens free of store and engine details.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class Backend:
    store: Any                 # ks_tui.attempts.AttemptStore
    session_id: str
    task_name: str
    engine: Any = None         # ks_tui.engine.Session, or None for browsing only

    # ---- reading -------------------------------------------------------------------------
    def attempts(self) -> list[dict[str, Any]]:
        return [a.to_dict() for a in self.store.attempts(self.session_id)]

    def log_view(self):
        """The session's log view (workflow.LogView) at the running bank's thresholds (the defaults
        without an engine): attempts, the best mark, the plateau."""
        from ks_tui import workflow

        bank = getattr(self.engine, "bank", None)
        return workflow.log_view(self.store, self.session_id, bank.config if bank else None)

    def history(self) -> tuple[list[dict[str, Any]], list[str]]:
        """The attempts (as `attempts`) and `ks log`'s plateau lines under its table, from one log view."""
        view = self.log_view()
        if not view.attempts:
            return [], []
        return [a.to_dict() for a in view.attempts], view.plateau_lines()

    def result(self, ref: str | int) -> dict[str, Any]:
        return self.store.result(self.session_id, ref)

    def profile(self, number: int) -> dict[str, Any]:
        """The attempt's kept Nsight Compute summaries (`ks profile N`), {} when none."""
        from ks_tui.harness.profile import load

        return load(self.store.sessions_dir, self.session_id, number)

    def diff(self, ref: str | int, against: str | int) -> str:
        return self.store.diff(self.session_id, ref, against=against)

    def kernel_path(self) -> Path:
        return self.store.kernel_path(self.session_id)

    def sessions(self) -> list[Any]:
        return self.store.sessions()

    # ---- commands ------------------------------------------------------------------------
    def start(self) -> None:
        if self.engine is not None:
            self.engine.start()

    def join(self, timeout: float) -> None:
        if self.engine is not None:
            self.engine.join(timeout)

    def approve_bash(self, request_id: str, ok: bool) -> None:
        if self.engine is not None:
            self.engine.approve_bash(request_id, ok)

    @property
    def has_agent(self) -> bool:
        """An engine with a model behind it (not human mode): something to pause."""
        return self.engine is not None and bool(getattr(self.engine, "agent_enabled", False))

    def run_plan(self):
        """Which run r and R start on this session's task (ks_tui.run_plan.RunPlan); None without an engine."""
        from ks_tui.run_plan import task_plan

        return task_plan(self.engine.task) if self.engine is not None else None

    @property
    def engine_running(self) -> bool:
        """An engine whose loop has not ended (it sets `end` when it finishes)."""
        return self.engine is not None and getattr(self.engine, "end", None) is None

    def remark(self, ref: str | int, text: str) -> None:
        """A person's remark on an attempt (the store's lock-free notes write; no engine involved)."""
        self.store.remark(self.session_id, ref, text, author="human")

    def rollback(self, ref: str | int) -> None:
        # Through a live engine, so the conversation rolls back with the code.
        if self.engine_running:
            self.engine.rollback(ref)
        else:
            self.store.rollback(self.session_id, ref)

    def run_harness_now(self, quick: bool = False) -> None:
        """A bench run (check, then timing) of the worktree kernel, on the quick subset or the full grid as
        the run plan chose (a human edit is committed first by the engine)."""
        if not self.engine_running:
            from ks_tui.errors import KsError

            raise KsError("this session's loop has ended, so nothing runs the harness",
                          hint="open the session again (o) or run `ks try --session ID`")
        self.engine.run_harness_now("bench", quick)

    def answer(self, question_id: str | None, text: str | None) -> None:
        if self.engine is not None:
            self.engine.answer_question(question_id, text)

    def pause(self) -> None:
        if self.engine is not None:
            self.engine.pause()

    def resume(self) -> None:
        if self.engine is not None:
            self.engine.resume()

    def stop(self) -> None:
        if self.engine is not None:
            self.engine.stop()
