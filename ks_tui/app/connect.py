"""Opening a session for the screen: the engine Session (new or resumed) and its store.

Kept out of app.py so the screen only ever sees a Backend; the engine decides human mode
(no API key) by itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ks_tui.app.backend import Backend


@dataclass
class SessionOpener:
    workspace: Path
    cfg: Any                    # ks_tui.config.Config
    task_name: str              # for a new session
    use_agent: bool | None = None   # None: the engine decides from the API key
    plan: Any = None                # ks_tui.run_plan.RunPlan of task_name, when the caller has it
    _store: Any = field(default=None, repr=False)
    created: list = field(default_factory=list)  # the engine Sessions this launch made (see run_tui's cleanup)

    def run_plan(self):
        """Which run r and R start on `task_name`, known before the session opens (None if the task does not
        load: the session's own task then decides)."""
        if self.plan is None:
            from ks_tui.errors import KsError
            from ks_tui.run_plan import task_plan
            from ks_tui.task import load_task

            try:
                self.plan = task_plan(load_task(self.task_name, self.workspace))
            except KsError:
                return None
        return self.plan

    def store(self):
        if self._store is None:
            from ks_tui.attempts import AttemptStore

            self._store = AttemptStore(self.workspace)
        return self._store

    def sessions(self) -> list:
        return self.store().sessions()

    def __call__(self, session_id: str | None) -> Backend:
        """A new session of `task_name` when session_id is None, else that session resumed."""
        from ks_tui.engine import Session

        if session_id is None:
            session = Session.create(self.workspace, self.task_name, self.cfg, use_agent=self.use_agent)
            self.created.append(session)
        else:
            session = Session.open(self.workspace, session_id, self.cfg, use_agent=self.use_agent)
        self._store = session.store
        return Backend(store=session.store, session_id=session.id, task_name=session.task.name,
                       engine=session)
