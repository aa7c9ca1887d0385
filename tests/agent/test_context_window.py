"""A long session outgrows the model's context window and goes on: older turns are compacted
before the request would not fit, a prompt the API still refuses as too long is compacted and
sent again, and a resumed session rebuilds the compacted conversation from its trace.

The scripted server counts a prompt as its `usage` does (four characters a token) and refuses
one above its window with the API's 400 "prompt is too long"; the real SDK, g++ and git run."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys

import pytest

from ks_tui import events as ev
from ks_tui.agent.context import LEVELS, STUB, compact
from tests.support.fake_messages_api import prompt_tokens, reply, text, tool_use, validate_request
from tests.support.sessions import autonomous_session as start

pytestmark = pytest.mark.timeout(180)

# A kernel file of ~40k characters (~10k tokens as the server counts): each read or write of
# it is a third of the 30k-token window below.
FILLER = "".join(f"// note {i:05d}: a comment line that makes the kernel file long\n" for i in range(600))
WINDOW = 30_000


def big_kernel(ws) -> str:
    return (ws / "kernels" / "attention_cpu" / "kernel.cpp").read_text() + FILLER


def reads(n: int, words: int = 0) -> list:
    """n turns that read the whole kernel, each saying `words` words of reasoning first."""
    return [reply(text(f"Reading it again ({i}). " + "hmm " * words), tool_use("read_file", {"path": "kernel.cpp"}))
            for i in range(n)]


def test_a_session_longer_than_the_window_goes_on_with_older_turns_compacted(workspace, fake_api):
    script = [reply(tool_use("write_file", {"path": "kernel.cpp", "content": big_kernel(workspace)})),
              *reads(6), reply(text("Done."))]
    api = fake_api(script, context_window=WINDOW)
    session, seen = start(workspace, max_turns=len(script), context_window=WINDOW)
    end = session.run_forever()

    # Eight reads and writes of ~10k tokens each would need ~80k: without compaction the
    # server refuses the fourth request and the session ends with an error.
    assert end.reason == f"max turns reached ({len(script)})", end.reason
    assert not api.rejected
    assert all(prompt_tokens(body) <= WINDOW for body in api.requests)
    done = [e for e in seen if isinstance(e, ev.ContextCompacted)]
    assert done and all(e.reason == "threshold" and e.cleared > 0 and e.tokens_after < e.tokens_before for e in done)

    last = api.requests[-1]["messages"]
    results = [b for m in last if m["role"] == "user" for b in m["content"] if b["type"] == "tool_result"]
    # The newest read is whole; the older file contents are stubs that name their call.
    assert results[-1]["content"] == big_kernel(workspace)
    stubs = [r["content"] for r in results if r["content"].startswith(STUB)]
    assert stubs and all("read_file(kernel.cpp)" in s or "write_file(kernel.cpp)" in s for s in stubs)
    # The file written at the start is no longer sent: a stub in its call, or the call removed.
    writes = [b for m in last if m["role"] == "assistant" for b in m["content"] if b.get("name") == "write_file"]
    assert all(w["input"]["content"].startswith(STUB) and w["input"]["path"] == "kernel.cpp" for w in writes)
    assert FILLER not in json.dumps(last[:-2])
    # The model is told what happened, once per compaction (the oldest notes may be removed since).
    notes = [b["text"] for m in last if m["role"] == "user" for b in m["content"]
             if b["type"] == "text" and "neared the model's context window" in b["text"]]
    assert 1 <= len(notes) <= len(done)
    assert sum("neared the model's context window" in json.dumps(b["messages"][-1]) for b in api.requests) == len(done)
    # The status line's figure: the share of the window the API counted for each request.
    usage = [e for e in seen if isinstance(e, ev.Usage)]
    assert [u.context_tokens for u in usage] == [prompt_tokens(b) for b in api.requests]
    assert all(u.context_window == WINDOW for u in usage)

    # A resumed session replays the compactions into the same messages, and the next request
    # it sends is the conversation as it was, plus the new turn.
    again, _ = start(workspace, max_turns=1, sid=session.id, context_window=WINDOW)
    assert again.conv.messages == session.conv.messages
    again.send_message("And now?")
    fake_api([reply(text("Still here."))], context_window=WINDOW)
    assert again.run_forever().reason == "max turns reached (1)"


def test_a_prompt_the_api_refuses_as_too_long_is_compacted_and_sent_again(workspace, fake_api):
    # ks believes the window is ten times larger than the server's, so only the API's 400 can
    # tell it: the refused request is compacted with the API's count and goes again, and the
    # later ones are kept under the window the API named (one refusal, not one a compaction).
    script = [reply(tool_use("write_file", {"path": "kernel.cpp", "content": big_kernel(workspace)})),
              *reads(8), reply(text("Done."))]
    api = fake_api(script, context_window=WINDOW)
    session, seen = start(workspace, max_turns=len(script), context_window=10 * WINDOW)
    end = session.run_forever()

    assert end.reason == f"max turns reached ({len(script)})", end.reason
    assert len(api.rejected) == 1 and prompt_tokens(api.rejected[0]) > WINDOW
    done = [e for e in seen if isinstance(e, ev.ContextCompacted)]
    assert [e.reason for e in done][:1] == ["too_long"] and len(done) > 1
    assert all(e.reason == "threshold" and e.window == WINDOW for e in done[1:])
    assert not any(isinstance(e, ev.ErrorEvent) for e in seen)


def test_a_prompt_that_cannot_be_made_to_fit_ends_with_one_clear_message(workspace, fake_api):
    # Nothing older to clear: the first request alone is over the server's window.
    api = fake_api([reply(text("never sent"))], context_window=200)
    session, seen = start(workspace, max_turns=2)
    end = session.run_forever()

    assert end.reason == "ended: the conversation does not fit the context window"
    [error] = [e for e in seen if isinstance(e, ev.ErrorEvent)]
    assert "prompt is too long" in error.message and "roll back or start a new session" in error.message
    assert not error.recoverable and api.requests == [] and len(api.rejected) == 1
    assert not any(isinstance(e, ev.ContextCompacted) for e in seen)


@pytest.mark.slow
def test_a_rollback_after_compactions_cuts_the_conversation_where_its_attempt_was(workspace, fake_api):
    edit = {"path": "kernel.cpp", "old_string": "std::vector<float> acc(d);",
            "new_string": "std::vector<float> acc(d);  // one row"}
    late = {"path": "kernel.cpp", "old_string": "// note 00000:", "new_string": "// note zero:"}
    last = {"path": "kernel.cpp", "old_string": "// note 00001:", "new_string": "// note one:"}
    check = tool_use("run_harness", {"mode": "check", "quick": True})
    script = [reply(tool_use("edit_file", edit)), reply(check),  # attempt 1, early
              reply(tool_use("write_file", {"path": "kernel.cpp", "content": big_kernel(workspace)})),
              *reads(10, words=400), reply(tool_use("edit_file", late)), reply(check),  # attempt 2, late
              reply(tool_use("edit_file", last)), reply(check), reply(text("Done."))]  # attempt 3, the latest
    fake_api(script, context_window=WINDOW)
    session, seen = start(workspace, max_turns=len(script), context_window=WINDOW)
    session.run_forever()
    marks = {e.attempt["number"]: e.conversation_len for e in seen if isinstance(e, ev.AttemptRecorded)}
    assert sorted(marks) == [1, 2, 3]
    # The oldest messages, attempt 1's point among them, were removed; attempt 2's point is kept.
    base = session.conv.base
    assert any(e.removed for e in seen if isinstance(e, ev.ContextCompacted)) and base > 0
    assert marks[1] - base <= 1 < marks[2] - base

    again, _ = start(workspace, max_turns=1, sid=session.id, context_window=WINDOW)
    assert again.conv.base == base and again.conv.messages == session.conv.messages
    again.rollback(2)
    api = fake_api([reply(text("Back at attempt 2."))], context_window=WINDOW)
    assert again.run_forever().reason == "max turns reached (1)"
    sent = api.requests[0]["messages"]
    assert len(sent) == marks[2] - base and "recorded as attempt 2" in json.dumps(sent[-1])
    assert "rolled the kernel and this conversation back to attempt 2" in json.dumps(sent[-1])
    assert "// note zero:" in again.files.kernel.read_text() and "// note one:" not in again.files.kernel.read_text()

    # Attempt 1's stretch of the conversation is gone: a rollback to it keeps the task alone.
    third, _ = start(workspace, max_turns=1, sid=session.id, context_window=WINDOW)
    third.rollback(1)
    api = fake_api([reply(text("Back at attempt 1."))], context_window=WINDOW)
    assert third.run_forever().reason == "max turns reached (1)"
    [task] = api.requests[0]["messages"]
    assert "messages that followed this one were removed" in json.dumps(task)
    assert "rolled the kernel and this conversation back to attempt 1" in json.dumps(task)
    assert "// one row" in third.files.kernel.read_text() and FILLER not in third.files.kernel.read_text()


@pytest.mark.slow
def test_headless_prints_the_window_share_and_each_compaction(workspace, fake_api, monkeypatch):
    script = [reply(tool_use("write_file", {"path": "kernel.cpp", "content": big_kernel(workspace)})),
              *reads(3), reply(text("Done."))]
    api = fake_api(script, context_window=WINDOW)
    monkeypatch.setenv("KS_CONTEXT_WINDOW", str(WINDOW))
    out = subprocess.run([sys.executable, "-m", "ks_tui", "--workspace", str(workspace), "run", "attention_cpu",
                          "--headless", "--autonomous", "--max-turns", str(len(script))],
                         capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    assert not api.rejected and f"max turns reached ({len(script)})" in out.stdout
    shares = [int(m) for m in re.findall(rf"; context (\d+)% of {WINDOW}", out.stdout)]
    assert len(shares) == len(script) and max(shares) <= 100
    assert re.search(rf"context: \d+ older items cleared( \(\d+ messages removed\))?, about \d+ -> \d+ of {WINDOW} "
                     r"tokens \(threshold\)",
                     out.stdout), out.stdout
    assert "[ks] This conversation neared the model's context window" in out.stdout

    # `ks report` counts the compactions and names the largest prompt the API counted.
    [sid] = [p.name for p in (workspace / "sessions").iterdir() if p.is_dir()]
    ks = [sys.executable, "-m", "ks_tui", "--workspace", str(workspace), "report", sid]
    report = json.loads(subprocess.run(ks + ["--json"], capture_output=True, text=True, timeout=60).stdout)
    compactions = len(re.findall(r"context: \d+ older items cleared", out.stdout))
    assert report["context"]["compactions"] == compactions >= 1
    assert report["context"]["largest_prompt_tokens"] == max(prompt_tokens(b) for b in api.requests)
    text_out = subprocess.run(ks, capture_output=True, text=True, timeout=60).stdout
    assert f"older turns compacted {compactions} times" in text_out


def conversation(turns: int = 6) -> list[dict]:
    """A conversation as the engine keeps it: the task, then tool calls and their results."""
    msgs = [{"role": "user", "content": [{"type": "text", "text": "the task " * 400}]}]
    for i in range(turns):
        msgs.append({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "hmm " * 300, "signature": "s"},
            {"type": "text", "text": f"step {i}: " + "why " * 1500},
            {"type": "tool_use", "id": f"t{i}", "name": "write_file",
             "input": {"path": "kernel.cpp", "content": "x" * 5000}}]})
        msgs.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"t{i}", "content": "y" * 3000},
            {"type": "text", "text": "a short note"}]})
    return msgs


def request(msgs: list[dict]) -> dict:
    return {"model": "m", "max_tokens": 10, "messages": msgs}


@pytest.mark.parametrize("level", range(len(LEVELS)))
def test_compaction_keeps_the_shape_the_api_needs_and_only_ever_saves(level):
    msgs = conversation(12)
    before = copy.deepcopy(msgs)
    keep = LEVELS[level].keep_recent
    done = compact(msgs, LEVELS[level])

    assert done.cleared > 0 and len(json.dumps(msgs)) < len(json.dumps(before))
    assert validate_request(request(msgs)) is None  # roles alternate, every tool_use has its result
    assert len(msgs) + done.removed == len(before)
    assert msgs[0]["content"][0] == before[0]["content"][0] and msgs[-keep:] == before[-keep:]  # kept whole
    for old, new in zip(before[1 + done.removed:-keep], msgs[1:-keep]):
        assert all(b["type"] != "thinking" for b in new["content"]) and new["content"]
        ids = lambda m: [b.get("id") or b.get("tool_use_id") for b in m["content"] if b.get("type") != "thinking"]
        assert ids(old) == ids(new)  # a tool_use keeps its id, a tool_result its call
    again = copy.deepcopy(msgs)
    assert compact(again, LEVELS[level]).cleared == 0 and again == msgs  # a second pass finds nothing


def test_each_level_clears_more_than_the_one_before():
    sizes = []
    for level in LEVELS:
        msgs = conversation(12)
        compact(msgs, level)
        sizes.append(len(json.dumps(msgs)))
    assert sizes == sorted(sizes, reverse=True) and len(set(sizes)) == len(sizes)


@pytest.mark.parametrize("turns", [1, 7, 8, 9, 10, 21, 200])
def test_the_last_level_removes_whole_pairs_and_the_task_message_counts_them(turns):
    msgs = conversation(turns)
    first = compact(msgs, LEVELS[-1])
    kept = LEVELS[-1].remove_before
    # Pairs (1, 2), (3, 4), ... up to the newest `kept` messages (one more when that splits a pair).
    assert first.removed == 2 * max(0, (2 * turns - kept) // 2)
    assert validate_request(request(msgs)) is None and msgs[1]["role"] == "assistant" if len(msgs) > 1 else True
    # Two more turns and another pass: the task's message names the running count, once.
    msgs += conversation(1)[1:] * 2
    for i, m in enumerate(msgs[-4:]):
        for b in m["content"]:
            if "id" in b or "tool_use_id" in b:
                b["id" if "id" in b else "tool_use_id"] = f"new{i // 2}"
    second = compact(msgs, LEVELS[-1])
    total = first.removed + second.removed
    notes = [b["text"] for b in msgs[0]["content"] if "were removed" in b.get("text", "")]
    assert notes == ([f"[ks: the {total} messages that followed this one were removed to fit the context window; "
                      "list_attempts and show_attempt hold what was done in them]"] if total else [])
    assert validate_request(request(msgs)) is None


def test_a_conversations_length_counts_what_was_removed_so_marks_keep_their_place():
    from ks_tui.agent.conversation import Conversation

    conv = Conversation(conversation(20))  # 41 messages
    mark_old, mark_new = 5, 37  # lengths taken before the removal, as attempts record them
    conv.compact(LEVELS[-1])
    assert conv.base == 24 and len(conv) == 41
    assert conv.head(mark_new)[-1] is conv.messages[mark_new - conv.base - 1]
    assert conv.head(mark_old) == conv.messages[:1]  # that stretch is gone: the task alone
    conv.truncate(mark_new)
    assert len(conv) == mark_new and conv.messages[-1]["content"][0]["tool_use_id"] == "t17"


def test_a_task_message_that_only_looks_like_the_removal_line_is_kept_as_it_is():
    msgs = conversation(12)
    typed = {"type": "text", "text": "[ks: the many messages that followed this one were removed, said nobody]"}
    msgs[0]["content"].append(typed)
    assert compact(msgs, LEVELS[-1]).removed == 8
    assert msgs[0]["content"][1] == typed and "the 8 messages that followed" in msgs[0]["content"][2]["text"]
