"""Human mode (no API key): the kernel is edited in $EDITOR (a real child process), the edit
becomes a human attempt with its harness result, and the bank's questions are offered to
the human at a decision point."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ks_tui.app.app import KernelSeekApp
from ks_tui.app.connect import SessionOpener
from ks_tui.config import load_config
from tests.app.conftest import screen_text, shown, wait_for

# Each run adds one more line that uses an undeclared name, so the kernel changes and fails.
BREAKING_EDITOR = """\
import sys
from pathlib import Path
kernel = Path(sys.argv[1])
source = kernel.read_text()
n = source.count("undeclared_tile")
kernel.write_text(source + f"\\nint broken_{n} = undeclared_tile + {n};\\n")
"""


@pytest.mark.slow
async def test_edits_become_human_attempts_and_questions_are_offered(workspace, base_env, tmp_path):
    editor = tmp_path / "editor.py"
    editor.write_text(BREAKING_EDITOR)
    base_env.setenv("EDITOR", f"{sys.executable} {editor}")
    base_env.delenv("VISUAL", raising=False)

    app = KernelSeekApp(opener=SessionOpener(workspace, load_config(workspace), "attention_cpu"))
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: app.agent_state == "human", "human mode")
        assert "human mode" in shown(app, "#status")
        kernel = Path(app.backend.kernel_path())

        # No agent and no decision point: a typed question is kept for the next attempt.
        await pilot.press("a", *"why so slow", "enter")
        await wait_for(pilot, lambda: "asked (human): why so slow" in shown(app, "#questions"),
                       "the typed question to be taken")

        await pilot.press("e")
        await wait_for(pilot, lambda: len(app.main_screen.attempts) == 1, "the edit to become attempt 1")
        first = app.main_screen.attempts[0]
        assert (first["author"], first["status"]) == ("human", "compile_error")
        assert first["question"].startswith("human-")
        compile_text = shown(app, "#compile")
        assert "compile failed" in compile_text
        broken_line = kernel.read_text().splitlines().index("int broken_0 = undeclared_tile + 0;") + 1
        assert f"kernel.cpp:{broken_line}" in compile_text  # the error names the line
        await wait_for(pilot, lambda: "+int broken_0" in shown(app, "#diff"), "the edit in the Diff panel")

        # Two more failing edits make a failure streak: the bank's questions, offered to the human.
        pane = app.main_screen.query_one("#questions")
        for n in (2, 3):
            await pilot.press("e")
            await wait_for(pilot, lambda n=n: len(app.main_screen.attempts) == n, f"attempt {n}")
        await wait_for(pilot, lambda: pane.point == "failure_streak", "the failure_streak decision point")
        # Nobody waits for the person's pick, and there is no agent to pause.
        assert "human mode" in shown(app, "#status") and "waiting" not in shown(app, "#status")
        assert "p Pause" not in screen_text(app).splitlines()[-1]
        offered = shown(app, "#questions")
        assert "Which layer of the system" in offered and "What limit are you assuming" in offered

        await pilot.press("down", "enter")  # the second question, by arrows and enter
        await wait_for(pilot, lambda: not pane.pending, "the question to be taken")
        await wait_for(pilot, lambda: "What limit are you assuming" in shown(app, "#conversation"),
                       "the question in the conversation")

        # The session's record: three human attempts, the question asked by the human.
        assert [a["author"] for a in app.backend.attempts()] == ["human"] * 3
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, "the app to quit")
    trace = (workspace / "sessions" / app.backend.session_id / "trace.jsonl").read_text()
    assert '"chosen_by": "human"' in trace and "stop-limit" in trace


async def test_diff_against_best_without_a_correct_attempt_says_so(workspace, base_env, tmp_path):
    editor = tmp_path / "editor.py"
    editor.write_text(BREAKING_EDITOR)
    base_env.setenv("EDITOR", f"{sys.executable} {editor}")
    app = KernelSeekApp(opener=SessionOpener(workspace, load_config(workspace), "attention_cpu"))
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: app.agent_state == "human", "human mode")
        await pilot.press("e")
        await wait_for(pilot, lambda: len(app.main_screen.attempts) == 1, "a failing attempt")
        await pilot.press("d")  # against best: there is none yet
        await wait_for(pilot, lambda: "no correct attempt" in shown(app, "#diff"), "the explanation")
        assert not app._notifications or all("no correct" not in n.message for n in app._notifications)
        await pilot.press("q")
