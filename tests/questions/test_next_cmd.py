"""`ks questions next`: decision points and ranked questions for a real session's attempts,
read through the attempt store from a real git workspace."""

from __future__ import annotations

import hashlib
import json

import pytest

from ks_tui.cli import main
from ks_tui.questions import EfficacyStore, load_bank
from ks_tui.questions.bank import default_bank_path


def result(kernel, status, speedup=None, tflops=0.05):
    ok = status == "correct"
    return {
        "schema": 1, "task": "attention_cpu", "source": str(kernel), "mode": "bench", "quick": False,
        "kernel_sha256": hashlib.sha256(kernel.read_bytes()).hexdigest(), "seed": 7,
        "device": "cpu", "torch": "2.13.0", "cuda": None, "status": status,
        "message": "" if ok else f"{status} on s64", "compile": {"ok": status != "compile_error"},
        "scenarios": [{"id": "s64", "ok": ok, "tflops": tflops if ok else None,
                       "speedup": (speedup or 1.0) * 0.8 if ok else None}],
        "correct": "1/1" if ok else "0/1", "geomean_speedup": speedup if ok else None,
    }


@pytest.fixture
def session(workspace):
    from ks_tui.attempts import AttemptStore

    store = AttemptStore(workspace)
    info = store.new_session("attention_cpu")
    kernel = store.kernel_path(info.id)

    def attempt(status, speedup=None, question=None):
        with kernel.open("a") as f:
            f.write(f"// change {status} {speedup}\n")
        return store.record(info.id, result(kernel, status, speedup), question=question)

    return workspace, info.id, attempt


def run_next(workspace, capsys, *args):
    code = main(["--workspace", str(workspace), "lab", "next", *args, "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)


def test_a_fresh_session_is_at_session_start(session, capsys):
    workspace, sid, _ = session
    doc = run_next(workspace, capsys, "--session", sid)
    assert [p["point"] for p in doc["points"]] == ["session_start"]
    qs = doc["points"][0]["questions"]
    assert len(qs) == 3 and all("session_start" in q["points"] for q in qs)
    assert doc["context"]["is_cpu"] is True
    # CUDA-only questions are not offered on the CPU task
    bank = load_bank(default_bank_path(workspace))
    assert not any("is_cuda" in bank.get(q["id"]).requires for q in qs)


def test_a_failure_streak_after_a_pass(session, capsys):
    workspace, sid, attempt = session
    attempt("correct", 0.9)
    for status in ("compile_error", "incorrect", "incorrect"):
        attempt(status)
    doc = run_next(workspace, capsys, "--session", sid, "-k", "2")
    assert [p["point"] for p in doc["points"]] == ["failure_streak"]
    assert "3 failed attempts in a row" in doc["points"][0]["reason"]
    assert len(doc["points"][0]["questions"]) == 2
    assert doc["context"]["has_failing_scenarios"] and doc["context"]["has_correct_attempt"]
    assert not doc["context"]["has_losing_scenarios"]  # the failing run timed nothing


def test_nothing_fires_after_a_plain_gain(session, capsys):
    workspace, sid, attempt = session
    attempt("correct", 0.9)
    attempt("correct", 1.0)
    doc = run_next(workspace, capsys, "--session", sid)
    assert doc["points"] == []
    assert main(["--workspace", str(workspace), "lab", "next", "--session", sid]) == 0
    assert "no decision point fires after attempt 2" in capsys.readouterr().out


def test_asked_questions_are_not_offered_again_while_their_category_has_others(session, capsys):
    workspace, sid, attempt = session
    first = run_next(workspace, capsys, "--session", sid, "--point", "plateau", "-k", "50")["points"][0]["questions"]
    top = first[0]
    # asked through a commit trailer: the next attempt carries the question's id
    attempt("correct", 1.0, question=top["id"])
    later = run_next(workspace, capsys, "--session", sid, "--point", "plateau", "-k", "50")
    assert later["asked"] == [top["id"]]
    assert top["id"] not in [q["id"] for q in later["points"][0]["questions"]]
    # the efficacy store, when it has records for the session, is the source of what was asked
    bank = load_bank(default_bank_path(workspace))
    second = bank.get(first[1]["id"])
    EfficacyStore(workspace).record_asked(sid, second, point="plateau", history=[])
    again = run_next(workspace, capsys, "--session", sid, "--point", "plateau", "-k", "50")
    assert again["asked"] == [second.id]
    assert second.id not in [q["id"] for q in again["points"][0]["questions"]]


def test_text_output_and_bad_input(session, capsys):
    workspace, sid, _ = session
    assert main(["--workspace", str(workspace), "lab", "next", "--session", sid]) == 0
    out = capsys.readouterr().out
    assert out.startswith("session_start: the session starts")
    assert "  1. [" in out
    assert main(["--workspace", str(workspace), "lab", "next", "--session", "20990101-000000-abcd"]) == 2
    assert "no session" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["--workspace", str(workspace), "lab", "next", "--session", sid, "--point", "lunch"])
    assert e.value.code == 2


def test_from_inside_the_session_worktree_the_workspace_records_are_read(session, capsys, monkeypatch):
    workspace, sid, _ = session
    bank = load_bank(default_bank_path(workspace))
    EfficacyStore(workspace).record_asked(sid, bank.questions[0], point="session_start", history=[])
    monkeypatch.chdir(workspace / "sessions" / sid / "worktree" / "kernels" / "attention_cpu")
    assert main(["lab", "next", "--session", sid, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["asked"] == [bank.questions[0].id]
    assert main(["questions", "stats", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["questions"][bank.questions[0].id]["asked"] == 1


def test_without_a_session_the_most_recently_active_one_answers(session, capsys):
    workspace, sid, attempt = session
    attempt("correct", 0.9)
    attempt("correct", 1.0)
    doc = run_next(workspace, capsys)  # as `ks log` and `ks try`: no --session needed
    assert doc["session"] == sid and doc["attempts"] == 2
    assert run_next(workspace, capsys, "-s", sid) == doc


def test_without_any_session_it_says_how_to_start_one(workspace, capsys):
    assert main(["--workspace", str(workspace), "lab", "next"]) == 2
    err = capsys.readouterr().err
    assert "no sessions" in err and "ks session new" in err and "Traceback" not in err
