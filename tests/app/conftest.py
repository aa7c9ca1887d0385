"""Helpers for the screen's tests: wait for the app, read what it shows, and a session seeded
with recorded attempts. The workspace and the environments (with and without an API key)
are the shared fixtures of tests/conftest.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import io

import pytest
from rich.console import Console

DATA = Path(__file__).parent / "data"

FIXED_DATE = "2026-12-01T09:30:00+00:00"


@pytest.fixture
def fixed_dates(base_env):
    """Every commit from here on carries the same date, so attempt times are stable."""
    base_env.setenv("GIT_AUTHOR_DATE", FIXED_DATE)
    base_env.setenv("GIT_COMMITTER_DATE", FIXED_DATE)


def plain(renderable, width: int = 200) -> str:
    """What a Rich renderable reads as, without styles."""
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    console.print(renderable)
    return console.export_text()


def shown(app, selector: str) -> str:
    """The plain text of every Static under `selector` on the current screen stack."""
    from textual.widgets import OptionList, Static

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


def screen_text(app) -> str:
    """The whole screen as the terminal would show it, as plain text."""
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(seg.text for seg in strip) for strip in strips)
