"""Remarks on attempts (`ks remark`): words added after the fact, in git notes, never by
rewriting the attempt's commit. Real git repositories and real `ks` child processes."""

from __future__ import annotations

import io
import json
import tarfile

import pytest

from ks_tui.attempts.remarks import REMARKS_REF, parse_remarks, remark_line
from tests.attempts.conftest import git, result_for
from tests.attempts.test_cli import bad_input, ks, toy_session  # noqa: F401 (the fixture)


def _attempt(ws, sid, kernel, tmp_path, n: int, speedup: float, change: bool = True, **fields) -> None:
    if change:
        kernel.write_text(kernel.read_text() + f"static int version_{n};  // version {n}\n")  # new code
    res = tmp_path / f"r{n}.json"
    res.write_text(json.dumps({**result_for(kernel, speedup=speedup), **fields}))
    out = ks("lab", "record", "-s", sid, "--result", str(res), "--summary", f"v{n}: +17% on q128", cwd=ws)
    assert out.returncode == 0, out.stderr


@pytest.mark.slow
def test_a_remark_is_added_without_touching_the_attempt_and_shows_everywhere(toy_session, tmp_path):
    ws, sid, kernel = toy_session
    _attempt(ws, sid, kernel, tmp_path, 1, 1.17)
    _attempt(ws, sid, kernel, tmp_path, 2, 1.05)
    branch = f"ks/toy/{sid}"
    tip, first = git(ws, "rev-parse", branch).strip(), git(ws, "rev-parse", f"{branch}~1").strip()

    out = ks("lab", "remark", "1", "-s", sid, "the +17%", "was cuDNN timed slow; the kernel was 18% slower", cwd=ws)
    assert out.returncode == 0, out.stderr
    assert "human: the +17% was cuDNN timed slow; the kernel was 18% slower" in out.stdout
    assert ks("lab", "remark", first[:8], "re-measured in call 2: 0.85", "--author", "agent", cwd=ws).returncode == 0

    # The commits, the summary and the stored result are as they were.
    assert git(ws, "rev-parse", branch).strip() == tip
    log = json.loads(ks("log", "-s", sid, "--json", cwd=ws).stdout)["attempts"]
    assert log[0]["summary"] == "v1: +17% on q128" and log[0]["sha"] == first
    assert [(r["author"], r["text"]) for r in log[0]["remarks"]] == [
        ("human", "the +17% was cuDNN timed slow; the kernel was 18% slower"),
        ("agent", "re-measured in call 2: 0.85")]
    assert log[1]["remarks"] == []
    doc = json.loads(ks("lab", "remark", "2", "-s", sid, "level in call 3", "--json", cwd=ws).stdout)  # stdout: JSON only
    assert (doc["attempt"]["number"], [r["text"] for r in doc["attempt"]["remarks"]]) == (2, ["level in call 3"])
    assert json.loads(ks("show", "1", "-s", sid, "--json", cwd=ws).stdout)["result"]["geomean_speedup"] == 1.17

    table = ks("log", "-s", sid, cwd=ws).stdout
    assert "v1: +17% on q128 [2 remarks]" in table and "(an attempt's remarks: ks show N)" in table
    shown = ks("show", "1", "-s", sid, cwd=ws).stdout
    assert "human: the +17% was cuDNN timed slow" in shown and "agent: re-measured in call 2: 0.85" in shown
    assert "human: level in call 3" in ks("show", "2", "-s", sid, cwd=ws).stdout

    trace = [json.loads(line) for line in (ws / "sessions" / sid / "trace.jsonl").read_text().splitlines()]
    remarks = [t["payload"] for t in trace if t["kind"] == "remark"]
    assert [(r["attempt"], r["author"]) for r in remarks] == [(1, "human"), (1, "agent"), (2, "human")]


def test_bad_remarks_are_one_line_errors_and_write_nothing(toy_session, tmp_path):
    ws, sid, kernel = toy_session
    _attempt(ws, sid, kernel, tmp_path, 1, 1.1)
    bad_input(ks("lab", "remark", "1", "-s", sid, "   ", cwd=ws), "needs some text")
    bad_input(ks("lab", "remark", "7", "-s", sid, "no such attempt", cwd=ws), "no attempt 7")
    bad_input(ks("lab", "remark", "1", "-s", "nosuchsession", "x", cwd=ws), "nosuchsession")
    assert git(ws, "notes", f"--ref={REMARKS_REF}", "list", check=False).strip() == ""
    assert json.loads(ks("log", "-s", sid, "--json", cwd=ws).stdout)["attempts"][0]["remarks"] == []


def test_a_remark_is_one_line_and_a_hand_written_note_is_read_as_text(toy_session, tmp_path):
    ws, sid, kernel = toy_session
    _attempt(ws, sid, kernel, tmp_path, 1, 1.1)
    line = remark_line("two\nlines\tand a tab", "human")
    assert line.count("\t") == 2 and "\n" not in line and line.endswith("two lines and a tab")
    sha = git(ws, "rev-parse", f"ks/toy/{sid}").strip()
    git(ws, "notes", f"--ref={REMARKS_REF}", "add", "-m", "written with git notes by hand", sha)
    assert ks("lab", "remark", "1", "-s", sid, "and one by ks", cwd=ws).returncode == 0
    remarks = json.loads(ks("log", "-s", sid, "--json", cwd=ws).stdout)["attempts"][0]["remarks"]
    assert remarks[0] == {"time": "", "author": "", "text": "written with git notes by hand"}
    assert remarks[1]["text"] == "and one by ks"
    assert parse_remarks("\n\nnot\ta time\tx\n") == [{"time": "", "author": "", "text": "not\ta time\tx"}]
    # Declared fields follow the text; a tab in a hand-written text that names no field stays text.
    both = parse_remarks(remark_line("x=1 is text", "agent", pair="declared:ab", question="limit-floor"))[0]
    assert (both["text"], both["pair"], both["question"]) == ("x=1 is text", "declared:ab", "limit-floor")
    odd = parse_remarks("2026-12-06T16:00:00+00:00\thuman\tsee\tnote=3\n")[0]
    assert odd["text"] == "see\tnote=3" and "pair" not in odd and "question" not in odd


@pytest.mark.slow
def test_an_export_carries_remarks_and_an_older_export_without_them_imports(toy_session, tmp_path):
    ws, sid, kernel = toy_session
    _attempt(ws, sid, kernel, tmp_path, 1, 1.1)
    assert ks("lab", "remark", "1", "-s", sid, "kept across checkouts", cwd=ws).returncode == 0
    export = tmp_path / "s.tgz"
    assert ks("session", "export", sid, str(export), cwd=ws).returncode == 0

    # An export made before remarks existed (no remarks.json), and one whose remarks.json is broken.
    with tarfile.open(export) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}
    assert "remarks.json" in members

    def write(path, parts):
        with tarfile.open(path, "w:gz") as tar:
            for name, data in parts.items():
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))

    old, broken = tmp_path / "old.tgz", tmp_path / "broken.tgz"
    write(old, {k: v for k, v in members.items() if k != "remarks.json"})
    write(broken, {**members, "remarks.json": b"[1, 2"})

    branch = git(ws, "branch", "--show-current").strip()
    for name, archive, remarks in (("c1", export, ["kept across checkouts"]), ("c2", old, [])):
        clone = tmp_path / name
        git(tmp_path, "clone", "--quiet", "--branch", branch, str(ws), str(clone))
        out = ks("session", "import", str(archive), cwd=clone)
        assert out.returncode == 0, out.stderr
        got = json.loads(ks("log", "-s", sid, "--json", cwd=clone).stdout)["attempts"][0]["remarks"]
        assert [r["text"] for r in got] == remarks
    clone = tmp_path / "c3"
    git(tmp_path, "clone", "--quiet", "--branch", branch, str(ws), str(clone))
    bad_input(ks("session", "import", str(broken), cwd=clone), "remarks.json is not a JSON object")
    assert git(clone, "branch", "--list", "ks/*").strip() == ""


@pytest.mark.slow
def test_a_summary_longer_than_the_subject_is_kept_whole_in_the_commit_body(toy_session, tmp_path):
    ws, sid, kernel = toy_session
    long = ("next_l2pf1: the prefetch gated to one query tile per head. Measured: q128-k512 93.1 -> 109.4 us; "
            "the 40 d128 launches whose gate is off 0.973 (unmasked 0.969, causal 0.976), d96 0.993. Lost.")
    kernel.write_text(kernel.read_text() + "// long\n")
    res = tmp_path / "r.json"
    res.write_text(json.dumps(result_for(kernel, speedup=1.1)))
    assert ks("lab", "record", "-s", sid, "--result", str(res), "--summary", long, "--author", "agent", cwd=ws).returncode == 0
    a = json.loads(ks("log", "-s", sid, "--json", cwd=ws).stdout)["attempts"][0]
    assert len(a["summary"]) == 120 and a["summary"].endswith("…") and long.startswith(a["summary"][:-1])
    assert a["description"] == long
    assert (a["number"], a["author"], a["speedup"]) == (1, "agent", 1.1)  # the trailers still parse
    assert f"summary: {long}" in ks("show", "1", "-s", sid, cwd=ws).stdout
    assert git(ws, "log", "-1", "--format=%s", f"ks/toy/{sid}").strip() == a["summary"]

    # A short summary has no body; a rollback's subject quotes the cut one.
    kernel.write_text(kernel.read_text() + "// short\n")
    res.write_text(json.dumps(result_for(kernel, speedup=1.0)))
    assert ks("lab", "record", "-s", sid, "--result", str(res), "--summary", "short one", cwd=ws).returncode == 0
    assert ks("rollback", "1", "-s", sid, cwd=ws).returncode == 0
    log = json.loads(ks("log", "-s", sid, "--json", cwd=ws).stdout)["attempts"]
    assert log[1]["description"] == "" and "summary:" not in ks("show", "2", "-s", sid, cwd=ws).stdout
    assert log[2]["rollback_of"] == 1 and log[2]["summary"].startswith("rollback to attempt 1: next_l2pf1")


@pytest.mark.slow
def test_a_same_call_remark_pairs_two_runs_and_the_log_judges_them_side_by_side(toy_session, tmp_path):
    """Runs measured in one device call before pair tags existed: the bar between calls (2%) hides
    a +1% gain that the two runs, declared side by side, show against the same-call bar (0.5%)."""
    ws, sid, kernel = toy_session
    _attempt(ws, sid, kernel, tmp_path, 1, 1.00)
    _attempt(ws, sid, kernel, tmp_path, 2, 1.002, change=False)  # the same kernel again, in the later call
    _attempt(ws, sid, kernel, tmp_path, 3, 1.012)                 # a new kernel, in that call too
    _attempt(ws, sid, kernel, tmp_path, 4, 1.01, device="NVIDIA H200")
    doc = json.loads(ks("log", "-s", sid, "--json", cwd=ws).stdout)
    assert (doc["last_gain"], doc["last_gain_paired"]) == (1, None)

    out = ks("lab", "remark", "3", "-s", sid, "--same-call", "2", "call 5, one interleaved round", cwd=ws)
    assert out.returncode == 0, out.stderr
    assert "timed in the same call as #2: call 5, one interleaved round" in out.stdout
    log = json.loads(ks("log", "-s", sid, "--json", cwd=ws).stdout)
    assert (log["last_gain"], log["attempts_since_gain"]) == (3, 1)  # #4: the H200's first run, its reference
    assert log["last_gain_paired"]["over"] == 2 and log["last_gain_paired"]["declared"] is True
    assert abs(log["last_gain_paired"]["ratio"] - 1.012 / 1.002) < 1e-6
    remarks = {a["number"]: a["remarks"] for a in log["attempts"]}
    assert remarks[2][0]["pair"] == remarks[3][0]["pair"] and remarks[3][0]["pair"].startswith("declared:")
    assert remarks[2][0]["text"] == "timed in the same call as #3: call 5, one interleaved round"
    table = ks("log", "-s", sid, cwd=ws).stdout
    assert "(last gain: #3, +1.00% over #2, declared timed in the same call (a remark)" in table
    trace = [json.loads(line) for line in (ws / "sessions" / sid / "trace.jsonl").read_text().splitlines()]
    assert [(t["payload"]["attempt"], t["payload"]["pair"]) for t in trace if t["kind"] == "remark"] == [
        (3, remarks[3][0]["pair"]), (2, remarks[3][0]["pair"])]

    # What cannot be one call's pair is refused, and nothing is written.
    notes = git(ws, "notes", f"--ref={REMARKS_REF}", "list")
    bad_input(ks("lab", "remark", "3", "-s", sid, "--same-call", "1", "again", cwd=ws), "attempt 3 is already paired")
    bad_input(ks("lab", "remark", "4", "-s", sid, "--same-call", "1", "x", cwd=ws), "ran on different devices")
    bad_input(ks("lab", "remark", "1", "-s", sid, "--same-call", "1", "x", cwd=ws), "beside itself")
    bad_input(ks("lab", "remark", "1", "-s", sid, "--same-call", "9", "x", cwd=ws), "no attempt 9")
    bad_input(ks("lab", "remark", "1", "-s", sid, "--same-call", "2", "  ", cwd=ws), "needs the evidence")
    assert ks("rollback", "1", "-s", sid, cwd=ws).returncode == 0
    bad_input(ks("lab", "remark", "5", "-s", sid, "--same-call", "1", "x", cwd=ws), "a rollback")
    assert git(ws, "notes", f"--ref={REMARKS_REF}", "list") == notes

    # A third run joins the pair's tag; the declared pairs travel with an export.
    assert ks("lab", "remark", "1", "-s", sid, "--same-call", "2", "also in call 5", cwd=ws).returncode == 0
    log = json.loads(ks("log", "-s", sid, "--json", cwd=ws).stdout)
    assert log["attempts"][0]["remarks"][0]["pair"] == remarks[3][0]["pair"]
    assert len(log["attempts"][1]["remarks"]) == 1  # #2 had a tag already: no second remark on it
    export = tmp_path / "s.tgz"
    assert ks("session", "export", sid, str(export), cwd=ws).returncode == 0
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "--quiet", "--branch", git(ws, "branch", "--show-current").strip(), str(ws), str(clone))
    assert ks("session", "import", str(export), cwd=clone).returncode == 0
    assert json.loads(ks("log", "-s", sid, "--json", cwd=clone).stdout)["last_gain_paired"]["over"] == 2


def test_a_run_with_its_own_pair_tag_is_not_declared_again(toy_session, tmp_path):
    ws, sid, kernel = toy_session
    _attempt(ws, sid, kernel, tmp_path, 1, 1.0, pair="run7:1")
    _attempt(ws, sid, kernel, tmp_path, 2, 1.1)
    bad_input(ks("lab", "remark", "1", "-s", sid, "--same-call", "2", "x", cwd=ws), "already paired (tag run7:1)")
    assert ks("lab", "remark", "2", "-s", sid, "--same-call", "1", "round 1 of run7", cwd=ws).returncode == 0
    log = json.loads(ks("log", "-s", sid, "--json", cwd=ws).stdout)["attempts"]
    assert log[1]["remarks"][0]["pair"] == "run7:1" and log[0]["remarks"] == []  # it joins the run's own tag


@pytest.mark.slow
def test_a_question_remark_corrects_the_recorded_question_in_the_log_and_the_efficacy_record(toy_session, tmp_path):
    """Session 40 recorded two probes under limit-inherited that answered limit-residency: the commit's trailer
    stays, a remark declares the question, the log reads it, and the ask the first probe opened counts for it."""
    from tests.attempts.test_cli import ROOT

    ws, sid, kernel = toy_session
    (ws / "question_bank.yaml").write_text((ROOT / "question_bank.yaml").read_text())
    git(ws, "add", "question_bank.yaml")
    git(ws, "commit", "--quiet", "-m", "the project's bank")
    for n, (speedup, q) in enumerate([(1.0, "layer-overlap"), (0.9, "limit-inherited"), (0.95, "limit-inherited"),
                                      (1.0, None)], 1):
        kernel.write_text(kernel.read_text() + f"static int version_{n};\n")
        res = tmp_path / f"r{n}.json"
        res.write_text(json.dumps(result_for(kernel, speedup=speedup)))
        out = ks("lab", "record", "-s", sid, "--result", str(res), "--summary", f"v{n}", *(["--question", q] if q else []),
                 cwd=ws)
        assert out.returncode == 0, out.stderr
    stats = lambda: json.loads(ks("questions", "stats", "--json", cwd=ws).stdout)["questions"]  # noqa: E731
    assert stats()["limit-inherited"]["asked"] == 1 and "limit-residency" not in stats()
    tip = git(ws, "rev-parse", f"ks/toy/{sid}").strip()

    # #3 continued the ask #2 opened: declaring it first changes how it reads, and says which attempt holds the ask.
    out = ks("lab", "remark", "3", "-s", sid, "--question", "limit-residency", "the same probe", cwd=ws)
    assert out.returncode == 0, out.stderr
    assert ("question record unchanged: it continued the ask after attempt 1 (that ask counts for limit-inherited); "
            "to count that ask for limit-residency, declare attempt 2, which opened it") in out.stderr
    out = ks("lab", "remark", "2", "-s", sid, "--question", "limit-residency", "the probe asked whether one CTA an SM",
             "is the cap", cwd=ws)
    assert out.returncode == 0, out.stderr
    assert "answered limit-residency, not limit-inherited: the probe asked whether one CTA an SM is the cap" in out.stdout
    assert "the ask attempt 2 opened now counts for limit-residency, not limit-inherited" in out.stderr
    assert git(ws, "rev-parse", f"ks/toy/{sid}").strip() == tip  # no commit rewritten
    assert "KS-Question: limit-inherited" in git(ws, "log", "-1", "--format=%B", f"ks/toy/{sid}~2")
    log = json.loads(ks("log", "-s", sid, "--json", cwd=ws).stdout)["attempts"]
    assert [a["question"] for a in log] == ["layer-overlap", "limit-residency", "limit-residency", None]
    assert log[1]["remarks"][0]["question"] == "limit-residency"
    assert "[q:limit-residency (declared by a remark), 1 remark]" in ks("log", "-s", sid, cwd=ws).stdout
    assert stats()["limit-residency"]["asked"] == 1 and "limit-inherited" not in stats()
    assert stats()["limit-residency"]["text"].startswith("Which resource caps")

    out = ks("lab", "remark", "4", "-s", sid, "--question", "limit-floor", "asked but not recorded", cwd=ws)
    assert out.returncode == 0, out.stderr
    assert "unchanged: it recorded no question, so it opened no ask (that ask counts for limit-residency)" in out.stderr
    assert [a["question"] for a in json.loads(ks("log", "-s", sid, "--json", cwd=ws).stdout)["attempts"]] == [
        "layer-overlap", "limit-residency", "limit-residency", "limit-floor"]
    records = [json.loads(line) for line in (ws / "sessions" / "question_efficacy.jsonl").read_text().splitlines()]
    assert [(r["attempt"], r["was"], r["question"]) for r in records if r["kind"] == "retagged"] == [
        (2, "limit-inherited", "limit-residency")]

    # Bad declarations are one-line errors and write nothing.
    notes = git(ws, "notes", f"--ref={REMARKS_REF}", "list")
    bad_input(ks("lab", "remark", "2", "-s", sid, "--question", "limit-nope", "x", cwd=ws), "unknown question id 'limit-nope'")
    bad_input(ks("lab", "remark", "2", "-s", sid, "--question", "limit-residency", "x", cwd=ws), "already reads as answering")
    bad_input(ks("lab", "remark", "1", "-s", sid, "--question", "limit-floor", "  ", cwd=ws), "needs the reason")
    bad_input(ks("lab", "remark", "1", "-s", sid, "--question", "limit-floor", "--same-call", "2", "x", cwd=ws),
              "not allowed with argument")
    assert ks("rollback", "1", "-s", sid, cwd=ws).returncode == 0
    bad_input(ks("lab", "remark", "5", "-s", sid, "--question", "limit-floor", "x", cwd=ws), "a rollback")
    assert git(ws, "notes", f"--ref={REMARKS_REF}", "list") == notes

    # The declaration travels with an export.
    export = tmp_path / "s.tgz"
    assert ks("session", "export", sid, str(export), cwd=ws).returncode == 0
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "--quiet", "--branch", git(ws, "branch", "--show-current").strip(), str(ws), str(clone))
    assert ks("session", "import", str(export), cwd=clone).returncode == 0
    assert json.loads(ks("log", "-s", sid, "--json", cwd=clone).stdout)["attempts"][1]["question"] == "limit-residency"
