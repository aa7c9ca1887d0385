"""`ks` in a real terminal (tmux): it draws the main screen on attention_cpu, `q` quits
with exit code 0, and the terminal is given back (alternate screen off, cursor shown)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def tmux(socket: str, *args: str) -> str:
    """tmux on its own server, whose socket is a file in the test's tmp folder."""
    return subprocess.run(["tmux", "-S", socket, *args], capture_output=True, text=True, timeout=30).stdout


def wait_pane(socket: str, needle: str, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    pane = ""
    while time.monotonic() < deadline:
        pane = tmux(socket, "capture-pane", "-p", "-t", "ks")
        if needle in pane:
            return pane
        time.sleep(0.2)
    raise AssertionError(f"{needle!r} never appeared; the pane showed:\n{pane}")


def test_ks_opens_the_main_screen_and_q_restores_the_terminal(workspace, tmp_path):
    socket = str(tmp_path / "tmux.sock")
    command = f"{sys.executable} -m ks_tui; echo KS-EXIT=$?; sleep 30"
    tmux(socket, "new-session", "-d", "-s", "ks", "-x", "120", "-y", "36", "-c", str(workspace), command)
    try:
        pane = wait_pane(socket, "human mode")
        for title in ("Diff", "Compile", "Benchmark", "Questions", "Agent"):
            assert title in pane
        assert "attention_cpu" in pane
        assert tmux(socket, "display", "-p", "-t", "ks", "#{alternate_on}").strip() == "1"

        tmux(socket, "send-keys", "-t", "ks", "q")
        pane = wait_pane(socket, "KS-EXIT=")
        assert "KS-EXIT=0" in pane
        assert "Traceback" not in pane
        state = tmux(socket, "display", "-p", "-t", "ks", "#{alternate_on} #{cursor_flag}").split()
        assert state == ["0", "1"]  # back on the normal screen with a visible cursor
    finally:
        tmux(socket, "kill-server")


CRASHING_APP = """\
import sys
from pathlib import Path
from ks_tui.app.app import KernelSeekApp
from ks_tui.app.connect import SessionOpener
from ks_tui.config import load_config

class Crashing(KernelSeekApp):
    def action_history(self):  # a bug in a key handler, with the engine thread running
        raise RuntimeError("planted failure")

ws = Path(sys.argv[1])
app = Crashing(opener=SessionOpener(ws, load_config(ws), "attention_cpu", use_agent=False))
app.run()
sys.exit(app.return_code or 0)
"""


def test_an_exception_still_gives_the_terminal_back(workspace, tmp_path):
    script = tmp_path / "crashing_app.py"
    script.write_text(CRASHING_APP)
    socket = str(tmp_path / "tmux.sock")
    command = f"{sys.executable} {script} {workspace}; echo KS-EXIT=$?; sleep 30"
    tmux(socket, "new-session", "-d", "-s", "ks", "-x", "120", "-y", "36", "-c", str(workspace), command)
    try:
        wait_pane(socket, "human mode")
        tmux(socket, "send-keys", "-t", "ks", "h")
        pane = wait_pane(socket, "KS-EXIT=")
        assert "planted failure" in pane  # the traceback is printed on the normal screen
        assert "KS-EXIT=0" not in pane
        state = tmux(socket, "display", "-p", "-t", "ks", "#{alternate_on} #{cursor_flag}").split()
        assert state == ["0", "1"]
    finally:
        tmux(socket, "kill-server")
