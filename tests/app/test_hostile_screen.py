"""What the session 22 screen audit found: text with brackets drawn as markup (which crashed
the app), a missing kernel that ended the session, screen workers failing in silence, `R R R`
queueing three runs, the history hiding remarks and the summary, and a long bash command cut
off in its approval dialog. Pilot drives the real app, engine, harness (g++) and git."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.widgets import DataTable

from ks_tui import events as ev
from ks_tui.app.app import KernelSeekApp
from ks_tui.app.connect import SessionOpener
from ks_tui.app.screens.confirm import ConfirmScreen
from ks_tui.config import load_config
from tests.app.conftest import DATA, screen_text, seed_session, shown, wait_for
from tests.support.fake_messages_api import reply, text

SEED = (Path(__file__).resolve().parents[2] / "kernels" / "attention_cpu" / "kernel.cpp").read_text()
BRACKETS = ["acc[i] += q[i] * k[j]; then s[/i] done", "close [/] tag", "grep -E '[/b]'"]


async def test_text_with_brackets_is_shown_as_written_and_the_app_stays_up(base_env):
    app = KernelSeekApp()
    async with app.run_test(size=(120, 36), notifications=True) as pilot:  # notifications are drawn too
        await pilot.pause()
        for said in BRACKETS:
            app.post_engine_event(ev.AssistantText(said))
        app.post_engine_event(ev.TextDelta("x[/b] y"))
        app.post_engine_event(ev.ErrorEvent("sed: -e expression #1: unknown option to `s' in 's/[/]/x/'"))
        await pilot.pause(0.5)
        assert app.is_running
        conversation = shown(app, "#conversation")
        for said in [*BRACKETS, "x[/b] y", "'s/[/]/x/'"]:
            assert said in conversation, conversation
        app.post_engine_event(ev.BashApprovalRequested("b1", "grep -E '[/]' kernel.cpp && [ -f x ]"))
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the approval dialog")
        assert "grep -E '[/]' kernel.cpp && [ -f x ]" in shown(app, "#confirm-question")


async def test_the_agents_text_with_a_closing_tag_reaches_the_screen(workspace, fake_api):
    api = fake_api([reply(text("The inner loop reads k[j*d + t]; I will hoist acc[/t] out of it."))])
    app = KernelSeekApp(opener=SessionOpener(workspace, load_config(workspace), "attention_cpu"))
    async with app.run_test(size=(120, 36)) as pilot:
        pane = app.main_screen.query_one("#questions")
        await wait_for(pilot, lambda: pane.point == "session_start", "the first decision point")
        await pilot.press("x")
        await wait_for(pilot, lambda: "acc[/t]" in shown(app, "#conversation"), "the agent's text")
        assert app.is_running and api.requests
        await pilot.press("q")


@pytest.mark.slow
async def test_a_missing_kernel_is_an_error_the_session_survives(workspace, base_env):
    app = KernelSeekApp(opener=SessionOpener(workspace, load_config(workspace), "attention_cpu"))
    async with app.run_test(size=(120, 36), notifications=True) as pilot:
        await wait_for(pilot, lambda: app.agent_state == "human", "human mode")
        kernel = Path(app.backend.kernel_path())
        kernel.unlink()
        await pilot.press("R")
        await wait_for(pilot, lambda: "kernel source not found" in shown(app, "#conversation"), "the error")
        assert app.backend.engine.end is None  # the session goes on
        kernel.write_text(SEED + "// back\n")
        await pilot.press("R")
        await wait_for(pilot, lambda: app.main_screen.attempts, "an attempt of the restored kernel", timeout=240)
        await pilot.press("q")


@pytest.mark.slow
async def test_run_keys_pressed_during_a_run_do_not_queue_repeats(workspace, base_env):
    app = KernelSeekApp(opener=SessionOpener(workspace, load_config(workspace), "attention_cpu"))
    seen, told = [], []
    async with app.run_test(size=(120, 36), notifications=True) as pilot:
        await wait_for(pilot, lambda: app.agent_state == "human", "human mode")
        notify = app.notify
        app.notify = lambda message, **kw: (told.append(message), notify(message, **kw))[1]
        app.backend.engine.subscribe(lambda e: seen.append(e.kind) if e.kind.startswith("harness_") else None)
        Path(app.backend.kernel_path()).write_text(SEED + "// once\n")
        await pilot.press("R", "R", "R")
        await wait_for(pilot, lambda: "harness_finished" in seen, "the run", timeout=240)
        await pilot.pause(2)
        assert seen.count("harness_started") == 1, seen
        assert any("already running" in m for m in told), told
        await pilot.press("q")


async def test_a_failing_screen_worker_becomes_a_notification(workspace, base_env):
    store, sid = seed_session(workspace)
    app = KernelSeekApp(opener=SessionOpener(workspace, load_config(workspace), "attention_cpu"), session_id=sid)
    async with app.run_test(size=(120, 36), notifications=True) as pilot:
        await wait_for(pilot, lambda: app.agent_state == "human", "human mode")

        def broken(*args, **kw):
            raise RuntimeError("git exploded [/x]")
        app.backend.diff = broken
        await pilot.press("d")  # the main screen's diff worker
        await wait_for(pilot, lambda: any("exploded [/x]" in n.message for n in app._notifications),
                       "a notification for the failing worker")
        assert app.is_running
        await pilot.press("q")


def _many_attempts(workspace, n: int):
    from ks_tui.attempts import AttemptStore, kernel_sha256

    store = AttemptStore(workspace)
    sid = store.new_session("attention_cpu").id
    kernel = store.kernel_path(sid)
    base = (DATA / "kernel_a.cpp").read_text()
    result = json.loads((DATA / "bench_kernel_a.json").read_text())
    for i in range(n):
        kernel.write_text(base + f"\n// variant {i}\n")
        store.record(sid, dict(result, kernel_sha256=kernel_sha256(kernel)), author="agent",
                     summary=f"#{i}: tiled the K loop by 64 and moved the rescale out of the inner loop; " * 3,
                     question="What limit are you assuming that might not be real? " * 3 if i % 5 == 0 else None)
    store.remark(sid, n - 1, "re-measured on a quiet machine: 1.02x, not 1.25x [/i]")
    return sid


@pytest.mark.slow
async def test_history_shows_the_summary_column_and_the_selected_attempts_remarks(workspace, base_env):
    sid = _many_attempts(workspace, 12)
    app = KernelSeekApp(opener=SessionOpener(workspace, load_config(workspace), "attention_cpu"), session_id=sid)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: len(app.main_screen.attempts) == 12, "the attempts")
        await pilot.press("h")
        await wait_for(pilot, lambda: app.screen.query("#attempts")
                       and app.screen.query_one("#attempts", DataTable).row_count == 12, "the table")
        await pilot.press("up")  # attempt 11 holds the remark
        await pilot.pause(0.5)
        screen = screen_text(app)
        assert "summary" in screen.splitlines()[1], screen  # a long question no longer pushes it off
        assert "human: re-measured on a quiet" in screen and "1.25x [/i]" in screen, screen  # wrapped in its panel
        await pilot.press("escape", "q")


async def test_a_long_bash_command_can_be_read_from_its_start_before_approval(base_env):
    app = KernelSeekApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        command = ("cat > /tmp/x.sh <<'EOF'\n" + "\n".join(f"echo line {i}" for i in range(40))
                   + "\nEOF\nrm -rf ~/important && bash /tmp/x.sh")
        app.post_engine_event(ev.BashApprovalRequested("b1", command))
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the dialog")
        await pilot.pause(0.3)
        assert "cat > /tmp/x.sh" in screen_text(app)
        assert "(y)" in screen_text(app) and "(n)" in screen_text(app)  # the buttons stay on screen


async def test_escape_from_an_own_question_gives_the_keys_back_where_they_were(base_env):
    app = KernelSeekApp()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        app.main_screen.query_one("#conversation").focus()
        await pilot.pause()
        await pilot.press("a", "w", "h", "y", "escape")
        await pilot.pause()
        assert app.focused is app.main_screen.query_one("#conversation"), app.focused


async def test_editing_with_the_worktree_removed_says_how_to_get_it_back(workspace, base_env, monkeypatch):
    import shutil

    store, sid = seed_session(workspace)
    monkeypatch.setenv("EDITOR", "true")
    app = KernelSeekApp(opener=SessionOpener(workspace, load_config(workspace), "attention_cpu"), session_id=sid)
    told = []
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: app.agent_state == "human", "human mode")
        notify = app.notify
        app.notify = lambda message, **kw: (told.append(message), notify(message, **kw))[1]
        shutil.rmtree(workspace / "sessions" / sid / "worktree")
        app.backend.store._tasks.clear()  # as a fresh process would find it
        await pilot.press("e")
        await wait_for(pilot, lambda: any("has no worktree" in m for m in told), "the message")
        assert app.is_running and any("git worktree prune" in m for m in told)
        await pilot.press("q")


async def test_the_palette_offers_pause_only_with_an_agent(base_env):
    app = KernelSeekApp()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        app.agent_state = "human"
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Pause agent" not in titles and "Resume agent" not in titles and "History" in titles


async def test_a_kernel_with_bytes_that_are_not_utf8_keeps_the_diff_panel_whole(workspace):
    """A byte that is not UTF-8 and control characters (a carriage return, an escape sequence) in the kernel:
    the Diff panel draws them as placeholders and its border stays where it belongs."""
    store, sid = seed_session(workspace)
    kernel = store.kernel_path(sid)
    kernel.write_bytes(kernel.read_bytes() + b"// latin-1 \xe9t\xe9 \xff\rback \x1b[2J cleared\n")
    store.record(sid, None, author="human", summary="a comment in latin-1")
    app = KernelSeekApp(opener=SessionOpener(workspace, load_config(workspace), "attention_cpu"), session_id=sid)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: "latin-1" in shown(app, "#diff"), "the diff of the latin-1 comment")
        await app.workers.wait_for_complete()
        await pilot.pause(0.2)
        assert "+// latin-1 \ufffdt\ufffd \ufffd^Mback ^[[2J cleared" in shown(app, "#diff")
        rows = screen_text(app).splitlines()[1:]
        diff_rows = rows[:next(i for i, r in enumerate(rows) if r.startswith("╰")) + 1]
        assert all(len(r) == 120 and r[59] in "│╮╯" for r in diff_rows), "\n".join(diff_rows)
        await pilot.press("q")
