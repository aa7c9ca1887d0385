"""The sessions picker (`ks tui --session`, or `o` on the main screen) lists the
workspace's sessions and opens the chosen one."""

from __future__ import annotations

from textual.widgets import DataTable

from ks_tui.app.app import KernelSeekApp
from ks_tui.app.connect import SessionOpener
from ks_tui.app.screens.sessions import SessionsScreen
from ks_tui.config import load_config
from tests.app.conftest import seed_session, shown, wait_for


async def test_picker_lists_sessions_and_opens_the_chosen_one(workspace):
    store, sid = seed_session(workspace)
    other = store.new_session("attention_cpu").id
    app = KernelSeekApp(opener=SessionOpener(workspace, load_config(workspace), "attention_cpu"),
                        pick_session=True)
    async with app.run_test(size=(120, 36)) as pilot:
        picker = await wait_for(pilot, lambda: isinstance(app.screen, SessionsScreen) and app.screen, "the picker")
        table = picker.query_one(DataTable)
        await wait_for(pilot, lambda: table.row_count == 2, "both sessions listed")
        keys = [table.coordinate_to_cell_key((i, 0)).row_key.value for i in range(2)]
        assert sorted(keys) == sorted([sid, other])

        table.move_cursor(row=keys.index(sid))
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.backend is not None and app.backend.session_id == sid, "the session")
        await wait_for(pilot, lambda: "3 attempts" in shown(app, "#status"), "its attempts in the status bar")

        # `o` switches to the other session; the screen follows.
        await pilot.press("o")
        picker = await wait_for(pilot, lambda: isinstance(app.screen, SessionsScreen) and app.screen, "the picker")
        table = picker.query_one(DataTable)
        await wait_for(pilot, lambda: table.row_count == 2, "both sessions listed")
        table.move_cursor(row=[table.coordinate_to_cell_key((i, 0)).row_key.value for i in range(2)].index(other))
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.backend.session_id == other, "the other session")
        await wait_for(pilot, lambda: "0 attempts" in shown(app, "#status"), "an empty history")
        assert app.main_screen.query_one("#bench-table").row_count == 0  # nothing left from the first
        assert "No benchmark yet" in shown(app, "#bench-headline")
        await pilot.press("q")
