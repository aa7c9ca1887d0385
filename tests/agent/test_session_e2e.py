"""End to end, in process: a Session drives the real SDK against the scripted server, the
real harness (g++) on attention_cpu, and real git commits in a tmp workspace."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.timeout(180)

import json

from ks_tui import events as ev
from ks_tui.agent.tools import TOOL_NAMES
from ks_tui.config import load_config
from ks_tui.engine import Session
from ks_tui.trace import Trace
from tests.support.workspace import git
from tests.support.fake_messages_api import Reply, overloaded, reply, stream_error, text, tool_use

OLD = "std::vector<float> acc(d);"
NEW = "std::vector<float> acc(d);  // one output row"


def start(ws, max_turns: int, **kw) -> tuple[Session, list[ev.Event]]:
    cfg = load_config(ws).with_overrides(max_turns=max_turns)
    kw.setdefault("autonomous", True)
    kw.setdefault("human_present", False)
    session = Session.create(ws, "attention_cpu", cfg, **kw)
    seen: list[ev.Event] = []
    session.subscribe(seen.append)
    return session, seen


def trailers(ws, branch: str) -> list[dict[str, str]]:
    out = git(ws, "log", "--format=%H%x00%(trailers:only,unfold)%x01", branch)
    commits = []
    for chunk in out.split("\x01"):
        if "\x00" not in chunk:
            continue
        sha, body = chunk.strip().split("\x00")
        fields = dict(line.split(": ", 1) for line in body.strip().splitlines() if ": " in line)
        if fields:
            commits.append({"sha": sha, **fields})
    return commits


@pytest.mark.slow
def test_scripted_session_reads_edits_runs_the_harness_is_asked_and_stops_at_max_turns(workspace, fake_api):
    def edit_what_was_read(body):
        # The model "saw" the kernel in the tool_result it was sent.
        result = body["messages"][-1]["content"][0]
        assert result["type"] == "tool_result" and OLD in result["content"]
        return reply(text("Adding a comment."), tool_use("edit_file", {"path": "kernel.cpp", "old_string": OLD,
                                                                        "new_string": NEW}))

    api = fake_api([reply(text("Reading the kernel."), tool_use("read_file", {"path": "kernel.cpp"})),
                   edit_what_was_read,
                   reply(tool_use("run_harness", {"mode": "bench", "quick": True})),
                   reply(text("That is all I can do.")),
                   reply(text("Noted."))])
    session, seen = start(workspace, max_turns=5)
    end = session.run_forever()

    assert end.reason == "max turns reached (5)"
    assert end.turns == 5 and end.attempts == 1 and end.tokens > 0 and end.cost_usd > 0
    assert len(api.requests) == 5 and not api.rejected

    # The request carries cached tools and system prompt; tool names as docs/design.md fixes them.
    first = api.requests[0]
    assert [t["name"] for t in first["tools"]] == [n for n in TOOL_NAMES if n != "bash"]
    assert first["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert first["system"][0]["cache_control"] == {"type": "ephemeral"} and "attention_cpu" in first["system"][0]["text"]
    opening = [b["text"] for b in first["messages"][0]["content"]]
    # the session_start question, labelled as the bank's (the bank picked it: nobody is present)
    assert opening[-1] == "Question from the bank (start-where): Where does the time go in this kernel today?"

    # The assistant's content goes back unchanged, answered by tool_result blocks.
    second = api.requests[1]["messages"]
    assert second[1] == {"role": "assistant", "content": session.conv.messages[1]["content"]}
    assert second[2]["content"][0]["tool_use_id"] == second[1]["content"][1]["id"]

    # One commit, touching only the kernel, with the trailers of docs/design.md.
    [commit] = trailers(workspace, session.info.branch + "~0")[:1]
    assert commit["KS-Session"] == session.id and commit["KS-Attempt"] == "1"
    assert commit["KS-Status"] == "correct" and commit["KS-Correct"] == "4/4"
    assert commit["KS-Author"] == "agent" and commit["KS-Question"] == "start-where"
    assert float(commit["KS-Speedup"]) > 0 and commit["KS-Baseline"]
    touched = git(workspace, "show", "--name-only", "--format=", commit["sha"]).split()
    assert touched == ["kernels/attention_cpu/kernel.cpp"]
    assert NEW in session.files.kernel.read_text()

    # The harness summary reached the model.
    harness_result = api.requests[3]["messages"][-1]["content"][0]["content"]
    assert "status: correct, correct 4/4" in harness_result and "recorded as attempt 1" in harness_result

    # agent_stop: the bank's question is the next user message.
    assert api.requests[4]["messages"][-1]["content"][-1]["text"] == (
        "Question from the bank (stop-layer): Which layer of the system have you not touched yet?")
    asked = [e for e in seen if isinstance(e, ev.QuestionAsked)]
    assert [(q.question_id, q.chosen_by) for q in asked] == [("start-where", "bank"), ("stop-layer", "bank")]

    # The trace holds every event that is not screen-only, in order, and nothing else of ours.
    trace = [{"kind": r["kind"], **r["payload"]} for r in Trace.read(session.trace_path)
             if r["kind"] != "session_created"]
    expected = [e.to_dict() for e in seen if e.kind not in ev.EPHEMERAL_KINDS]
    assert json.loads(json.dumps(trace)) == json.loads(json.dumps(expected))
    assert {e["kind"] for e in trace} >= {"user_message", "assistant_message", "tool_call", "tool_result", "attempt",
                                          "decision_point", "question", "usage", "turn_end", "session_end"}


def test_overload_and_a_broken_stream_still_end_in_a_complete_session(workspace, fake_api):
    api = fake_api([overloaded(),  # retried by the SDK
                   reply(text("Looking."), tool_use("list_attempts", {})),
                   stream_error(text("I will now half-"), tool_use("read_file", {"path": "kernel.cpp"})),
                   Reply([text("Cut off"), text("mid-way")], drop_after_blocks=1),  # connection dropped
                   reply(text("Done."))])
    session, seen = start(workspace, max_turns=2)
    end = session.run_forever()

    assert end.reason == "max turns reached (2)"
    assert len(api.requests) == 5
    assert api.requests[0]["messages"] == api.requests[1]["messages"]  # the 529, sent again
    # The broken and the dropped stream: the same turn, sent again.
    assert api.requests[2]["messages"] == api.requests[3]["messages"] == api.requests[4]["messages"]
    retry = [e for e in seen if isinstance(e, ev.ErrorEvent)]
    assert len(retry) == 2 and all(e.recoverable for e in retry)
    assert "overloaded" in retry[0].message and "connection dropped" in retry[1].message
    # Nothing of the broken stream entered the conversation.
    assert "half-" not in json.dumps(session.conv.messages) and "Cut off" not in json.dumps(session.conv.messages)
    assert session.conv.messages[-1]["content"] == [{"type": "text", "text": "Done."}]


def test_paths_outside_the_task_folder_and_task_files_are_refused(workspace, fake_api, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("not for the agent")
    api = fake_api([reply(tool_use("read_file", {"path": "../../../../secret.txt"}),
                         tool_use("read_file", {"path": str(secret)}),
                         tool_use("read_file", {"path": "escape/secret.txt"}),
                         tool_use("write_file", {"path": "reference.py", "content": "cheat"}),
                         tool_use("edit_file", {"path": "task.yaml", "old_string": "rtol", "new_string": "x"})),
                   reply(text("ok"))])
    session, _ = start(workspace, max_turns=2)
    (session.files.root / "escape").symlink_to(tmp_path, target_is_directory=True)
    reference_before = (session.files.root / "reference.py").read_text()
    session.run_forever()

    results = api.requests[1]["messages"][-1]["content"]
    assert len(results) == 5 and all(r.get("is_error") for r in results)
    assert "'..' is not allowed" in results[0]["content"]
    assert "outside the task folder" in results[1]["content"] and "outside the task folder" in results[2]["content"]
    assert "read-only" in results[3]["content"] and "read-only" in results[4]["content"]
    assert "not for the agent" not in json.dumps(api.requests[1])
    assert (session.files.root / "reference.py").read_text() == reference_before


def test_stop_reasons_max_tokens_pause_turn_and_refusal(workspace, fake_api):
    cut = tool_use("write_file", {"path": "kernel.cpp", "content": "int x"})
    api = fake_api([reply(text("Writing a long file"), cut, stop_reason="max_tokens"),
                   reply(text("Searching..."), stop_reason="pause_turn"),
                   reply(text("I can't help with that."), stop_reason="refusal")])
    session, seen = start(workspace, max_turns=10)
    kernel_before = session.files.kernel.read_text()
    end = session.run_forever()

    # max_tokens: the cut tool call is not run; the model is told and asked to continue.
    after_cut = api.requests[1]["messages"][-1]["content"]
    assert after_cut[0]["type"] == "tool_result" and after_cut[0]["is_error"]
    assert "max_tokens" in after_cut[1]["text"]
    assert session.files.kernel.read_text() == kernel_before
    # pause_turn: the paused assistant turn goes back as the last message, unchanged.
    assert api.requests[2]["messages"][-1] == {"role": "assistant",
                                                "content": [{"type": "text", "text": "Searching..."}]}
    # refusal: the session ends and the refused turn is not kept.
    assert end.reason == "ended: refusal"
    assert "can't help" not in json.dumps(session.conv.messages)
    assert [e.stop_reason for e in seen if isinstance(e, ev.TurnEnded)] == ["max_tokens", "pause_turn", "refusal"]


def test_an_empty_reply_is_not_kept_and_the_model_is_asked_to_go_on(workspace, fake_api):
    api = fake_api([reply(tool_use("list_attempts", {})), reply(), reply(text("Done."))])
    session, seen = start(workspace, max_turns=3)
    assert session.run_forever().reason == "max turns reached (3)"
    assert len(api.requests) == 3  # and each was valid: the server answers a bad one with a 400
    last = api.requests[2]["messages"]
    assert last[-2]["role"] == "assistant" and last[-2]["content"][0]["type"] == "tool_use"
    assert last[-1]["content"][0]["type"] == "tool_result" and "reply was empty" in last[-1]["content"][-1]["text"]


def test_errors_a_retry_cannot_fix_end_the_run_at_once(workspace, fake_api):
    from tests.support.fake_messages_api import Fault

    for step, why in ((stream_error(text("half"), error_type="invalid_request_error"), "invalid_request_error"),
                      (Fault(413, "request_too_large", "Request exceeds the maximum size"), "(413)")):
        api = fake_api([step, reply(text("never sent"))])
        session, seen = start(workspace, max_turns=3)
        end = session.run_forever()
        assert len(api.requests) == 1  # neither the SDK nor the engine sent it again
        assert end.reason.startswith("error: the API refused the request") and why in end.reason
        assert [e.recoverable for e in seen if isinstance(e, ev.ErrorEvent)] == [False]


def test_max_cost_ends_the_run_and_stop_aborts_a_stream(workspace, fake_api):
    import threading

    api = fake_api([reply(text("A costly answer.")), reply(text("never sent"))])
    session, _ = start(workspace, max_turns=10)
    session.cfg.max_cost_usd = 1e-9  # any priced turn passes it
    end = session.run_forever()
    assert end.reason.startswith("max cost reached") and end.turns == 1 and len(api.requests) == 1

    api = fake_api([Reply([text(f"word{i} ") for i in range(200)], slow_s=0.05)])
    session, seen = start(workspace, max_turns=10)
    streaming = threading.Event()
    session.subscribe(lambda e: streaming.set() if isinstance(e, ev.TextDelta) else None)
    session.start()
    assert streaming.wait(60)
    session.stop()
    assert session.join(timeout=30)
    assert session.end.reason == "stopped" and session.end.turns == 0
    assert not any(isinstance(e, ev.AssistantMessage) for e in seen)  # the cut turn is not kept


def test_stop_returns_while_the_api_has_not_started_answering(workspace, fake_api):
    from tests.support.fake_messages_api import hang

    api = fake_api([hang()])
    session, _ = start(workspace, max_turns=10)
    session.start()
    assert api.wait_for_requests(1, timeout=60)
    session.stop()
    assert session.join(timeout=30)
    assert session.end.reason == "stopped"


@pytest.mark.slow
def test_show_attempt_gives_the_agent_its_speed_against_the_previous_attempt(workspace, fake_api):
    api = fake_api([reply(tool_use("run_harness", {"mode": "bench", "quick": True})),
                   reply(tool_use("edit_file", {"path": "kernel.cpp", "old_string": OLD, "new_string": NEW})),
                   reply(tool_use("run_harness", {"mode": "bench", "quick": True})),
                   reply(tool_use("show_attempt", {"attempt": 2}), tool_use("show_attempt", {"attempt": 1})),
                   reply(text("Done."))])
    session, seen = start(workspace, max_turns=5)
    session.run_forever()
    shown = [e for e in seen if isinstance(e, ev.ToolResult) and e.name == "show_attempt"]
    assert len(shown) == 2 and not any(e.is_error for e in shown)
    assert "speed against attempt 1 (" in shown[0].output and "kernel time attempt 1 / this" in shown[0].output
    assert "speed against" not in shown[1].output  # the first attempt has no previous one
    assert len(api.requests) == 5


def test_a_remark_the_engineer_adds_mid_run_reaches_the_agent(workspace, fake_api):
    from ks_tui.attempts import AttemptStore

    api = fake_api([reply(tool_use("run_harness", {"mode": "check", "quick": True})),
                   reply(tool_use("list_attempts", {}), tool_use("show_attempt", {"attempt": 1})),
                   reply(text("Done."))])
    session, seen = start(workspace, max_turns=3)

    def engineer(event) -> None:  # `ks remark` typed in another pane once attempt 1 exists
        if isinstance(event, ev.ToolResult) and event.name == "run_harness":
            AttemptStore(workspace).remark(session.id, 1, "that run shared the box with a compile job")

    session.subscribe(engineer)
    session.run_forever()
    out = {e.name: e.output for e in seen if isinstance(e, ev.ToolResult)}
    assert "remark" in out["list_attempts"] and "human: that run shared the box with a compile job" in out["list_attempts"]
    assert "human: that run shared the box with a compile job" in out["show_attempt"]
    assert len(api.requests) == 3


def test_the_agents_words_before_a_run_are_the_attempts_summary_kept_whole(workspace, fake_api):
    from ks_tui.attempts import AttemptStore

    said = ("Unrolled the inner key loop by four and hoisted the scale multiply out of it, so each key costs\n"
            "one FFMA less; expect the long scenarios to gain most.")
    fake_api([reply(text(said + "\n\nRunning the quick check now."),
                    tool_use("run_harness", {"mode": "check", "quick": True})),
              reply(text("Done."))])
    session, _ = start(workspace, max_turns=2)
    session.run_forever()
    (a,) = AttemptStore(workspace).attempts(session.id)
    whole = " ".join(said.split())
    assert a.description == whole  # the first paragraph, whole; not the next one
    assert len(a.summary) == 120 and whole.startswith(a.summary[:-1])


def test_the_agent_sees_what_each_speedup_covers_and_where_it_was_measured(workspace, fake_api):
    """list_attempts names a subset run's scope and, once the session moved machines, each other device's run."""
    from ks_tui.attempts import AttemptStore
    from tests.attempts.conftest import result_for

    fake_api([reply(tool_use("list_attempts", {})), reply(text("Done."))])
    session, seen = start(workspace, max_turns=2)
    store = AttemptStore(workspace)
    kernel = store.kernel_path(session.id)
    for i, (device, speedup, extra) in enumerate([("NVIDIA H200", 1.16, {}), ("NVIDIA H200", 1.27, {"selection": ["a"]}),
                                                  ("NVIDIA H100 80GB HBM3", 1.148, {})]):
        kernel.write_text(kernel.read_text() + f"// run {i}\n")
        store.record(session.id, dict(result_for(kernel, speedup=speedup), task="attention_cpu", device=device, **extra))
    session.run_forever()
    [listing] = [e.output for e in seen if isinstance(e, ev.ToolResult) and e.name == "list_attempts"]
    rows = listing.splitlines()
    assert rows[0].startswith("1: correct 2/2 1.160x (bench) by agent, measured on NVIDIA H200: not comparable")
    assert rows[1].startswith("2: correct 2/2 1.270x (bench-subset) by agent, measured on NVIDIA H200")
    assert rows[2].startswith("3 (best): correct 2/2 1.148x (bench) by agent -")
