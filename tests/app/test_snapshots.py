"""Snapshots of the main and history screens at 120x36 and 80x24.

The session is real (git commits in a tmp workspace, the engine in human mode); what would
change from run to run is pinned: commit dates are fixed, the results are recorded ones
(data/), and the generated session id is replaced before the picture is taken.
Update with `pytest tests/app/test_snapshots.py --snapshot-update` after a deliberate change.
"""

from __future__ import annotations

import pytest

from ks_tui.app.app import KernelSeekApp
from ks_tui.app.connect import SessionOpener
from ks_tui.app.screens.history import HistoryScreen
from ks_tui.config import load_config
from tests.app.conftest import seed_session, shown, wait_for

SESSION_LABEL = "20261201-093000-test"


@pytest.fixture
def seeded_app(workspace, fixed_dates):
    store, sid = seed_session(workspace)
    app = KernelSeekApp(opener=SessionOpener(workspace, load_config(workspace), "attention_cpu"), session_id=sid)
    yield app
    # The snapshot ends the app without its quit action (which waits for the engine): the session's thread is still
    # closing the session in the workspace, which a passing test's tmp_path removal would pull from under it.
    if app.backend is not None:
        app.backend.join(30)


async def until_still(pilot) -> None:
    """Let pending layout work (table column widths, scrollbars) finish: two identical frames."""
    previous = None
    for _ in range(100):
        await pilot.pause(0.05)
        frame = pilot.app.export_screenshot()
        if frame == previous:
            return
        previous = frame
    raise AssertionError("the screen never stopped changing")


async def settle_main(pilot) -> None:
    app = pilot.app
    await wait_for(pilot, lambda: app.agent_state == "human", "human mode")
    await wait_for(pilot, lambda: len(app.main_screen.attempts) == 3, "the attempts")
    await wait_for(pilot, lambda: "omp simd" in shown(app, "#diff"), "the diff")
    await wait_for(pilot, lambda: app.main_screen.query_one("#bench-table").row_count == 4, "the results")
    await app.workers.wait_for_complete()
    app.main_screen.query_one("#status").update_info(session=SESSION_LABEL)
    await until_still(pilot)


async def open_history(pilot) -> None:
    app = pilot.app
    await settle_main(pilot)
    await pilot.press("h")
    history = await wait_for(pilot, lambda: isinstance(app.screen, HistoryScreen) and app.screen, "history")
    await wait_for(pilot, lambda: history.query_one("#history-results").row_count == 4, "attempt 3's results")
    await app.workers.wait_for_complete()
    history.session_label = SESSION_LABEL
    history.query_one("#history-title").update(history._title())
    await until_still(pilot)


@pytest.mark.parametrize("size", [(120, 36), (80, 24)], ids=["120x36", "80x24"])
def test_main_screen(snap_compare, seeded_app, size):
    assert snap_compare(seeded_app, terminal_size=size, run_before=settle_main)


@pytest.mark.parametrize("size", [(120, 36), (80, 24)], ids=["120x36", "80x24"])
def test_history_screen(snap_compare, seeded_app, size):
    assert snap_compare(seeded_app, terminal_size=size, run_before=open_history)
