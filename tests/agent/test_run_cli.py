"""`ks run --headless` and `ks report` as real child processes against the scripted server,
including a session killed with SIGKILL and resumed from its trace."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.timeout(180)

import json
import os
import signal
import subprocess
import sys
import time

from ks_tui.trace import Trace
from tests.support.fake_messages_api import hang, reply, text, tool_use
from tests.support.processes import wait_gone

OLD = "std::vector<float> acc(d);"


def ks(ws, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ks_tui", "--workspace", str(ws), *args],
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def only_session(ws) -> str:
    [sid] = [p.name for p in (ws / "sessions").iterdir() if p.is_dir()]
    return sid


@pytest.mark.slow
def test_killed_session_resumes_with_the_same_conversation(workspace, fake_api):
    api = fake_api([reply(text("Reading."), tool_use("read_file", {"path": "kernel.cpp"})),
                   reply(tool_use("edit_file", {"path": "kernel.cpp", "old_string": OLD,
                                                "new_string": OLD + "  // row"})),
                   hang()])  # the third request never gets an answer: the process is killed meanwhile
    child = subprocess.Popen([sys.executable, "-m", "ks_tui", "--workspace", str(workspace), "run", "attention_cpu",
                              "--headless", "--autonomous", "--max-turns", "10"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    try:
        assert api.wait_for_requests(3, timeout=90), child.stderr.read() if child.poll() is not None else "no request"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    before_kill = api.requests[2]
    sid = only_session(workspace)

    api2 = fake_api([reply(text("Carrying on."))])
    out = ks(workspace, "run", "--resume", sid, "--headless", "--autonomous", "--max-turns", "1")
    assert out.returncode == 0, out.stderr
    resumed = api2.requests[0]
    for key in ("system", "tools", "messages", "model", "max_tokens"):
        assert resumed[key] == before_kill[key], key
    assert "Carrying on." in out.stdout and "session ended: max turns reached (1)" in out.stdout
    kinds = [r["kind"] for r in Trace.read(workspace / "sessions" / sid / "trace.jsonl")]
    assert kinds.count("session_end") == 1 and kinds.count("assistant_message") == 3

    report = ks(workspace, "report", sid, "--json")
    assert report.returncode == 0, report.stderr
    data = json.loads(report.stdout)
    assert data["model_turns"] == 3 and data["session"]["id"] == sid
    assert [q["id"] for q in data["questions"]] == ["start-where"]
    # The session as `ks log` takes it: --session/-s, or by default the most recently active one.
    for how in (["-s", sid], ["--session", sid], []):
        again = ks(workspace, "report", *how, "--json")
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout)["session"]["id"] == sid and json.loads(again.stdout)["model_turns"] == 3
    both = ks(workspace, "report", sid, "-s", "20990101-000000-abcd")
    assert both.returncode == 2 and "two sessions named" in both.stderr and "Traceback" not in both.stderr


def test_missing_api_key_says_what_to_set(workspace):  # base_env: no key
    out = ks(workspace, "run", "attention_cpu", "--headless", "--autonomous")
    assert out.returncode == 2
    assert "ANTHROPIC_API_KEY" in out.stderr and "Traceback" not in out.stderr
    assert not (workspace / "sessions").exists()  # nothing was started


@pytest.mark.slow
def test_invalid_key_and_unknown_model_give_one_clear_line(workspace, fake_api, monkeypatch):
    fake_api([reply(text("never"))], api_key="sk-the-right-one", models={"claude-opus-4-6"})
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-wrong")
    out = ks(workspace, "run", "attention_cpu", "--headless", "--autonomous", "--max-turns", "1")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines()[-1] == "ks: error: the API key was rejected (401): check ANTHROPIC_API_KEY"
    assert not [p for p in (workspace / "sessions").iterdir() if p.is_dir()]  # the failed start left no session
    assert "removed the new session" in out.stderr

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-the-right-one")
    out = ks(workspace, "run", "attention_cpu", "--headless", "--autonomous", "--model", "claude-nope")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "unknown model 'claude-nope' (404)" in out.stderr.strip().splitlines()[-1]
    assert not [p for p in (workspace / "sessions").iterdir() if p.is_dir()]
    assert "no sessions yet" in ks(workspace, "sessions").stdout  # no branch left either


def test_bad_arguments_are_exit_2(workspace, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-key")  # so no refusal is for a missing key
    out = ks(workspace, "run", "--resume", "20990101-000000-abcd")  # as the README writes it: no --headless
    assert out.returncode == 2 and "no session" in out.stderr and "--headless" not in out.stderr
    out = ks(workspace, "run", "attention_cpu", "--headless", "--max-turns", "0")
    assert out.returncode == 2 and "--max-turns" in out.stderr
    out = ks(workspace, "run", "--resume", "20990101-000000-abcd", "--headless")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    bad = workspace / ".ks" / "config.toml"
    bad.parent.mkdir()
    bad.write_text("model = \n")
    out = ks(workspace, "run", "attention_cpu", "--headless")
    assert out.returncode == 2 and "config.toml:1" in out.stderr
    os.unlink(bad)


@pytest.mark.slow
def test_a_tool_call_cut_by_a_kill_runs_again_on_resume(workspace, fake_api, unsandboxed):
    import time

    once = "if [ -f once ]; then echo second run; else echo $$ > once; sleep 120; fi"
    api = fake_api([reply(text("Running it."), tool_use("bash", {"command": once}))])
    child = subprocess.Popen([sys.executable, "-m", "ks_tui", "--workspace", str(workspace), "run", "attention_cpu",
                              "--headless", "--autonomous", "--enable-bash", "--max-turns", "5"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        assert api.wait_for_requests(1, timeout=90)
        deadline = time.monotonic() + 60
        while not list((workspace / "sessions").glob("*/worktree/once")):  # the command is running
            assert time.monotonic() < deadline and child.poll() is None
            time.sleep(0.1)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    sid = only_session(workspace)
    marker = workspace / "sessions" / sid / "worktree" / "once"
    deadline = time.monotonic() + 10
    while not marker.read_text().strip() and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(int(marker.read_text()), signal.SIGKILL)  # the orphaned command's own process group

    api2 = fake_api([reply(text("Finished."))])
    out = ks(workspace, "run", "--resume", sid, "--headless", "--autonomous", "--enable-bash", "--max-turns", "1")
    assert out.returncode == 0, out.stderr
    [result] = api2.requests[0]["messages"][-1]["content"]
    assert result["type"] == "tool_result" and result["content"] == "exit code 0\nsecond run\n"
    assert api2.requests[0]["messages"][:-1] == api.requests[0]["messages"] + [api2.requests[0]["messages"][-2]]


@pytest.mark.slow
def test_headless_with_a_terminal_runs_bash_without_asking(workspace, fake_api, monkeypatch):
    import pty

    fake_api([reply(tool_use("bash", {"command": "echo ran > marker.txt"})), reply(text("done"))])
    monkeypatch.setenv("KS_QUESTION_TIMEOUT", "1")  # session_start: the bank picks when nobody answers
    leader, terminal = pty.openpty()  # a person's terminal on stdin: questions wait for answers
    try:
        out = subprocess.run([sys.executable, "-m", "ks_tui", "--workspace", str(workspace), "run", "attention_cpu",
                              "--headless", "--enable-bash", "--max-turns", "2"],
                             capture_output=True, text=True, timeout=120, stdin=terminal)
    finally:
        os.close(terminal)
        os.close(leader)
    assert out.returncode == 0, out.stderr
    assert "you answer questions on stdin" in out.stdout
    assert (workspace / "sessions" / only_session(workspace) / "worktree" / "marker.txt").read_text() == "ran\n"


def test_report_text_lists_each_attempts_remarks():
    from ks_tui.agent.report import build_report, report_text

    attempts = [{"number": 1, "author": "agent", "status": "correct", "correct": "4/4", "speedup": 1.3,
                 "summary": "tiled", "remarks": [{"time": "2026-12-04T22:40:00+00:00", "author": "human",
                                                 "text": "the baseline ran slow in that run"}]},
                {"number": 2, "author": "agent", "status": "correct", "correct": "4/4", "speedup": 1.1,
                 "summary": "unrolled", "remarks": []}]
    lines = report_text(build_report({"id": "s", "task": "t", "branch": "b"}, [], attempts)).splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("1 agent"))
    assert lines[at + 1].strip().startswith("remark ") and "human: the baseline ran slow" in lines[at + 1]
    assert lines[at + 2].strip().startswith("2 agent")
    assert not any(line.startswith("largest prompt") for line in lines)  # no model turn: no context line


@pytest.fixture
def unsandboxed(monkeypatch):
    """The hanging kernel writes its pid (the host's) to a file outside: no sandbox for these (tests/harness/
    test_untrusted_kernel.py checks that one)."""
    monkeypatch.setenv("KS_SANDBOX", "off")


def _hanging_kernel(ws, pid_file) -> str:
    """attention_cpu's kernel, made to write its process id to PID_FILE and then hang."""
    src = (ws / "kernels" / "attention_cpu" / "kernel.cpp").read_text()
    src = src.replace("#include <cmath>", "#include <cmath>\n#include <cstdio>\n#include <unistd.h>")
    return src.replace("if (h_q % h_kv != 0) return 2;",
                       f'if (h_q % h_kv != 0) return 2;\n    {{ FILE* f = fopen("{pid_file}", "w"); '
                       'fprintf(f, "%d", (int)getpid()); fclose(f); sleep(600); }')


def _wait_for_pid(pid_file, child, timeout: float = 90) -> int:
    import time

    deadline = time.monotonic() + timeout
    while not (pid_file.is_file() and pid_file.read_text().strip()):
        assert time.monotonic() < deadline and child.poll() is None, "the kernel never started"
        time.sleep(0.1)
    return int(pid_file.read_text())


def _gone(pid: int, timeout: float = 15) -> bool:
    """True when PID ends within TIMEOUT; else its process group is killed (no orphan outlives a
    failed test) and False."""
    if wait_gone(pid, timeout):
        return True
    os.killpg(os.getpgid(pid), signal.SIGKILL)
    return False


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_during_a_harness_run_stops_the_run_kills_the_kernel_and_ends_the_trace(workspace, fake_api,
                                                                                        tmp_path, sig, unsandboxed):
    pid_file = tmp_path / "kernel.pid"
    fake_api([reply(tool_use("write_file", {"path": "kernel.cpp", "content": _hanging_kernel(workspace, pid_file)})),
              reply(tool_use("run_harness", {"mode": "check", "quick": True})),
              reply(text("never sent"))])
    child = subprocess.Popen([sys.executable, "-m", "ks_tui", "--workspace", str(workspace), "run", "attention_cpu",
                              "--headless", "--autonomous", "--max-turns", "5"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    try:
        kernel_pid = _wait_for_pid(pid_file, child)
        child.send_signal(sig)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 130, err
    assert f"stopping on {signal.Signals(sig).name}" in err and "Traceback" not in err
    assert _gone(kernel_pid), "the hanging kernel outlived ks"
    records = Trace.read(workspace / "sessions" / only_session(workspace) / "trace.jsonl")
    assert records[-1]["kind"] == "session_end" and records[-1]["payload"]["reason"] == "stopped"
    results = [r["payload"] for r in records if r["kind"] == "tool_result"]
    assert results[-1]["name"] == "run_harness" and "cancelled" in results[-1]["output"]


@pytest.mark.slow
def test_a_kill_9_of_ks_takes_the_hanging_kernel_down_with_it(workspace, tmp_path, unsandboxed):
    pid_file = tmp_path / "kernel.pid"
    source = tmp_path / "hang.cpp"
    source.write_text(_hanging_kernel(workspace, pid_file))
    child = subprocess.Popen([sys.executable, "-m", "ks_tui", "--workspace", str(workspace), "check", "attention_cpu",
                              "--source", str(source), "--quick"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        kernel_pid = _wait_for_pid(pid_file, child)
    finally:
        child.kill()  # SIGKILL: ks cannot clean up; its harness child must notice by itself
        child.wait()
    assert _gone(kernel_pid), "the harness child outlived a kill -9 of ks"


@pytest.mark.slow
@pytest.mark.parametrize("stop_reason", ["refusal", "model_context_window_exceeded"])
def test_a_run_the_model_cannot_continue_exits_1_with_the_reason(workspace, fake_api, stop_reason):
    fake_api([reply(text("No."), stop_reason=stop_reason)])
    out = ks(workspace, "run", "attention_cpu", "--headless", "--autonomous", "--max-turns", "3")
    assert out.returncode == 1
    assert f"ks: ended: {stop_reason}" in out.stderr and "Traceback" not in out.stderr


def test_the_reports_best_is_the_attempt_logs_best():
    """A faster --scenarios subset (or a run on another device) is not the session's best: the report takes the
    store's mark, as `ks log` shows it, and says what the speedup was measured over and where."""
    from ks_tui.agent.report import build_report, report_text

    attempts = [{"number": 1, "author": "agent", "status": "correct", "correct": "182/182", "speedup": 1.16,
                 "mode": "bench", "device": "NVIDIA H200", "best": True, "summary": "v35"},
                {"number": 2, "author": "agent", "status": "correct", "correct": "6/6", "speedup": 1.27,
                 "mode": "bench-subset", "device": "NVIDIA H200", "best": False, "summary": "probe"}]
    report = build_report({"id": "s", "task": "t", "branch": "b"}, [], attempts)
    assert (report["best_attempt"], report["best_speedup"]) == (1, 1.16)
    lines = report_text(report).splitlines()
    assert "best: 1.160x (attempt 1; bench on NVIDIA H200)" in lines
    assert any(line.split()[:5] == ["2", "agent", "correct", "6/6", "1.270x"] and "bench-subset" in line
               for line in lines)
    assert not any("fastest on" in line for line in lines)  # one device

    # The session moved to an H100: its best is the H100's; the H200's fastest whole-grid run is named beside it.
    attempts += [{"number": 3, "author": "agent", "status": "correct", "correct": "182/182", "speedup": 1.148,
                  "mode": "bench", "device": "NVIDIA H100", "best": True, "summary": "v35 again"}]
    attempts[0]["best"] = False
    lines = report_text(build_report({"id": "s", "task": "t", "branch": "b"}, [], attempts)).splitlines()
    at = lines.index("best: 1.148x (attempt 3; bench on NVIDIA H100)")
    assert lines[at + 1] == "  fastest on NVIDIA H200: 1.160x (attempt 1; bench)"


@pytest.mark.slow
def test_sigterm_stops_a_session_whose_bash_command_left_a_daemon_holding_its_output(workspace, fake_api,
                                                                                     tmp_path):
    """`(setsid sleep 300 &); ... sleep 300`: the session stops on SIGTERM, the command and its daemon die."""
    flag = tmp_path / "started"
    tag = "ksd" + os.urandom(6).hex()
    fake_api([reply(tool_use("bash", {"command": f"(setsid bash -c 'exec -a {tag} sleep 300' &); touch {flag}; "
                                                 "sleep 300"})),
              reply(text("never sent"))])
    child = subprocess.Popen([sys.executable, "-m", "ks_tui", "--workspace", str(workspace), "run", "attention_cpu",
                              "--autonomous", "--enable-bash", "--max-turns", "3"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    try:
        deadline = time.monotonic() + 90
        while not flag.exists():
            assert child.poll() is None and time.monotonic() < deadline, child.stderr.read() if child.poll() else ""
            time.sleep(0.1)
        child.send_signal(signal.SIGTERM)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 130, err
    assert "stopping on SIGTERM" in err and "Traceback" not in err
    for e in os.listdir("/proc"):
        if e.isdigit():
            try:
                assert tag.encode() not in open(f"/proc/{e}/cmdline", "rb").read(), f"the daemon {tag} lives on"
            except OSError:
                pass
