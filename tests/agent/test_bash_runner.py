"""The agent's bash runner with real bash: a command's background jobs do not outlive it."""

from __future__ import annotations

import pytest

from ks_tui.agent.bash import run_bash
from tests.support.processes import wait_gone

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("launcher", ["", "setsid "], ids=["in-group", "own-session"])
def test_a_background_job_is_killed_when_its_command_ends(tmp_path, launcher):
    out = run_bash(f"{launcher}sleep 300 > /dev/null 2>&1 < /dev/null & echo $! > pid; echo started", tmp_path, 30)
    pid = int((tmp_path / "pid").read_text())
    assert out.startswith("exit code 0; killed 1 process(es) it left running"), out
    assert f"pid {pid}" in out and "started" in out
    assert wait_gone(pid)


def test_a_command_that_leaves_nothing_gets_no_note(tmp_path):
    assert run_bash("echo hi", tmp_path, 30) == "exit code 0\nhi\n"


def test_a_command_past_its_limit_is_killed(tmp_path):
    out = run_bash("echo before; sleep 30", tmp_path, 0.5)
    assert out.startswith("killed after 0.5 s (time limit)") and "before" in out
