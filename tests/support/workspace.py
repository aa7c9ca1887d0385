"""Test workspaces for the agent and screen tests: a real git repository made by `ks init`,
a fixed git identity, and a small question bank, so each test knows which questions a
decision point brings."""

from __future__ import annotations

import subprocess
from pathlib import Path

GIT_IDENTITY = {"GIT_AUTHOR_NAME": "Test Engineer", "GIT_AUTHOR_EMAIL": "test@example.com",
                "GIT_COMMITTER_NAME": "Test Engineer", "GIT_COMMITTER_EMAIL": "test@example.com"}

# Variables that would make a test depend on the machine it runs on.
HOST_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "KS_WORKSPACE", "KS_PROVIDER",
             "ANTHROPIC_BEDROCK_BASE_URL", "ANTHROPIC_VERTEX_BASE_URL", "AWS_BEARER_TOKEN_BEDROCK", "AWS_REGION",
             "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
             "CLOUD_ML_REGION", "ANTHROPIC_VERTEX_PROJECT_ID", "GOOGLE_APPLICATION_CREDENTIALS", "KS_CLUSTER")

TEST_BANK = """\
version: 1
thresholds:
  plateau_n: 4
  failure_n: 3
  every_n: 50
questions:
  - id: start-where
    text: Where does the time go in this kernel today?
    category: measurement
    points: [session_start]
  - id: stop-layer
    text: Which layer of the system have you not touched yet?
    category: layer
    points: [agent_stop, plateau, failure_streak]
  - id: stop-limit
    text: What limit are you assuming that might not be real?
    category: limit
    points: [agent_stop, failure_streak]
"""


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def make_workspace(root: Path, bank: str | None = TEST_BANK) -> Path:
    """`ks init root/ws`, with the test bank committed (None keeps the bundled bank).
    Needs a git identity in the environment (GIT_IDENTITY)."""
    from ks_tui.workspace import init_workspace

    ws = init_workspace(root / "ws")
    if bank is not None:
        (ws / "question_bank.yaml").write_text(bank)
        git(ws, "commit", "-q", "-am", "a small question bank for the tests")
    return ws
