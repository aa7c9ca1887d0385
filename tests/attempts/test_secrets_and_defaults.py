"""No credential recorded (trace, git notes, export) and the session commands' default session (`try`, `rollback`
use the latest one, as `log` and `show` do, and say which). Real git workspaces, real `ks` processes."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile

from ks_tui.attempts import AttemptStore
from ks_tui.attempts.transfer import export_session
from ks_tui.trace import Trace
from tests.attempts.conftest import git, result_for

KEY = "sk-ant-planted-" + "3" * 24


def ks(ws, *args):
    return subprocess.run([sys.executable, "-m", "ks_tui", "--workspace", str(ws), *args], capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)


def test_a_key_in_a_result_or_an_event_reaches_no_record(workspace, monkeypatch, tmp_path):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    store = AttemptStore(workspace)
    info = store.new_session("toy")
    kernel = info.worktree / "kernels/toy/kernel.cpp"
    kernel.write_text("// changed\n")
    result = result_for(kernel)
    result["stderr_tail"] = f"ANTHROPIC_API_KEY={KEY}\n"
    store.record(info.id, result)
    Trace(store.trace_path(info.id)).append("tool_result", {"output": f"the key is {KEY}"})

    assert KEY not in git(workspace, "log", "--all", "-p", "--notes=*")  # the commits and every notes ref
    assert "[redacted ANTHROPIC_API_KEY]" in store.results(info.id)[1]["stderr_tail"]  # read back from the note
    trace = store.trace_path(info.id).read_text()
    assert KEY not in trace and "the key is [redacted ANTHROPIC_API_KEY]" in trace

    # a trace written before redaction existed (or by hand) is cleaned on export
    with open(store.trace_path(info.id), "a") as f:
        f.write(json.dumps({"time": "t", "kind": "error", "payload": {"message": KEY}}) + "\n")
    dest = tmp_path / "export.tar.gz"
    export_session(store, info.id, dest)
    with tarfile.open(dest) as tar:
        for member in tar.getmembers():
            data = tar.extractfile(member).read() if member.isfile() else b""
            if member.name != "session.bundle":
                assert KEY.encode() not in data, member.name


def test_try_and_rollback_default_to_the_latest_session_and_say_which(workspace):
    store = AttemptStore(workspace)
    store.new_session("toy")
    latest = store.new_session("toy")
    kernel = latest.worktree / "kernels/toy/kernel.cpp"
    kernel.write_text(kernel.read_text() + "// one\n")
    tried = ks(workspace, "try", "--no-run", "--summary", "one")
    assert tried.returncode == 0, tried.stderr
    assert f"session {latest.id} (toy, the most recently active" in tried.stderr
    kernel.write_text(kernel.read_text() + "// two\n")
    assert ks(workspace, "try", "--no-run", "--summary", "two").returncode == 0
    back = ks(workspace, "rollback", "1")
    assert back.returncode == 0, back.stderr
    assert f"session {latest.id}" in back.stderr
    assert [a.number for a in store.attempts(latest.id)] == [1, 2, 3]
    assert store.attempts(latest.id)[-1].rollback_of is not None
