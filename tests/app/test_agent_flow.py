"""The screen driving a real engine session against the scripted Messages API server:
a question picked by key reaches the agent, and the panels fill as the agent works."""

from __future__ import annotations

import pytest

from ks_tui.app.app import KernelSeekApp
from ks_tui.app.connect import SessionOpener
from ks_tui.app.screens.confirm import ConfirmScreen
from ks_tui.config import load_config
from tests.app.conftest import screen_text, shown, wait_for
from tests.support.fake_messages_api import hang, reply, text, tool_use


def user_texts(request: dict) -> list[str]:
    out = []
    for message in request["messages"]:
        if message["role"] != "user":
            continue
        content = message["content"]
        if isinstance(content, str):
            out.append(content)
        else:
            out.extend(b.get("text", "") for b in content if b.get("type") == "text")
    return out


@pytest.mark.slow
async def test_question_by_key_reaches_agent_and_panels_fill(workspace, fake_api):
    api = fake_api([
        reply(text("I will check the seed kernel on the quick scenarios first."),
              tool_use("run_harness", {"mode": "check", "quick": True})),
        reply(text("The seed is correct; I stop here for now.")),
        reply(text("Good question; let me look at the cache behaviour.")),
    ])
    app = KernelSeekApp(opener=SessionOpener(workspace, load_config(workspace), "attention_cpu"))
    async with app.run_test(size=(120, 36)) as pilot:
        pane = app.main_screen.query_one("#questions")
        await wait_for(pilot, lambda: pane.point == "session_start", "the session_start decision point")
        assert "Where does the time go" in shown(app, "#questions")
        assert app.agent_state == "waiting_question"

        # At 80x24 the footer keeps Pause and Quit, and the tab strip names the panels behind v.
        await pilot.resize_terminal(80, 24)
        await wait_for(pilot, lambda: "Diff  Compile  Benchmark" in screen_text(app).splitlines()[1], "the tab strip")
        await wait_for(pilot, lambda: "p Pause" in screen_text(app).splitlines()[-1], "the narrow footer")
        assert "q Quit" in screen_text(app).splitlines()[-1]
        await pilot.click("#tab-bench-panel")
        await wait_for(pilot, lambda: "╭─ Benchmark" in screen_text(app), "the Benchmark panel, by a click on its tab")
        await pilot.press("v")
        await wait_for(pilot, lambda: "╭─ Diff" in screen_text(app), "the Diff panel again, by v")
        await pilot.resize_terminal(120, 36)

        await pilot.press("1")  # the first ranked question, by number key

        assert await wait_for(pilot, lambda: api.requests, "the first request to the model")
        assert any("Where does the time go in this kernel today?" in t for t in user_texts(api.requests[0]))

        # The agent's text streams into the Agent panel, its tool call and the result follow.
        await wait_for(pilot, lambda: "seed is correct" in shown(app, "#conversation"), "the second reply")
        conversation = shown(app, "#conversation")
        assert "I will check the seed kernel" in conversation
        assert "run_harness(mode=check, quick=true)" in conversation

        # The harness run became attempt 1: status bar, benchmark table, compile panel.
        await wait_for(pilot, lambda: app.main_screen.attempts, "attempt 1")
        status = shown(app, "#status")
        assert "attention_cpu" in status and "1 attempt" in status
        table = app.main_screen.query_one("#bench-table")
        assert table.row_count == 4  # the task's quick scenarios
        assert "correct 4/4" in shown(app, "#bench-headline")
        assert "compiled" in shown(app, "#compile")

        # The agent ended its turn: the next decision point is offered.
        await wait_for(pilot, lambda: pane.point == "agent_stop", "the agent_stop decision point")
        assert "Which layer of the system" in shown(app, "#questions")

        # The human types their own question instead of picking one.
        await pilot.press("i")
        await pilot.press(*"Does the K tile fit in L1?")
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(api.requests) >= 3, "the request carrying the typed question")
        assert any("Does the K tile fit in L1?" in t for t in user_texts(api.requests[2]))
        await wait_for(pilot, lambda: "cache behaviour" in shown(app, "#conversation"), "the answer")
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, "the app to quit")


async def test_quit_asks_while_the_agent_is_mid_turn(workspace, fake_api):
    api = fake_api([hang()])  # the model never answers: the agent stays mid-turn
    app = KernelSeekApp(opener=SessionOpener(workspace, load_config(workspace), "attention_cpu"))
    async with app.run_test(size=(120, 36)) as pilot:
        pane = app.main_screen.query_one("#questions")
        await wait_for(pilot, lambda: pane.point == "session_start", "the first decision point")
        await pilot.press("x")
        await wait_for(pilot, lambda: api.requests and app.agent_state == "running", "the agent mid-turn")

        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the quit confirmation")
        await pilot.press("n")
        await wait_for(pilot, lambda: app.screen is app.main_screen, "the main screen again")
        assert app.is_running and app.agent_state == "running"

        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation again")
        await pilot.press("y")
        await wait_for(pilot, lambda: not app.is_running, "the app to quit")
    # A request still waiting for its first byte cannot be aborted; once the server lets it go,
    # the engine sees the stop the quit sent and ends instead of carrying on.
    api.close()
    assert app.backend.engine.join(timeout=30)
    assert app.backend.engine.end is not None and app.backend.engine.end.reason == "stopped"


async def test_pause_holds_the_agent_until_resumed(workspace, fake_api):
    api = fake_api([reply(text("Resumed and working."))])
    app = KernelSeekApp(opener=SessionOpener(workspace, load_config(workspace), "attention_cpu"))
    async with app.run_test(size=(120, 36)) as pilot:
        pane = app.main_screen.query_one("#questions")
        await wait_for(pilot, lambda: pane.point == "session_start", "the first decision point")
        await pilot.press("p")  # pause first, then let the decision point pass
        await pilot.press("x")
        await wait_for(pilot, lambda: app.agent_state == "paused", "the paused state")
        assert "paused" in shown(app, "#status")
        assert api.requests == []  # the pause came before the model was called

        await pilot.press("p")  # the same key resumes
        await wait_for(pilot, lambda: "Resumed and working." in shown(app, "#conversation"), "the reply")
        assert len(api.requests) == 1
        await pilot.press("q")


@pytest.mark.slow
async def test_bash_needs_approval_in_a_dialog(workspace, fake_api):
    api = fake_api([
        reply(tool_use("bash", {"command": "echo approved-by-human"})),
        reply(tool_use("bash", {"command": "echo refused-one"})),
        reply(text("Understood.")),
    ])
    cfg = load_config(workspace).with_overrides(enable_bash=True)
    app = KernelSeekApp(opener=SessionOpener(workspace, cfg, "attention_cpu"))
    async with app.run_test(size=(120, 36)) as pilot:
        pane = app.main_screen.query_one("#questions")
        await wait_for(pilot, lambda: pane.point == "session_start", "the first decision point")
        await pilot.press("x")

        dialog = await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen, "the dialog")
        assert "echo approved-by-human" in dialog.question
        await pilot.press("y")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen is not dialog,
                       "the second dialog")
        await pilot.press("n")
        await wait_for(pilot, lambda: len(api.requests) >= 3, "both tool results sent back")
    # The test ends the app without its quit action (which waits for the engine): the session's thread still closes
    # the session in the workspace, which a passing test's tmp_path removal would pull from under it.
    if app.backend is not None:
        app.backend.join(30)

    results = [b for m in api.requests[2]["messages"] if m["role"] == "user" and isinstance(m["content"], list)
               for b in m["content"] if b.get("type") == "tool_result"]
    outputs = [str(b.get("content")) for b in results]
    assert any("approved-by-human" in o for o in outputs)
    assert any(b.get("is_error") and "did not approve" in str(b.get("content")) for b in results)
