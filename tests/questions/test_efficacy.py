"""Efficacy records and statistics, checked against values computed by hand."""

import json
import subprocess
import sys

import pytest

from ks_tui.cli import main
from ks_tui.questions import EfficacyStore, Question, human_question

from .builders import fail, ok

A = Question(id="qa", text="A?", category="layer", points=("plateau",))
B = Question(id="qb", text="B?", category="limit", points=("plateau",))
C = Question(id="qc", text="C?", category="layer", points=("plateau",))

# Session s1 with K = 2; each question is asked right after the attempt it is listed under.
S1 = [ok(1, 1.00), fail(2), ok(3, 1.10), ok(4, 1.05), ok(5, 1.32), fail(6), ok(7, 1.30)]
S1_ASKS = {1: A, 3: B, 5: A, 7: C}


def play(store, session, attempts, asks, before_first=None):
    """Record attempts one at a time, asking and settling as the engine would."""
    history = []
    if before_first:
        store.record_asked(session, before_first, point="session_start", history=history)
    for a in attempts:
        history.append(a)
        store.settle(session, history)
        if a.number in asks:
            store.record_asked(session, asks[a.number], point="plateau", history=history)
    return history


@pytest.fixture
def store(tmp_path):
    (tmp_path / "kernels").mkdir()
    s = EfficacyStore(tmp_path, k=2)
    play(s, "s1", S1, S1_ASKS)
    # s2 asks A before any attempt: no best before, so a new best but no ratio.
    play(s, "s2", [ok(1, 0.8), ok(2, 0.9)], {}, before_first=A)
    return s


def test_per_question_statistics_match_hand_computed_values(store):
    stats = store.stats()
    a, b, c = stats.questions["qa"], stats.questions["qb"], stats.questions["qc"]
    # A: s1 after 1: 1.00 -> 1.10 (+10 %, new best); s1 after 5: 1.32 -> 1.32 (0, none);
    #    s2 before any: None -> 0.90 (new best, no ratio)
    assert (a.asked, a.settled, a.new_best) == (3, 3, 1)  # an ask with no best before is no new best
    assert a.gains == pytest.approx([0.10, 0.0])
    assert a.median_gain == pytest.approx(0.05)
    assert a.new_best_rate == pytest.approx(1 / 3)
    assert a.expected_rate(0.5, 2) == pytest.approx((1 + 1) / (3 + 2))
    # B: after 3: 1.10 -> 1.32 over attempts 4 and 5
    assert (b.asked, b.settled, b.new_best) == (1, 1, 1)
    assert b.median_gain == pytest.approx(1.32 / 1.10 - 1)
    # C: asked after the last attempt, still waiting for its K attempts
    assert (c.asked, c.settled, c.new_best_rate, c.median_gain) == (1, 0, None, None)


def test_per_category_statistics_pool_their_questions(store):
    stats = store.stats()
    layer, limit = stats.categories["layer"], stats.categories["limit"]
    assert (layer.asked, layer.settled, layer.new_best) == (4, 3, 1)
    assert layer.median_gain == pytest.approx(0.05)
    assert (limit.asked, limit.settled, limit.new_best) == (1, 1, 1)


def test_a_rise_inside_the_noise_is_not_a_new_best(store):
    a = store.stats(noise=0.15).questions["qa"]
    assert a.new_best == 0          # the s2 ask had no best before: nothing rose
    assert store.stats(noise=0.15).questions["qb"].new_best == 1  # +20 % clears 15 %


def test_final_settle_closes_short_windows_but_not_empty_ones(tmp_path):
    s = EfficacyStore(tmp_path, k=3)
    history = [ok(1, 1.0)]
    s.record_asked("s", A, point="plateau", history=history)
    assert s.settle("s", history, final=True) == 0       # nothing followed it
    history.append(ok(2, 1.2))
    assert s.settle("s", history) == 0                   # 1 of 3 attempts
    assert s.settle("s", history, final=True) == 1
    assert s.settle("s", history, final=True) == 0       # already settled
    t = s.stats().questions["qa"]
    assert (t.settled, t.new_best) == (1, 1)
    assert t.gains == pytest.approx([0.2])


def test_record_outcome_directly_and_only_once(tmp_path):
    s = EfficacyStore(tmp_path, k=2)
    ask = s.record_asked("s", human_question("  why is   it slow? "), point=None, history=[ok(1, 2.0)])
    s.record_outcome(ask, best_after=2.5, attempts=2)
    s.record_outcome(ask, best_after=9.9, attempts=2)
    t = s.stats().questions[human_question("why is it slow?").id]
    assert (t.category, t.text, t.settled) == ("human", "why is it slow?", 1)
    assert t.gains == pytest.approx([0.25])
    with pytest.raises(KeyError):
        s.record_outcome("s:nope", best_after=1.0, attempts=1)


def test_a_torn_line_is_skipped_and_counted(store):
    with store.path.open("a") as f:
        f.write('{"kind": "asked", "ask": "s9:x", "quest')
    stats = store.stats()
    assert stats.skipped_lines == 1
    assert stats.questions["qa"].asked == 3
    store.record_asked("s9", B, point="plateau", history=[])      # lands on a line of its own
    stats = store.stats()
    assert stats.skipped_lines == 1 and stats.questions["qb"].asked == 2


def test_asked_ids_lists_one_session_in_order(store):
    assert store.asked_ids("s1") == ["qa", "qb", "qa", "qc"]
    assert store.asked_ids("s2") == ["qa"]


def test_concurrent_writers_lose_no_record(tmp_path):
    writer = (
        "import sys\n"
        "from ks_tui.questions import EfficacyStore, Question\n"
        "s = EfficacyStore(sys.argv[1])\n"
        "q = Question(id='q' + sys.argv[2], text='Q?', category='limit')\n"
        "for _ in range(25):\n"
        "    s.record_asked('s' + sys.argv[2], q, point='plateau', history=[])\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", writer, str(tmp_path), str(i)]) for i in range(4)]
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0, 0]
    stats = EfficacyStore(tmp_path).stats()
    assert stats.skipped_lines == 0
    assert {qid: t.asked for qid, t in stats.questions.items()} == {f"q{i}": 25 for i in range(4)}


def test_stats_command_prints_the_same_numbers(store, capsys):
    ws = str(store.path.parent.parent)
    assert main(["--workspace", ws, "questions", "stats", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["questions"]["qa"]["asked"] == 3
    assert doc["questions"]["qa"]["new_best"] == 1
    assert doc["questions"]["qa"]["median_gain"] == pytest.approx(0.05)
    assert doc["categories"]["layer"]["settled"] == 3
    assert main(["--workspace", ws, "questions", "stats"]) == 0
    text = capsys.readouterr().out
    qa_row = next(line for line in text.splitlines() if line.startswith("qa "))
    assert qa_row.split()[1:] == ["3", "3", "1/3", "+5.0%"]


def test_a_window_counts_runs_only_and_not_the_drift_of_a_remeasure(tmp_path):
    from ks_tui.questions import AttemptView
    (tmp_path / "kernels").mkdir()
    s = EfficacyStore(tmp_path, k=2)
    # after attempt 2 (best 1.10, kernel k2): a rollback and an unchecked edit measure nothing;
    # attempt 5 re-measures k2 at 1.13 (drift); attempt 6 is a new kernel at 1.12
    hist = [ok(1, 1.00, kernel_sha256="k1"), ok(2, 1.10, kernel_sha256="k2")]
    s.record_asked("s", A, point="plateau", history=hist)
    hist += [AttemptView(number=3, status="correct", speedup=1.0, rollback_of=1, kernel_sha256="k1"),
             AttemptView(number=4, status="unchecked"), ok(5, 1.13, kernel_sha256="k2")]
    assert s.settle("s", hist) == 0          # one run so far, K = 2
    hist.append(ok(6, 1.12, kernel_sha256="k6"))
    assert s.settle("s", hist) == 1
    out = [r for r in s.records() if r["kind"] == "outcome"][0]
    assert (out["best_before"], out["best_after"]) == (1.10, 1.12)


def test_a_remeasure_of_a_comment_edited_kernel_after_an_ask_is_not_the_questions_gain(tmp_path):
    """After the ask, only the first timing of each kernel counts: the best kernel with only its comments edited
    (another file sha256, the same code) re-measured higher is drift; a code change with the same reading is not."""
    for code, best_after in (("k2", 1.10), ("k3", 1.13)):
        (tmp_path / code / "kernels").mkdir(parents=True)
        s = EfficacyStore(tmp_path / code, k=1)
        hist = [ok(1, 1.00, kernel_sha256="f1", code="k1"), ok(2, 1.10, kernel_sha256="f2", code="k2")]
        s.record_asked("s", A, point="plateau", history=hist)
        hist.append(ok(3, 1.13, kernel_sha256="f3", code=code))
        assert s.settle("s", hist) == 1
        [out] = [r for r in s.records() if r["kind"] == "outcome"]
        assert (out["best_before"], out["best_after"]) == (1.10, best_after)


def test_an_ask_is_judged_on_the_device_it_was_asked_on(tmp_path):
    """The session moved from an H200 to an H100 inside the window: the H100 runs (lower, another chip) are
    neither a loss nor a gain for the question; the H200 run after the ask is what it is judged on."""
    (tmp_path / "kernels").mkdir()
    s = EfficacyStore(tmp_path, k=3)
    h200, h100 = "NVIDIA H200", "NVIDIA H100 80GB HBM3"
    hist = [ok(1, 1.10, device=h200), ok(2, 1.16, device=h200)]
    s.record_asked("s", A, point="plateau", history=hist)
    hist += [ok(3, 1.17, device=h200), ok(4, 1.148, device=h100), ok(5, 1.149, device=h100)]
    assert s.settle("s", hist) == 1
    [out] = [r for r in s.records() if r["kind"] == "outcome"]
    assert (out["best_before"], out["best_after"], out["attempts"]) == (1.16, 1.17, 3)


@pytest.mark.parametrize("after, best_after, new_best", [
    ([ok(3, 1.50), ok(4, 1.40)], 0.90, False),                   # full grids only: not comparable with quick
    ([ok(3, 1.50), ok(4, 1.00, scope="quick")], 1.00, True),     # a quick run after it is: 0.90 -> 1.00
    ([ok(3, 0.85, scope="quick"), ok(4, 1.50)], 0.90, False),    # the quick run fell; the full one does not count
])
def test_an_ask_after_quick_runs_only_is_judged_on_quick_runs(tmp_path, after, best_after, new_best):
    from ks_tui.questions.efficacy import compute_stats
    (tmp_path / "kernels").mkdir()
    s = EfficacyStore(tmp_path, k=2)
    hist = [ok(1, 0.80, scope="quick"), ok(2, 0.90, scope="quick")]
    s.record_asked("s", A, point="plateau", history=hist)
    assert s.settle("s", hist + after) == 1
    [out] = [r for r in s.records() if r["kind"] == "outcome"]
    assert (out["best_before"], out["best_after"]) == (0.90, best_after)
    assert compute_stats(s.records()).tally("qa").new_best == int(new_best)


def test_the_next_ask_ends_a_window_so_a_gain_is_credited_to_the_question_before_it(tmp_path):
    (tmp_path / "kernels").mkdir()
    s = EfficacyStore(tmp_path, k=3)
    hist = [ok(1, 1.00)]
    s.record_asked("s", A, point="plateau", history=hist)    # A, then one flat run
    hist.append(ok(2, 1.00))
    s.record_asked("s", B, point="plateau", history=hist)    # B, then the gain
    hist += [ok(3, 1.20), ok(4, 1.20), ok(5, 1.20)]
    assert s.settle("s", hist) == 2
    stats = s.stats()
    assert (stats.questions["qa"].new_best, stats.questions["qa"].gains) == (0, [0.0])
    assert stats.questions["qb"].new_best == 1 and stats.questions["qb"].gains == pytest.approx([0.2])
    # An ask followed at once by another (no run between) is superseded: asked, never settled.
    s.record_asked("s", A, point="plateau", history=hist)
    s.record_asked("s", B, point="plateau", history=hist)
    assert s.settle("s", hist) == 1
    assert (s.stats().questions["qa"].asked, s.stats().questions["qa"].settled) == (2, 1)


def _cli_session(tmp_path, monkeypatch):
    """A real workspace with one attention_cpu session, the current folder in it: (workspace, session id, kernel)."""
    for var, value in (("GIT_AUTHOR_NAME", "t"), ("GIT_AUTHOR_EMAIL", "t@x"), ("GIT_COMMITTER_NAME", "t"),
                       ("GIT_COMMITTER_EMAIL", "t@x")):
        monkeypatch.setenv(var, value)
    ws = tmp_path / "ws"
    assert main(["init", str(ws)]) == 0
    monkeypatch.chdir(ws)
    assert main(["session", "new", "attention_cpu"]) == 0
    sid = next(p.name for p in (ws / "sessions").iterdir() if p.is_dir())
    return ws, sid, ws / "sessions" / sid / "worktree" / "kernels" / "attention_cpu" / "kernel.cpp"


def test_attempts_in_a_row_that_answer_one_question_are_one_ask(tmp_path, monkeypatch):
    import os

    from tests.attempts.conftest import result_for

    ws, sid, kernel = _cli_session(tmp_path, monkeypatch)
    for n, (speedup, q) in enumerate([(1.0, "layer-untouched"), (1.1, "layer-untouched"), (1.2, "limit-floor")], 1):
        kernel.write_text(kernel.read_text() + f"static int v{n};\n")  # new code: a comment would be the same kernel
        res = tmp_path / f"r{n}.json"
        res.write_text(json.dumps({**result_for(kernel, speedup=speedup), "task": "attention_cpu"}))
        assert main(["lab", "record", "-s", sid, "--result", str(res), "--question", q]) == 0
    asked = [r["question"] for r in EfficacyStore(ws).records() if r["kind"] == "asked"]
    assert asked == ["layer-untouched", "limit-floor"]
    assert os.path.exists(ws / "sessions" / "question_efficacy.jsonl")


def test_a_rise_inside_the_sessions_measured_noise_is_not_a_new_best(tmp_path):
    (tmp_path / "kernels").mkdir()
    s = EfficacyStore(tmp_path, k=1)
    # Kernel k1 measured at 1.00 and again at 0.97: the session has seen 3.1% of noise.
    hist = [ok(1, 1.00, kernel_sha256="k1"), ok(2, 0.97, kernel_sha256="k1")]
    s.record_asked("s", A, point="plateau", history=hist)
    hist.append(ok(3, 1.025, kernel_sha256="k3"))  # +2.5%: above the bank's 2%, inside the session's 3.1%
    assert s.settle("s", hist) == 1
    assert s.stats(noise=0.02).questions["qa"].new_best == 0
    assert s.stats(noise=0.0).questions["qa"].gains == pytest.approx([0.025])


def test_settle_command_closes_the_last_ask_of_a_command_line_session(tmp_path, monkeypatch, capsys):
    """`ks try --question` twice: the first ask is closed by the second; the second, with one attempt after it and
    no next ask, stays pending however long the session rests. `ks questions settle` closes it with what followed
    (flash_attn_fwd's layer-thread-roles at #61: asked 2, settled 1)."""
    from tests.attempts.conftest import result_for

    ws, sid, kernel = _cli_session(tmp_path, monkeypatch)
    for n, (speedup, q) in enumerate([(1.0, None), (1.1, "layer-untouched"), (1.3, "limit-floor")], 1):
        kernel.write_text(kernel.read_text() + f"static int v{n};\n")  # new code: a comment would be the same kernel
        res = tmp_path / f"r{n}.json"
        res.write_text(json.dumps({**result_for(kernel, speedup=speedup), "task": "attention_cpu"}))
        assert main(["lab", "record", "-s", sid, "--result", str(res), *(["--question", q] if q else [])]) == 0
    outcomes = lambda: {r["question"]: r for r in EfficacyStore(ws).records() if r["kind"] == "outcome"}  # noqa: E731
    assert set(outcomes()) == {"layer-untouched"}  # closed by the next ask; limit-floor waits for K = 3 attempts
    capsys.readouterr()
    assert main(["lab", "settle", "-s", sid, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc == {"session": sid, "settled_now": 1, "pending": []}
    assert outcomes()["limit-floor"]["attempts"] == 1 and outcomes()["limit-floor"]["best_after"] == pytest.approx(1.3)
    assert main(["lab", "settle", "-s", sid]) == 0  # again: nothing left, nothing written twice
    assert "0 ask(s) settled now; 0 still pending" in capsys.readouterr().out
    assert sum(1 for r in EfficacyStore(ws).records() if r["kind"] == "outcome") == 2


def _paired(pair=""):
    """Session 28's shape: v35 measured, asked about, then v35 again beside v36 in one call, +0.85% (inside the
    bank's 2% between calls, above its 0.5% same-call bar)."""
    return [ok(1, 1.14786, kernel_sha256="v35"), ok(2, 1.15085, kernel_sha256="v35", pair=pair),
            ok(3, 1.16068, kernel_sha256="v36", pair=pair)]


def test_a_gain_a_same_call_pair_shows_is_a_new_best_inside_the_noise(tmp_path):
    for pair, new_best in (("c5:1", 1), ("", 0)):
        s = EfficacyStore(tmp_path / (pair or "none"), k=2)
        hist = _paired(pair)
        s.record_asked("s", A, point="plateau", history=hist[:1])
        assert s.settle("s", hist) == 1
        assert s.stats(noise=0.02).questions["qa"].new_best == new_best
        judged = [r for r in s.records() if r["kind"] == "judged"]
        assert [(r["paired_gain"], r["over"]) for r in judged] == ([(3, 2)] if pair else [])
        assert s.stats(noise=0.0).questions["qa"].new_best == 1  # with no floor the rise counts either way


def test_a_pair_declared_after_the_outcome_is_judged_at_the_next_settle(tmp_path):
    s = EfficacyStore(tmp_path, k=2)
    s.record_asked("s", A, point="plateau", history=_paired()[:1])
    assert s.settle("s", _paired()) == 1
    assert s.stats(noise=0.02).questions["qa"].new_best == 0
    # `ks remark 3 --same-call 2` later: the outcome stays as written, a judgement is added once.
    declared = _paired("declared:abc")
    assert s.settle("s", declared) == 0
    assert s.settle("s", declared) == 0
    assert [r["paired_gain"] for r in s.records() if r["kind"] == "judged"] == [3]
    assert s.stats(noise=0.02).questions["qa"].new_best == 1
    # And taken back (the remark's pair removed by hand): the latest judgement wins.
    assert s.settle("s", _paired()) == 0
    assert [r["paired_gain"] for r in s.records() if r["kind"] == "judged"] == [3, None]
    assert s.stats(noise=0.02).questions["qa"].new_best == 0


def test_settle_keep_open_writes_what_is_due_and_leaves_the_last_ask_pending(tmp_path, monkeypatch, capsys):
    from tests.attempts.conftest import result_for

    ws, sid, kernel = _cli_session(tmp_path, monkeypatch)
    for n, (speedup, q) in enumerate([(1.0, None), (1.1, "limit-floor")], 1):
        kernel.write_text(kernel.read_text() + f"static int v{n};\n")  # new code: a comment would be the same kernel
        res = tmp_path / f"r{n}.json"
        res.write_text(json.dumps({**result_for(kernel, speedup=speedup), "task": "attention_cpu"}))
        assert main(["lab", "record", "-s", sid, "--result", str(res), *(["--question", q] if q else [])]) == 0
    kernel.write_text(kernel.read_text() + "// v3\n")
    res = tmp_path / "r3.json"
    res.write_text(json.dumps({**result_for(kernel, speedup=1.2), "task": "attention_cpu"}))
    assert main(["lab", "record", "-s", sid, "--result", str(res)]) == 0
    capsys.readouterr()
    assert main(["lab", "settle", "-s", sid, "--keep-open", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pending"] == [{"question": "limit-floor", "after_attempt": 1}]
    assert main(["lab", "settle", "-s", sid, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"session": sid, "settled_now": 1, "pending": []}


def test_a_retagged_ask_counts_for_its_new_question_everywhere_the_record_is_read(tmp_path):
    """`ks remark N --question` retags the ask N opened: the statistics, the asked list and settling read the new
    question; an ask the bank chose, or a question N did not record, is not retagged."""
    s = EfficacyStore(tmp_path, k=2)
    hist = [ok(1, 1.0, kernel_sha256="k1")]
    s.record_asked("s", A, point="plateau", history=hist, chosen_by="bank")
    hist.append(ok(2, 1.0, kernel_sha256="k2"))
    s.record_asked("s", B, point=None, history=hist, chosen_by="human")  # after #2: the ask #3 opened
    hist.append(ok(3, 1.1, kernel_sha256="k3"))
    assert s.retag("s", 2, "qa", C)[0] is False  # #2 is in the bank's ask: nothing written
    assert s.retag("s", 3, "qa", C)[0] is False  # not what #3 recorded
    written, holder = s.retag("s", 3, "qb", C)
    assert written and holder["question"] == "qc" and holder["after_attempt"] == 2
    assert [r["kind"] for r in s.records()].count("retagged") == 1
    assert s.asked_ids("s") == ["qa", "qc"]
    stats = s.stats()
    assert "qb" not in stats.questions and stats.questions["qc"].asked == 1 and stats.questions["qc"].text == "C?"
    assert stats.categories["layer"].asked == 2 and "limit" not in stats.categories
    hist.append(ok(4, 1.2, kernel_sha256="k4"))
    assert s.settle("s", hist) == 2
    outcome = next(r for r in s.records() if r["kind"] == "outcome" and r["ask"] == holder["ask"])
    assert outcome["question"] == "qc" and s.stats().questions["qc"].settled == 1
