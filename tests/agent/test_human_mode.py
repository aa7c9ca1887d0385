"""A person at the screen: decision points wait for answers, typed questions reach the agent,
a rollback takes the kernel and the conversation back together, and bash asks first."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.timeout(180)

import json

from ks_tui import events as ev
from ks_tui.config import load_config
from ks_tui.engine import Session
from ks_tui.trace import Trace
from tests.support.fake_messages_api import reply, text, tool_use

OLD = "std::vector<float> acc(d);"


def edit_and_check(tag: str):
    return reply(text(f"Trying {tag}."),
                 tool_use("edit_file", {"path": "kernel.cpp", "old_string": OLD, "new_string": f"{OLD}  // {tag}"}),
                 tool_use("run_harness", {"mode": "check", "quick": True}))


@pytest.mark.slow
def test_answers_typed_questions_and_rollback_with_the_conversation(workspace, fake_api):
    global OLD
    api = fake_api([edit_and_check("first"),
                   reply(text("Now a second idea."),
                         tool_use("edit_file", {"path": "kernel.cpp", "old_string": f"{OLD}  // first",
                                                "new_string": f"{OLD}  // second"}),
                         tool_use("run_harness", {"mode": "check", "quick": True})),
                   reply(text("I am done.")),
                   reply(text("Good question; done again.")),
                   reply(text("Understood, back at attempt 1."))])
    cfg = load_config(workspace).with_overrides(max_turns=5, question_timeout_s=60.0)
    session = Session.create(workspace, "attention_cpu", cfg, autonomous=False, human_present=True)
    stops = []

    def person(e: ev.Event) -> None:  # answers from the event stream, as the question pane would
        if isinstance(e, ev.DecisionPointReached):
            if e.point == "session_start":
                session.answer_question(e.questions[0]["id"], None)  # picks the bank's question
            elif e.point == "agent_stop":
                stops.append(e)
                if len(stops) == 1:
                    session.answer_question(None, "Did you measure before changing anything?")
                else:
                    session.rollback(1)
                    session.answer_question(None, None)  # skip: the rollback note is what goes next

    seen: list[ev.Event] = []
    session.subscribe(seen.append)
    session.subscribe(person)
    end = session.run_forever()
    assert end.reason == "max turns reached (5)"

    asked = [(e.question_id, e.chosen_by) for e in seen if isinstance(e, ev.QuestionAsked)]
    assert asked[0] == ("start-where", "human") and asked[1][1] == "human" and asked[1][0].startswith("human-")
    assert api.requests[3]["messages"][-1]["content"][-1]["text"] == (
        "Question from the engineer: Did you measure before changing anything?")
    opening = [b["text"] for b in api.requests[0]["messages"][0]["content"]]
    assert opening[-1] == ("Question from the bank (start-where, picked by the engineer): "
                           "Where does the time go in this kernel today?")

    # Attempt 3 is the rollback commit; the kernel is attempt 1's again.
    attempts = session.store.attempts(session.id)
    assert [a.number for a in attempts] == [1, 2, 3] and attempts[2].rollback_of == 1
    assert attempts[1].question is None and attempts[0].question == "start-where"
    assert session.files.kernel.read_text().count("// first") == 1
    # The conversation went back to the end of attempt 1's harness run, plus a note.
    at_attempt_1 = api.requests[1]["messages"]
    after = api.requests[4]["messages"]
    assert after[:-1] == at_attempt_1[:-1]
    assert after[-1]["content"][:-1] == at_attempt_1[-1]["content"]
    note = after[-1]["content"][-1]["text"]
    assert "rolled the kernel and this conversation back to attempt 1" in note and "attempt 2" in note
    rolled = [e for e in seen if isinstance(e, ev.RolledBack)]
    assert rolled[0].to_attempt == 1 and rolled[0].conversation_len == len(at_attempt_1)
    assert [r["kind"] for r in Trace.read(session.trace_path)].count("rollback") == 1  # the engine's line only
    # The trace rebuilds the same conversation, rollback included.
    reopened = Session.open(workspace, session.id, cfg, autonomous=True, human_present=False)
    assert reopened.conv.messages == session.conv.messages and reopened.resumed


def test_bash_runs_only_when_enabled_and_approved(workspace, fake_api):
    api = fake_api([reply(tool_use("bash", {"command": "echo approved-run > marker.txt; pwd"})),
                   reply(tool_use("bash", {"command": "touch refused-run.txt"})),
                   reply(text("done"))])
    cfg = load_config(workspace).with_overrides(max_turns=3, enable_bash=True, question_timeout_s=30.0)
    session = Session.create(workspace, "attention_cpu", cfg, autonomous=False, human_present=True)
    answers = iter([True, False])
    requests = []

    def person(e):
        if isinstance(e, ev.DecisionPointReached):
            session.answer_question(None, None)
        elif isinstance(e, ev.BashApprovalRequested):
            requests.append(e.command)
            session.approve_bash(e.id, next(answers))

    session.subscribe(person)
    session.run_forever()
    worktree = session.info.worktree
    assert requests == ["echo approved-run > marker.txt; pwd", "touch refused-run.txt"]
    assert (worktree / "marker.txt").read_text() == "approved-run\n"
    assert not (worktree / "refused-run.txt").exists()
    first = api.requests[1]["messages"][-1]["content"][0]
    assert first["content"].startswith("exit code 0") and str(worktree) in first["content"]
    second = api.requests[2]["messages"][-1]["content"][0]
    assert second["is_error"] and "did not approve" in second["content"]
    assert "bash" in [t["name"] for t in api.requests[0]["tools"]]


def test_bash_is_refused_when_not_enabled(workspace, fake_api):
    api = fake_api([reply(tool_use("bash", {"command": "touch x"})), reply(text("ok"))])
    cfg = load_config(workspace).with_overrides(max_turns=2)
    session = Session.create(workspace, "attention_cpu", cfg, autonomous=True, human_present=False)
    session.run_forever()
    assert "bash" not in [t["name"] for t in api.requests[0]["tools"]]
    result = api.requests[1]["messages"][-1]["content"][0]
    assert result["is_error"] and "disabled" in result["content"]
    assert not (session.info.worktree / "x").exists()


def edited_by_a_person(ws) -> Session:
    """A new session without an agent (base_env: no key), its kernel edited by a person."""
    session = Session.create(ws, "attention_cpu", load_config(ws))
    kernel = session.files.kernel
    kernel.write_text(kernel.read_text().replace(OLD, OLD + "  // typed by a person"))
    return session


def check_once(session: Session, on) -> None:
    """Subscribe `on`, start the session and run one quick check; `on` stops it, within two minutes."""
    session.subscribe(on)
    session.start()
    session.run_harness_now(mode="check", quick=True)
    assert session.join(timeout=120)


def test_without_a_key_the_session_runs_in_human_mode(workspace):
    session = edited_by_a_person(workspace)
    assert not session.agent_enabled
    seen: list[ev.Event] = []

    def on(e):
        seen.append(e)
        if isinstance(e, ev.AttemptRecorded):
            session.stop()

    check_once(session, on)
    states = [e.state for e in seen if isinstance(e, ev.StateChanged)]
    assert states[0] == "human"
    [attempt] = [e for e in seen if isinstance(e, ev.AttemptRecorded)]
    assert attempt.attempt["author"] == "human" and attempt.attempt["status"] == "correct"
    assert attempt.best == 0  # the store's mark, told with the event: a check run has no speedup to be best
    assert json.dumps(seen[-1].to_dict())  # SessionEnded serializes


@pytest.mark.slow
def test_a_question_typed_without_an_agent_goes_on_the_next_attempt_and_to_a_later_agent(workspace, fake_api):
    cfg = load_config(workspace).with_overrides(max_turns=1, question_timeout_s=5.0)
    session = Session.create(workspace, "attention_cpu", cfg, use_agent=False)
    kernel = session.files.kernel
    kernel.write_text(kernel.read_text().replace(OLD, OLD + "  // typed by a person"))
    seen: list[ev.Event] = []

    def on(e):
        seen.append(e)
        if isinstance(e, ev.HarnessFinished) and e.attempt is None:
            session.stop()

    session.subscribe(on)
    session.start()
    session.answer_question(None, "Is the inner loop vectorized?")  # no decision point is open
    session.run_harness_now(mode="check", quick=True)
    session.run_harness_now(mode="check", quick=True)  # the same kernel again: nothing to record
    assert session.join(timeout=120)
    [asked] = [e for e in seen if isinstance(e, ev.QuestionAsked)]
    assert asked.chosen_by == "human" and asked.text == "Is the inner loop vectorized?"
    [attempt] = session.store.attempts(session.id)
    assert attempt.question == asked.question_id
    finished = [(e.attempt, e.note) for e in seen if isinstance(e, ev.HarnessFinished)]
    assert finished[0] == (1, "") and finished[1][0] is None and "unchanged" in finished[1][1]

    # An agent that joins later is told the task first, and gets the question too.
    api = fake_api([reply(text("Looking."))])
    later = Session.open(workspace, session.id, cfg, autonomous=True, human_present=False, use_agent=True)
    assert later.run_forever().reason == "max turns reached (1)"
    sent = [b["text"] for b in api.requests[0]["messages"][0]["content"]]
    assert any(t.startswith("Make the attention_cpu kernel") for t in sent)
    assert any(t.endswith("Is the inner loop vectorized?") for t in sent)


@pytest.mark.slow
def test_attempts_made_while_a_decision_point_waits_do_not_open_another(workspace):
    cfg = load_config(workspace).with_overrides(question_timeout_s=150.0)
    session = Session.create(workspace, "attention_cpu", cfg, use_agent=False)
    kernel = session.files.kernel
    seed = kernel.read_text()
    runs: list[ev.HarnessFinished] = []
    points: list[ev.DecisionPointReached] = []

    def run_broken() -> None:  # a person's edit that does not compile, then `r`
        kernel.write_text(seed + f"\nint broken_{len(runs)} = undeclared_{len(runs)};\n")
        session.run_harness_now(mode="check", quick=True)

    def on(e):
        if isinstance(e, ev.DecisionPointReached):
            points.append(e)
        elif isinstance(e, ev.HarnessFinished):
            runs.append(e)
            if len(runs) < 6:  # 3 failures open failure_streak; 3 more arrive while it waits
                run_broken()
            else:
                session.answer_question(None, None)  # skip the point that is open
        elif isinstance(e, ev.StateChanged) and e.state == "human" and len(runs) == 6:
            session.stop()

    session.subscribe(on)
    session.start()
    run_broken()
    assert session.join(timeout=170)
    assert [a.status for a in session.store.attempts(session.id)] == ["compile_error"] * 6
    assert [p.point for p in points] == ["failure_streak"]


@pytest.mark.slow
def test_a_rollback_to_the_latest_attempt_is_refused_and_the_session_goes_on(workspace):
    session = edited_by_a_person(workspace)
    seen: list[ev.Event] = []

    def on(e):
        seen.append(e)
        if isinstance(e, ev.AttemptRecorded):
            session.rollback(e.attempt["number"])  # the latest already: nothing to roll back
        elif isinstance(e, ev.ErrorEvent):
            session.run_harness_now(mode="check", quick=True)  # the session still takes commands
        elif isinstance(e, ev.HarnessFinished) and e.attempt is None:
            session.stop()

    session.subscribe(on)
    session.start()
    session.run_harness_now(mode="check", quick=True)
    assert session.join(timeout=120)
    [error] = [e for e in seen if isinstance(e, ev.ErrorEvent)]
    assert "already has attempt 1's kernel; nothing to roll back" in error.message and error.recoverable
    assert seen[-1].reason == "stopped"  # not "error: ...": a refused rollback does not end the session
    assert [e.status for e in seen if isinstance(e, ev.HarnessFinished)][-1] == "correct"


def test_recording_a_run_reads_the_attempt_log_once(workspace):
    """The event's best mark and the question history come from one read of the session's attempts (each read is a
    `git log` over the session branch; the engine read it twice per run until session 28)."""
    session = edited_by_a_person(workspace)
    reads: list[int] = []
    real = session.store.attempts

    def counted(sid):
        reads.append(len(reads))
        return real(sid)

    session.store.attempts = counted
    done: list[ev.AttemptRecorded] = []

    def on(e):
        if isinstance(e, ev.AttemptRecorded):
            done.append(e)
            reads.clear()  # count from the record on: the event is sent after the one read
        if isinstance(e, ev.HarnessFinished):
            session.stop()

    check_once(session, on)
    assert len(done) == 1
    # after the event: the question history reuses the list; only the session's end reads the log again
    assert len(reads) <= 1
