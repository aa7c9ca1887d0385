"""Failures stay visible and contained: a worker error becomes a notification while the
app keeps running, and bad input to `ks tui` is one line and exit code 2."""

from __future__ import annotations

import subprocess
import sys

from ks_tui.app.app import KernelSeekApp
from ks_tui.app.connect import SessionOpener
from ks_tui.config import load_config
from tests.app.conftest import wait_for


async def test_a_failing_worker_shows_a_message_and_the_app_keeps_running(workspace):
    # The opener runs in a worker; an unknown session id makes it raise KsError there.
    app = KernelSeekApp(opener=SessionOpener(workspace, load_config(workspace), "attention_cpu"),
                        session_id="20990101-000000-dead")
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: app._notifications, "a notification")
        messages = [n.message for n in app._notifications]
        assert any("no session '20990101-000000-dead'" in m for m in messages), messages
        assert app.is_running and app.backend is None
        await pilot.press("h")  # keys still work, and say why nothing happens
        await wait_for(pilot, lambda: any("no session is open" in n.message for n in app._notifications),
                       "the 'no session' notice")
        await pilot.press("q")


def ks(*args: str, cwd, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ks_tui", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


def test_unknown_session_is_bad_input(workspace):
    out = ks("tui", "--session", "20990101-000000-dead", cwd=workspace)
    assert out.returncode == 2
    assert "no session" in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) <= 2  # the message and at most a hint


def test_unknown_task_is_bad_input(workspace):
    out = ks("tui", "no_such_task", cwd=workspace)
    assert out.returncode == 2 and "Traceback" not in out.stderr


def test_a_workspace_that_is_not_a_git_repository_is_bad_input(base_env, tmp_path):
    folder = tmp_path / "plain"
    (folder / "kernels").mkdir(parents=True)
    out = ks(cwd=folder)  # bare `ks` opens the screen: refused before it takes the terminal
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.startswith("ks: error:")


def test_the_screen_without_a_terminal_is_refused_in_one_line(workspace):
    out = subprocess.run([sys.executable, "-m", "ks_tui", "tui", "attention_cpu"], cwd=workspace, capture_output=True,
                         text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert out.returncode == 2 and "needs a terminal" in out.stderr and "ks run TASK --headless" in out.stderr
    assert out.stdout == "" and not (workspace / "sessions").exists()  # nothing was started


def test_a_keymap_with_an_unknown_binding_id_is_bad_input(workspace):
    (workspace / ".ks").mkdir(exist_ok=True)
    (workspace / ".ks" / "config.toml").write_text('[keymap]\nrun = "f5"\nrunn = "f6"\n')
    out = ks("tui", "attention_cpu", cwd=workspace)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "unknown key binding id 'runn'" in out.stderr and "run-other" in out.stderr  # the known ids
    (workspace / ".ks" / "config.toml").write_text('[keymap]\nrun = 5\n')
    out = ks("tui", "attention_cpu", cwd=workspace)
    assert out.returncode == 2 and "[keymap] must map binding ids to key names" in out.stderr
