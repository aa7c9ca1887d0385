"""Fixtures for the agent tests: a real git workspace with the attention_cpu task, a small
question bank, and the scripted Messages API server on 127.0.0.1."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.fake_messages_api import FakeMessagesAPI

REPO = Path(__file__).resolve().parents[2]

# A small bank, so the tests know which question each decision point brings.
TEST_BANK = """\
version: 1
thresholds:
  plateau_n: 4
  failure_n: 3
  every_n: 8
questions:
  - id: start-where
    text: Where does the time go in this kernel today?
    category: measurement
    points: [session_start]
  - id: stop-layer
    text: Which layer of the system have you not touched yet?
    category: layer
    points: [agent_stop, plateau]
  - id: stop-limit
    text: What limit are you assuming that might not be real?
    category: limit
    points: [agent_stop]
"""


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def make_workspace(root: Path) -> Path:
    ws = root / "ws"
    (ws / "kernels").mkdir(parents=True)
    shutil.copytree(REPO / "kernels" / "attention_cpu", ws / "kernels" / "attention_cpu",
                    ignore=shutil.ignore_patterns("results", "__pycache__"))
    (ws / "question_bank.yaml").write_text(TEST_BANK)
    _git(ws, "init", "-q", "-b", "main")
    _git(ws, "config", "user.name", "Test Engineer")
    _git(ws, "config", "user.email", "test@example.com")
    _git(ws, "add", "-A")
    _git(ws, "commit", "-q", "-m", "workspace")
    return ws


@pytest.fixture
def workspace(tmp_path) -> Path:
    return make_workspace(tmp_path)


@pytest.fixture
def api_env(monkeypatch, tmp_path):
    """Point the SDK at a fresh fake server; keep every retry delay short; no user config."""

    def start(script, **kw) -> FakeMessagesAPI:
        api = FakeMessagesAPI(script, **kw)
        api.start()
        servers.append(api)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        return api

    servers: list[FakeMessagesAPI] = []
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-key")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("KS_TURN_RETRY_DELAY", "0.01")
    monkeypatch.setenv("KS_API_MAX_RETRIES", "2")
    monkeypatch.setenv("KS_MODEL", "claude-opus-4-6")
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    monkeypatch.delenv("KS_WORKSPACE", raising=False)
    yield start
    for api in servers:
        api.close()


def git(cwd: Path, *args: str) -> str:
    return _git(cwd, *args)

