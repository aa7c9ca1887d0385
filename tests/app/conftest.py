"""Fixtures for the screen's tests: a real workspace made by `ks init` (a git repository
with the bundled tasks) carrying a small question bank, environments with and without an
API key, and helpers to wait for the app and read what it shows."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from tests.support.fake_messages_api import FakeMessagesAPI

DATA = Path(__file__).parent / "data"

# A small bank so each test knows which questions a decision point brings.
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

FIXED_DATE = "2026-12-01T09:30:00+00:00"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def base_env(monkeypatch, tmp_path):
    """No user config, no workspace from the environment, no API key: human mode."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Test Engineer")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "test@example.com")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Test Engineer")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "test@example.com")
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "KS_WORKSPACE"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.fixture
def workspace(base_env, tmp_path) -> Path:
    from ks_tui.workspace import init_workspace

    ws = init_workspace(tmp_path / "ws")
    (ws / "question_bank.yaml").write_text(TEST_BANK)
    git(ws, "commit", "-q", "-am", "a small question bank for the tests")
    return ws


@pytest.fixture
def fixed_dates(base_env):
    """Every commit from here on carries the same date, so attempt times are stable."""
    base_env.setenv("GIT_AUTHOR_DATE", FIXED_DATE)
    base_env.setenv("GIT_COMMITTER_DATE", FIXED_DATE)


@pytest.fixture
def fake_api(base_env):
    """Start the scripted Messages API and point the real SDK at it (agent mode)."""
    servers: list[FakeMessagesAPI] = []

    def start(script) -> FakeMessagesAPI:
        api = FakeMessagesAPI(script)
        api.start()
        servers.append(api)
        base_env.setenv("ANTHROPIC_BASE_URL", api.url)
        base_env.setenv("ANTHROPIC_API_KEY", "sk-test-key")
        base_env.setenv("KS_API_MAX_RETRIES", "0")
        base_env.setenv("KS_TURN_RETRY_DELAY", "0.01")
        return api

    yield start
    for api in servers:
        api.close()


def plain(renderable, width: int = 200) -> str:
    """What a Rich renderable reads as, without styles."""
    console = Console(width=width, record=True, file=open("/dev/null", "w"), color_system=None)
    console.print(renderable)
    return console.export_text()


def shown(app, selector: str) -> str:
    """The plain text of every Static under `selector` on the current screen stack."""
    from textual.widgets import Static

    from textual.widgets import OptionList

    root = app.screen.query_one(selector)
    widgets = [root, *root.query(Static)] if isinstance(root, Static) else list(root.query(Static))
    parts = [plain(w.content) for w in widgets]
    for options in root.query(OptionList):
        parts.extend(plain(options.get_option_at_index(i).prompt) for i in range(options.option_count))
    return "\n".join(parts)


async def wait_for(pilot, condition: Callable[[], object], what: str, timeout: float = 60.0):
    """Let the app run until `condition()` is true; fail naming `what` after `timeout` s."""
    import asyncio

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = condition()
        if value:
            return value
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.05)


# (kernel file in data/, recorded result in data/) for the three attempts of a seeded session
SEEDED_ATTEMPTS = (
    ("kernel_a.cpp", "bench_kernel_a.json"),
    ("broken.cpp", "compile_error.json"),
    ("kernel_b.cpp", "bench_kernel_b.json"),
)


def seed_session(workspace: Path) -> tuple[object, str]:
    """A session whose three attempts hold recorded kernels and results (real git commits)."""
    import json

    from ks_tui.attempts import AttemptStore, kernel_sha256

    store = AttemptStore(workspace)
    sid = store.new_session("attention_cpu").id
    kernel = store.kernel_path(sid)
    for source, result_file in SEEDED_ATTEMPTS:
        kernel.write_text((DATA / source).read_text())
        result = json.loads((DATA / result_file).read_text())
        result["kernel_sha256"] = kernel_sha256(kernel)
        store.record(sid, result, author="human", summary=f"recorded {source}")
    return store, sid
