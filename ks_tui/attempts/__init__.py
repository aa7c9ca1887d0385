"""Attempts as git commits: sessions on their own branch and worktree, history, diff, rollback.

See docs/attempts.md for the layout and docs/internal-apis.md for the seam.
"""

from ks_tui.attempts.model import Attempt, SessionInfo, SessionSummary
from ks_tui.attempts.store import AttemptStore, kernel_sha256

__all__ = ["Attempt", "AttemptStore", "SessionInfo", "SessionSummary", "kernel_sha256"]
