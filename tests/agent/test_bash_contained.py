"""Planted bash commands: a daemon holding the output, a credential hunt, a stop while a daemon holds the pipe.
Each is contained or its output cleaned, in whatever sandbox mode this machine gives (harness/sandbox.py)."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

import pytest

from ks_tui.agent.bash import run_bash
from ks_tui.harness.secret_env import child_environ, redact, secret_values

pytestmark = pytest.mark.timeout(120)
KEY = "sk-ant-planted-" + "5" * 24


def _tagged(tag: str) -> list[int]:
    out = []
    for e in Path("/proc").iterdir():
        try:
            if e.name.isdigit() and tag.encode() in (e / "cmdline").read_bytes():
                out.append(int(e.name))
        except OSError:
            pass
    return out


def _gone(tag: str, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while _tagged(tag):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.parametrize("scrub", ["", "env -i "], ids=["marked", "scrubbed-env"])
def test_a_daemon_holding_the_output_returns_with_the_command_and_dies(tmp_path, scrub):
    """`(setsid sleep 300 &); echo started` blocked the tool for 300 s against its limit: the command's end is the
    tool's end now, and the daemon does not live on."""
    from ks_tui.harness import sandbox

    if scrub and sandbox.current().mode == "none":
        pytest.skip("a daemon that drops its environment and leaves the session is caught by a pid namespace only")
    tag = "ksd" + uuid.uuid4().hex[:12]
    out = run_bash(f"({scrub}setsid bash -c 'exec -a {tag} sleep 300' &); echo started", tmp_path, 60)
    assert out.split("\n")[0].startswith("exit code 0"), out  # not "killed after 60 s"
    assert "started" in out
    assert _gone(tag), f"{tag} still running"


def test_a_stop_ends_a_command_whose_daemon_holds_the_output(tmp_path):
    tag = "ksd" + uuid.uuid4().hex[:12]
    cancel = threading.Event()
    got: list[str] = []
    t = threading.Thread(target=lambda: got.append(
        run_bash(f"(setsid bash -c 'exec -a {tag} sleep 300' &); echo started; sleep 300", tmp_path, 600, cancel)))
    t.start()
    time.sleep(0.5)
    cancel.set()
    t.join(timeout=60)
    assert not t.is_alive(), "the command went on after the session stopped"
    assert got[0].startswith("killed: the session was stopped"), got[0]
    assert _gone(tag)


def test_the_command_sees_no_credential_and_prints_none(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-planted-secret-0123")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_planted_0123456789")
    out = run_bash("env; echo key=[$ANTHROPIC_API_KEY]", tmp_path, 60)
    assert "PATH=" in out and "key=[]" in out
    for name in ("ANTHROPIC_API_KEY", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN"):
        assert name not in out
    # a command that prints the key it was given in its text: redacted in the tool's result
    out = run_bash(f"echo the key is {KEY}", tmp_path, 60)
    assert KEY not in out and "the key is [redacted ANTHROPIC_API_KEY]" in out


def test_the_allow_list_keeps_what_compilers_and_cuda_need():
    env = {"PATH": "/usr/bin", "HOME": "/h", "CUDA_VISIBLE_DEVICES": "0", "LD_LIBRARY_PATH": "/l", "TMPDIR": "/t",
           "KS_CACHE_DIR": "/c", "ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": "http://x", "KS_API_TOKEN": "t" * 9,
           "AWS_ACCESS_KEY_ID": "AKIA0000", "GOOGLE_APPLICATION_CREDENTIALS": "/g.json", "AZURE_CLIENT_SECRET": "s" * 9,
           "SSH_AUTH_SOCK": "/s", "RANDOM_VAR": "x", "GIT_AUTHOR_NAME": "Ann Example"}
    assert sorted(child_environ(env)) == ["CUDA_VISIBLE_DEVICES", "HOME", "KS_CACHE_DIR", "LD_LIBRARY_PATH", "PATH",
                                          "TMPDIR"]
    secrets = secret_values(env)
    assert KEY in secrets and "Ann Example" not in secrets  # an author's name is no credential
    assert redact({"a": [f"x{KEY}y"]}, secrets) == {"a": ["x[redacted ANTHROPIC_API_KEY]y"]}
