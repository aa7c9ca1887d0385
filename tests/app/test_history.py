"""The history screen over a real session: it lists every attempt, shows one's diff and
results, compares two, and rolls back through the engine after a confirmation."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable

from ks_tui.app.app import KernelSeekApp
from ks_tui.app.connect import SessionOpener
from ks_tui.app.screens.history import HistoryScreen
from ks_tui.attempts import kernel_sha256
from ks_tui.attempts.model import short_device
from ks_tui.config import load_config
from tests.app.conftest import seed_session, shown, wait_for


async def open_history(app, pilot, rows: int):
    """Wait for the session to open in human mode, open the history screen, wait until it lists ROWS attempts."""
    await wait_for(pilot, lambda: app.agent_state == "human", "the session to open in human mode")
    await pilot.press("h")
    history = await wait_for(pilot, lambda: isinstance(app.screen, HistoryScreen) and app.screen, "history")
    table = history.query_one("#attempts", DataTable)
    await wait_for(pilot, lambda: table.row_count == rows, f"{rows} attempts listed")
    return history, table


@pytest.mark.slow
async def test_history_lists_attempts_compares_and_rolls_back(workspace):
    store, sid = seed_session(workspace)
    opener = SessionOpener(workspace, load_config(workspace), "attention_cpu")
    app = KernelSeekApp(opener=opener, session_id=sid)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: app.agent_state == "human", "the session to open in human mode")
        await pilot.press("h")
        history = await wait_for(pilot, lambda: isinstance(app.screen, HistoryScreen) and app.screen,
                                 "the history screen")
        table = history.query_one("#attempts", DataTable)
        await wait_for(pilot, lambda: table.row_count == 3, "three attempts listed")
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(3)]
        assert [r[0].strip() for r in rows] == ["★1", "2", "3"]  # attempt 1 is the fastest correct one
        assert [r[3] for r in rows] == ["correct", "compile_error", "correct"]
        assert all(r[2] == "human" for r in rows)

        # The latest is selected: its diff against the previous attempt and its results.
        await wait_for(pilot, lambda: "#3 vs previous" in str(history.query_one("#history-diff-panel").border_title),
                       "attempt 3's diff")
        assert "omp simd" in shown(app, "#history-diff")
        assert history.query_one("#history-results").row_count == 4

        # Compare: mark attempt 3, move to attempt 1, compare.
        await pilot.press("c")
        await pilot.press("up", "up")
        await pilot.press("c")
        await wait_for(pilot, lambda: "#1 vs #3" in str(history.query_one("#history-diff-panel").border_title),
                       "the comparison of attempts 1 and 3")
        assert "omp simd" in shown(app, "#history-diff")

        # Roll back to attempt 1: asks first, then a new attempt holds attempt 1's kernel.
        await pilot.press("r")
        await wait_for(pilot, lambda: app.screen.__class__.__name__ == "ConfirmScreen", "the confirmation")
        await pilot.press("y")
        await wait_for(pilot, lambda: table.row_count == 4, "the rollback attempt in the list")
        attempts = store.attempts(sid)
        assert attempts[-1].rollback_of == 1
        assert store.kernel_path(sid).read_bytes() == store.kernel_at(sid, 1)
        assert "rollback of #1" in [str(c) for c in table.get_row_at(3)]
        # The list was read again (at once, and when the new attempt arrived): the cursor stays on the
        # attempt rolled back to, so the next remark lands on it.
        await app.workers.wait_for_complete()
        await pilot.pause(0.2)
        assert history.selected == 1 and table.cursor_row == 0
        await pilot.press("m")
        await wait_for(pilot, lambda: app.screen.__class__.__name__ == "RemarkScreen", "the remark box")
        await pilot.press(*"why we went back", "enter")
        await wait_for(pilot, lambda: store.attempts(sid)[0].remarks, "the remark on attempt 1")
        assert [a.number for a in store.attempts(sid) if a.remarks] == [1]

        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.main_screen, "the main screen again")
        await wait_for(pilot, lambda: "4 attempts" in shown(app, "#status"), "the status bar to count 4")
        await pilot.press("q")


@pytest.mark.slow
async def test_history_from_the_command_palette_and_a_declined_rollback(workspace):
    store, sid = seed_session(workspace)
    app = KernelSeekApp(opener=SessionOpener(workspace, load_config(workspace), "attention_cpu"), session_id=sid)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: app.backend is not None, "the session")
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: app.screen.__class__.__name__ == "CommandPalette", "the command palette")
        await pilot.press(*"History")

        def first_hit() -> str:
            from textual.command import CommandList

            hits = app.screen.query(CommandList)
            if not hits or hits.first().option_count == 0 or hits.first().highlighted is None:
                return ""
            return str(hits.first().get_option_at_index(hits.first().highlighted).prompt)

        await wait_for(pilot, lambda: "History" in first_hit(), "the History command in the palette")
        await pilot.press("enter")
        history = await wait_for(pilot, lambda: isinstance(app.screen, HistoryScreen) and app.screen, "history")
        table = history.query_one("#attempts", DataTable)
        await wait_for(pilot, lambda: table.row_count == 3, "three attempts listed")
        await pilot.press("up", "r")
        await wait_for(pilot, lambda: app.screen.__class__.__name__ == "ConfirmScreen", "the confirmation")
        await pilot.press("n")
        await wait_for(pilot, lambda: app.screen is history, "back on the history screen")
        assert len(store.attempts(sid)) == 3


@pytest.mark.slow
async def test_history_shows_an_attempts_remarks(workspace):
    store, sid = seed_session(workspace)
    store.remark(sid, 1, "its speedup was a noisy baseline; re-measured 0.98x")
    kernel = store.kernel_path(sid)
    kernel.write_text(kernel.read_text() + "// unrolled by hand\n")
    long = "a hand edit whose summary runs past the column: " + "the inner loop unrolled by four, " * 5 + "unchecked"
    store.record(sid, None, author="human", summary=long)
    app = KernelSeekApp(opener=SessionOpener(workspace, load_config(workspace), "attention_cpu"), session_id=sid)
    async with app.run_test(size=(120, 36)) as pilot:
        history, table = await open_history(app, pilot, rows=4)
        summaries = [str(table.get_row_at(i)[-1]) for i in range(4)]
        assert summaries[0].startswith("✎ ") and not any(s.startswith("✎") for s in summaries[1:])
        remarks = history.query_one("#history-notes")
        # The latest: its summary, cut in the table, is shown whole.
        await wait_for(pilot, lambda: remarks.display and "unchecked" in shown(app, "#history-notes"),
                       "attempt 4's whole summary")
        assert " ".join(shown(app, "#history-notes").split()) == long and summaries[3].endswith("…")
        await pilot.press("up")
        await wait_for(pilot, lambda: "#3 vs previous" in str(history.query_one("#history-diff-panel").border_title),
                       "attempt 3 shown")
        await wait_for(pilot, lambda: not remarks.display, "attempt 3 has no remarks and a short summary")
        await pilot.press("up", "up")
        await wait_for(pilot, lambda: remarks.display and "re-measured 0.98x" in shown(app, "#history-notes"),
                       "attempt 1's remark")
        assert "human: its speedup was a noisy baseline" in shown(app, "#history-notes")

        # `m` adds one from the screen: an empty one is refused, Escape adds none, Enter saves.
        await pilot.press("m")
        await wait_for(pilot, lambda: app.screen.__class__.__name__ == "RemarkScreen", "the remark box")
        await pilot.press("enter")
        assert app.screen.__class__.__name__ == "RemarkScreen"  # nothing typed: still asking
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is history, "back without a remark")
        assert len(store.attempts(sid)[0].remarks) == 1
        await pilot.press("m")
        await wait_for(pilot, lambda: app.screen.__class__.__name__ == "RemarkScreen", "the remark box again")
        await pilot.press(*"same in call 2", "enter")
        await wait_for(pilot, lambda: "same in call 2" in shown(app, "#history-notes"), "the new remark shown")
        assert [r["text"] for r in store.attempts(sid)[0].remarks][-1] == "same in call 2"
        assert table.row_count == 4 and history.selected == 1
        await pilot.press("q")


async def test_history_names_the_device_of_runs_the_session_has_moved_from(workspace):
    store, sid = seed_session(workspace)
    first = store.result(sid, 1)
    kernel = store.kernel_path(sid)
    kernel.write_text(kernel.read_text() + "// measured on the new box\n")
    store.record(sid, dict(first, device="NVIDIA H100 80GB HBM3", kernel_sha256=kernel_sha256(kernel)),
                 author="human", summary="the same kernel on another machine")
    app = KernelSeekApp(opener=SessionOpener(workspace, load_config(workspace), "attention_cpu"), session_id=sid)
    async with app.run_test(size=(160, 36)) as pilot:
        _, table = await open_history(app, pilot, rows=4)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(4)]
        assert [r[0].strip() for r in rows] == ["1", "2", "3", "★4"]  # the only run on the new machine
        # The two timed runs on the old machine say where; the compile error was measured nowhere.
        # the tag is `ks log`'s (short_device: here a CPU and an NVIDIA card share no word, so the whole name)
        old = short_device(first["device"], (first["device"], "NVIDIA H100 80GB HBM3"))
        assert [r[-1].startswith(f"[on {old}] ") for r in rows] == [True, False, True, False]
        assert rows[1][-1].startswith("recorded broken.cpp") and rows[3][-1].startswith("the same kernel")
        await pilot.press("q")


async def test_history_says_why_the_best_mark_is_no_gain(workspace):
    """Session 29's shape on the screen: a run timed beside the best kernel's (one pair tag) reads the fastest of the
    session by less than the bank's paired_noise, so it takes the mark without being a gain; the lines under the
    table say so, as `ks log` does."""
    store, sid = seed_session(workspace)
    first = store.result(sid, 1)
    kernel = store.kernel_path(sid)
    top = first["geomean_speedup"]
    for n, (speedup, what) in enumerate(((top * 0.999, "the best kernel again"), (top * 1.002, "a candidate"))):
        if n == 0:
            kernel.write_bytes(store.kernel_at(sid, 1))
        else:
            kernel.write_text(kernel.read_text() + "static int candidate;  // the candidate\n")  # new code
        store.record(sid, dict(first, geomean_speedup=speedup, pair="call2:1", kernel_sha256=kernel_sha256(kernel)),
                     author="human", summary=what)
    app = KernelSeekApp(opener=SessionOpener(workspace, load_config(workspace), "attention_cpu"), session_id=sid)
    async with app.run_test(size=(160, 40)) as pilot:
        history, table = await open_history(app, pilot, rows=5)
        assert str(table.get_row_at(4)[0]).strip() == "★5"
        await wait_for(pilot, lambda: "leads" in shown(app, "#history-plateau"), "the plateau lines")
        lines = shown(app, "#history-plateau").splitlines()
        assert lines[0].startswith("(last gain above the ") and "#1; 4 attempts since)" in lines[0]
        assert lines[1] == "(#5 leads #4, timed in the same call, by +0.30%: inside the 0.5% same-call noise, so no gain)"
        await pilot.press("q")

