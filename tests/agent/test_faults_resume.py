"""The agent layer under faults found by the session 22 audit: a tool that raises, a blank
reply, a kill between an edit and its harness run, a kill inside a max_tokens turn, a
pause_turn continuation, and a second process resuming a session that is running. Each runs
the real SDK against the scripted server, the real harness (g++) and real git."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.timeout(180)

import json
import subprocess
import sys

from ks_tui import events as ev
from ks_tui.trace import Trace
from tests.support.fake_messages_api import reply, text, tool_use
from tests.support.sessions import autonomous_session as start
from tests.support.workspace import git

OLD = "std::vector<float> acc(d);"


def test_a_nul_byte_in_a_path_or_command_is_an_error_result_and_the_session_goes_on(workspace, fake_api):
    api = fake_api([reply(tool_use("read_file", {"path": "kernel.cpp\x00.txt"}),
                          tool_use("bash", {"command": "echo a\x00b"})),
                    reply(text("Understood."))])
    session, seen = start(workspace, max_turns=2, enable_bash=True)
    end = session.run_forever()

    assert end.reason == "max turns reached (2)"
    results = api.requests[1]["messages"][-1]["content"]
    assert [r["is_error"] for r in results if r["type"] == "tool_result"] == [True, True]
    assert "NUL" in results[0]["content"]
    assert not any(isinstance(e, ev.ErrorEvent) and not e.recoverable for e in seen)


def test_a_tool_that_raises_inside_ks_still_answers_its_call(workspace, fake_api, monkeypatch):
    api = fake_api([reply(tool_use("list_attempts", {})), reply(text("Carrying on."))])
    session, seen = start(workspace, max_turns=2)

    def broken() -> str:
        raise RuntimeError("a bug in the tool")
    monkeypatch.setattr(session, "tool_list_attempts", broken)
    end = session.run_forever()

    assert end.reason == "max turns reached (2)"  # not "internal error": the session is whole
    [result] = api.requests[1]["messages"][-1]["content"][:1]
    assert result["is_error"] and "RuntimeError: a bug in the tool" in result["content"]
    assert any(isinstance(e, ev.ErrorEvent) and e.recoverable and "a bug in the tool" in e.message for e in seen)


@pytest.mark.parametrize("blank", ["", "\n\n"])
def test_a_blank_text_block_is_not_kept_so_later_requests_stay_valid(workspace, fake_api, blank):
    # The scripted server refuses blank text blocks in the history, as the real API does.
    api = fake_api([reply(text(blank), tool_use("list_attempts", {})), reply(text(blank)), reply(text("Done."))])
    session, seen = start(workspace, max_turns=3)
    end = session.run_forever()

    assert end.reason == "max turns reached (3)" and not api.rejected
    sent = json.dumps(api.requests[2]["messages"])
    assert json.dumps(blank) not in sent.replace('"content": []', "")
    assert "reply was empty" in sent  # the all-blank second reply counts as an empty one
    # A trace written before the fix still resumes: blank blocks are left out when it is read.
    trace = session.trace_path
    lines = trace.read_text().splitlines()
    rec = json.loads(lines[-1])
    lines.insert(-1, json.dumps({"time": rec["time"], "kind": "assistant_message",
                                 "payload": {"content": [{"type": "text", "text": blank}], "stop_reason": "end_turn",
                                             "model": "m"}}))
    trace.write_text("\n".join(lines) + "\n")
    api2 = fake_api([reply(text("Back."))])
    again, _ = start(workspace, max_turns=1, sid=session.id)
    assert again.run_forever().reason == "max turns reached (1)" and not api2.rejected


def test_the_agents_edit_left_uncommitted_by_a_kill_is_still_the_agents_after_resume(workspace, fake_api):
    fake_api([reply(tool_use("edit_file", {"path": "kernel.cpp", "old_string": OLD,
                                           "new_string": OLD + "  // one row"}))])
    first, _ = start(workspace, max_turns=1)
    first.run_forever()  # ends after the edit ran, before any harness run: as a kill there leaves it
    assert "// one row" in first.files.kernel.read_text()

    fake_api([reply(tool_use("run_harness", {"mode": "check", "quick": True})), reply(text("Correct."))])
    again, seen = start(workspace, max_turns=2, sid=first.id)
    again.run_forever()
    [attempt] = [e.attempt for e in seen if isinstance(e, ev.AttemptRecorded)]
    assert attempt["author"] == "agent" and attempt["number"] == 1
    trailer = git(workspace, "log", "-1", "--format=%(trailers:key=KS-Author,valueonly)", first.info.branch)
    assert trailer.strip() == "agent"


def test_a_persons_edit_made_while_the_session_was_down_is_still_theirs(workspace, fake_api):
    fake_api([reply(tool_use("edit_file", {"path": "kernel.cpp", "old_string": OLD,
                                           "new_string": OLD + "  // agent"}))])
    first, _ = start(workspace, max_turns=1)
    first.run_forever()
    kernel = first.files.kernel
    kernel.write_text(kernel.read_text() + "\n// typed by a person\n")

    fake_api([reply(tool_use("run_harness", {"mode": "check", "quick": True})), reply(text("Ok."))])
    again, seen = start(workspace, max_turns=2, sid=first.id)
    again.run_forever()
    [attempt] = [e.attempt for e in seen if isinstance(e, ev.AttemptRecorded)]
    assert attempt["author"] == "human"


def test_a_tool_call_cut_by_max_tokens_is_not_run_after_a_kill_in_that_turn(workspace, fake_api):
    cut = tool_use("write_file", {"path": "kernel.cpp", "content": "int partial_ker"})
    fake_api([reply(text("Writing"), cut, stop_reason="max_tokens"), reply(text("Smaller steps now."))])
    first, _ = start(workspace, max_turns=1)
    before = first.files.kernel.read_text()
    first.run_forever()
    # What a kill right after the reply was written leaves: the reply, none of what followed.
    records = Trace.read(first.trace_path)
    last = max(i for i, r in enumerate(records) if r["kind"] == "assistant_message")
    first.trace_path.write_text("".join(json.dumps(r) + "\n" for r in records[:last + 1]))

    api = fake_api([reply(text("Continuing."))])
    again, _ = start(workspace, max_turns=1, sid=first.id)
    again.run_forever()
    assert again.files.kernel.read_text() == before
    sent = api.requests[0]["messages"][-1]["content"]
    assert sent[0]["type"] == "tool_result" and sent[0]["is_error"] and "max_tokens" in sent[-1]["text"]


def test_a_pause_turn_continuation_extends_the_paused_message(workspace, fake_api):
    api = fake_api([reply(text("Searching..."), stop_reason="pause_turn"),
                    reply(text("Found it."), tool_use("list_attempts", {})),
                    reply(text("Done."))])
    session, _ = start(workspace, max_turns=3)
    assert session.run_forever().reason == "max turns reached (3)" and not api.rejected
    roles = [m["role"] for m in api.requests[2]["messages"]]
    assert roles == ["user", "assistant", "user"]
    assert [b.get("text") for b in api.requests[2]["messages"][1]["content"]][:2] == ["Searching...", "Found it."]


def test_a_second_process_finds_the_session_busy_and_writes_nothing_into_it(workspace, fake_api, tmp_path):
    fake_api([reply(text("Hello."))])
    first, _ = start(workspace, max_turns=1)
    first.run_forever()
    before = first.trace_path.read_bytes()
    lock = first.store._session_dir(first.id) / ".lock"
    # Another process holds the session's lock, as a running `ks run` or `ks tui` does.
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, os, sys, time\n"
        f"fd = os.open({str(lock)!r}, os.O_RDWR | os.O_CREAT)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX); os.pwrite(fd, str(os.getpid()).encode(), 0)\n"
        "print('held', flush=True); time.sleep(60)")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        api = fake_api([reply(text("never sent"))])
        again, seen = start(workspace, max_turns=1, sid=first.id)
        end = again.run_forever()
    finally:
        holder.kill()
        holder.wait()
    assert end.reason.startswith("error: session") and "busy" in end.reason
    assert any(isinstance(e, ev.ErrorEvent) and "busy" in e.message for e in seen)  # its viewers are told
    assert first.trace_path.read_bytes() == before and not api.requests


def test_quick_as_a_string_reads_as_the_model_meant_it_and_odd_input_prints_plainly(tmp_path):
    from ks_tui.agent.files import TaskFiles
    from ks_tui.agent.headless import HeadlessPrinter
    from ks_tui.agent.tools import ToolBox

    class Host:
        def __init__(self):
            self.runs = []

        def tool_run_harness(self, mode, quick):
            self.runs.append((mode, quick))
            return "ran"

    host = Host()
    box = ToolBox(TaskFiles(tmp_path, tmp_path / "kernel.cpp"), host)
    for quick in (False, "false", " False ", True, "true"):
        assert box.execute("run_harness", {"mode": "check", "quick": quick}) == ("ran", False)
    assert host.runs == [("check", False)] * 3 + [("check", True)] * 2
    out, is_error = box.execute("run_harness", {"mode": "check", "quick": "maybe"})
    assert is_error and "quick must be true or false" in out and len(host.runs) == 5

    import io

    buf = io.StringIO()
    printer = HeadlessPrinter(buf)
    printer(ev.ToolCall("t1", "read_file", ["kernel.cpp"]))  # not an object: the tool refuses it, the printer shows it
    printer(ev.UserMessage("[ks] Your last reply was empty.", "system"))
    assert buf.getvalue().splitlines() == ['-> read_file(["kernel.cpp"])', "[ks] Your last reply was empty."]
