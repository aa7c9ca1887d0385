"""The session trace: append + fsync per event, readable after a kill, torn tail handled."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ks_tui.errors import InputFileError
from ks_tui.trace import Trace

ROOT = Path(__file__).resolve().parents[2]


def test_round_trip_one_object_per_line(tmp_path):
    path = tmp_path / "s" / "trace.jsonl"
    t = Trace(path)
    t.append("user_message", {"text": "make it faster", "source": "human"})
    t.append("tool_call", {"id": "t1", "name": "run_harness", "input": {"mode": "bench", "quick": True}})
    t.append("turn_end")
    lines = path.read_text().splitlines()
    assert len(lines) == 3
    assert all(set(json.loads(ln)) == {"time", "kind", "payload"} for ln in lines)
    events = Trace.read(path)
    assert [e["kind"] for e in events] == ["user_message", "tool_call", "turn_end"]
    assert events[1]["payload"]["input"] == {"mode": "bench", "quick": True}
    assert events[2]["payload"] == {}
    assert Trace.read(tmp_path / "absent.jsonl") == []


def test_torn_last_line_is_skipped_and_set_aside_by_the_next_writer(tmp_path):
    path = tmp_path / "trace.jsonl"
    Trace(path).append("a", {"n": 1})
    with open(path, "a") as f:
        f.write('{"time": "2026-12-02T00:00:00", "kind": "b", "pay')    # what a kill mid-write leaves
    assert [e["kind"] for e in Trace.read(path)] == ["a"]

    Trace(path).append("c", {"n": 3})
    assert [e["kind"] for e in Trace.read(path)] == ["a", "c"]
    assert path.read_text().count("\n") == 2
    assert '"kind": "b", "pay' in path.with_name("trace.jsonl.torn").read_text()


def test_damage_in_the_middle_is_reported_with_its_line(tmp_path):
    path = tmp_path / "trace.jsonl"
    Trace(path).append("a")
    with open(path, "a") as f:
        f.write("not json\n")
    Trace(path).append("b")
    with pytest.raises(InputFileError, match=r"trace.jsonl:2"):
        Trace.read(path)


def test_events_written_before_a_sigkill_survive(tmp_path):
    path = tmp_path / "trace.jsonl"
    code = ("import sys; from ks_tui.trace import Trace\n"
            "t = Trace(sys.argv[1])\n"
            "i = 0\n"
            "while True:\n"
            "    t.append('tick', {'i': i, 'pad': 'x' * 500})\n"
            "    if i == 20: print('ready', flush=True)\n"
            "    i += 1\n")
    child = subprocess.Popen([sys.executable, "-c", code, str(path)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "ready"
    child.send_signal(signal.SIGKILL)
    child.wait()
    events = Trace.read(path)
    assert len(events) >= 21
    assert [e["payload"]["i"] for e in events] == list(range(len(events)))
    # A resumed writer carries on from a clean line boundary.
    Trace(path).append("resumed")
    assert Trace.read(path)[-1]["kind"] == "resumed"


def test_a_last_event_missing_only_its_newline_is_kept_not_set_aside(tmp_path):
    path = tmp_path / "trace.jsonl"
    t = Trace(path)
    t.append("user_message", {"text": "one", "source": "human"})
    path.write_bytes(path.read_bytes() + b'{"time": "t", "kind": "turn_end", "payload": {}}')  # saved by an editor
    Trace(path).append("turn_end")
    assert [e["kind"] for e in Trace.read(path)] == ["user_message", "turn_end", "turn_end"]
    assert not path.with_name("trace.jsonl.torn").exists()


@pytest.mark.parametrize("line, words", [
    ('{"kind": "usage", "payload": "x"}', "its payload is not an object"),
    ('{"kind": 5, "payload": {}}', "not an event object"),
])
def test_an_event_of_the_wrong_shape_is_reported_with_its_line(tmp_path, line, words):
    path = tmp_path / "trace.jsonl"
    Trace(path).append("turn_end")
    path.write_text(path.read_text() + line + "\n" + path.read_text())
    with pytest.raises(InputFileError) as err:
        Trace.read(path)
    assert f"{path}:2:" in str(err.value) and words in str(err.value)


def test_a_session_whose_trace_lacks_a_field_says_which_event_in_one_line(tmp_path, git_env):
    from tests.attempts.test_cli import ks

    assert ks("init", "ws", cwd=tmp_path).returncode == 0
    ws = tmp_path / "ws"
    sid = ks("session", "new", "attention_cpu", cwd=ws).stdout.strip()
    trace = ws / "sessions" / sid / "trace.jsonl"
    with open(trace, "a") as f:
        f.write(json.dumps({"time": "t", "kind": "usage", "payload": {"output_tokens": 3}}) + "\n")
    out = subprocess.run([sys.executable, "-m", "ks_tui", "run", "--session", sid, "--headless"], cwd=ws,
                         capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                         env={**__import__("os").environ, "PYTHONPATH": str(ROOT), "ANTHROPIC_API_KEY": "sk-test",
                              "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"})
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    n = len(trace.read_text().splitlines())
    assert f"trace.jsonl: event {n} (usage) lacks what its kind needs: KeyError: 'input_tokens'" in out.stderr
    report = ks("report", sid, cwd=ws)  # the report reads what it can
    assert report.returncode == 0, report.stderr
