"""`ks compare`: several kernel files benched on the same scenarios and inputs, in alternating
order, through the real harness child and the real compiler (attention_cpu on this machine)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from ks_tui.harness import compare
from tests.harness.conftest import CPU_TASK_DIR, REPO, run_ks

IDS = "d24-h2-1-q31-k45-b4,d48-h8-2-q77-k301-b1-causal"


def _interruptible_compare(planted_dir, tmp_path, *args: str) -> subprocess.Popen:
    """`ks compare` of naive.cpp and hangs_on_flag.cpp as a child a terminal's Ctrl-C reaches. A pytest started in the
    background of a shell without job control (`cmd &`) ignores SIGINT, and an ignored SIGINT is inherited across
    exec, so the child would never see it (session 36: both tests failed so, and their hanging kernel then took a core
    from test_sharing.py); the child gets the default disposition back, as in a terminal."""
    return subprocess.Popen(
        [sys.executable, "-m", "ks_tui", "compare", "attention_cpu", f"a={planted_dir / 'naive.cpp'}",
         f"b={planted_dir / 'hangs_on_flag.cpp'}", "--scenarios", IDS.split(",")[0], *args],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        env={**os.environ, "KS_TEST_HANG_FILE": str(tmp_path / "hang"), "KS_SANDBOX": "off",
             "KS_TEST_PID_FILE": str(tmp_path / "pid")},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _end(proc: subprocess.Popen) -> None:
    """A failed test must not leave the hanging kernel running: SIGTERM unwinds `ks compare` as Ctrl-C does (it kills
    its harness child's group), then SIGKILL if it has not ended."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_run_order_alternates_so_a_drift_favours_no_candidate():
    assert compare.run_order(3, 1) == [0, 1, 2]
    assert compare.run_order(2, 3) == [0, 1, 1, 0, 0, 1]


def test_candidate_specs_are_checked():
    assert [c.name for c in compare.parse_candidates(["x=a.cu", "dir/b.cu"])] == ["x", "b"]
    for bad in (["a.cu"], ["a=x.cu", "a=y.cu"], ["=x.cu", "b.cu"]):
        with pytest.raises(ValueError):
            compare.parse_candidates(bad)


def test_summary_compares_only_scenarios_every_sound_candidate_ran():
    def result(speedups, status="correct"):
        return {"status": status, "message": "" if status == "correct" else "wrong answer\nmore",
                "scenarios": [{"id": i, "ok": v is not None, "speedup": v} for i, v in speedups.items()]}

    a = compare.Candidate("a", None, [result({"s1": 1.0, "s2": 2.0}), result({"s1": 4.0, "s2": 2.0})])
    b = compare.Candidate("b", None, [result({"s1": 1.0, "s2": None})])     # s2 wrong in b's run
    c = compare.Candidate("c", None, [result({"s1": 9.0}, status="incorrect")])
    s = compare.summarize([a, b, c])
    assert s["rows"]["s1"]["a"] == pytest.approx(2.0)                        # geomean of 1 and 4 over rounds
    assert s["failed"] == {"c": "incorrect: wrong answer"}
    # s2 is left out of the comparison: b has no sound time there. c (failed) does not count.
    assert s["common"] == ["s1"]
    assert s["geomean"] == {"a": pytest.approx(2.0), "b": pytest.approx(1.0), "c": None}
    assert s["vs_first"]["b"] == pytest.approx(0.5)


def test_kernel_time_row_leaves_the_baselines_out():
    """Two runs of one kernel time it alike while the baseline moved: the speedup rows differ,
    the kernel-time row says level. A file 20% slower on one scenario shows there alone."""
    def result(times, base):
        return {"status": "correct", "scenarios": [
            {"id": i, "ok": True, "time_ms": t, "speedup": base / t} for i, t in times.items()]}

    a = compare.Candidate("a", None, [result({"s1": 1.0, "s2": 2.0}, base=1.1)])
    b = compare.Candidate("b", None, [result({"s1": 1.0, "s2": 2.0}, base=0.9)])   # baseline ran faster
    c = compare.Candidate("c", None, [result({"s1": 1.25, "s2": 2.0}, base=1.1)])
    s = compare.summarize([a, b, c])
    assert s["vs_first"]["b"] == pytest.approx(0.9 / 1.1)
    assert s["time_vs_first"]["a"] == s["time_vs_first"]["b"] == pytest.approx(1.0)
    assert s["time_vs_first"]["c"] == pytest.approx((1.0 / 1.25) ** 0.5)
    assert s["time_ms"]["s1"]["c"] == pytest.approx(1.25)
    text = compare.render([a, b, c], s, 1, [7])
    assert "kernel time: a / this" in text.splitlines()[-1]


def test_rows_by_group_show_the_noise_on_the_scenarios_a_change_left_alone():
    """`--by`: the speedup and kernel-time rows per group of scenarios. b changes only d=128 (10% faster); its
    d=64 group, the same code, reads what the call's noise is (here none)."""
    def result(times):
        return {"status": "correct", "scenarios": [
            {"id": i, "ok": True, "time_ms": t, "speedup": 1.0 / t} for i, t in times.items()]}

    params = {"x1": {"d": 64, "causal": False}, "x2": {"d": 64, "causal": True},
              "y1": {"d": 128, "causal": False}, "y2": {"d": 128, "causal": True}}
    a = compare.Candidate("a", None, [result({"x1": 1.0, "x2": 1.0, "y1": 1.0, "y2": 1.0})])
    b = compare.Candidate("b", None, [result({"x1": 1.0, "x2": 1.0, "y1": 1 / 1.1, "y2": 1 / 1.1})])
    groups = compare.group_labels(params, ["d"])
    assert groups == {"x1": "d=64", "x2": "d=64", "y1": "d=128", "y2": "d=128"}
    s = compare.summarize([a, b], groups)
    assert [(g["label"], g["n"]) for g in s["groups"]] == [("d=64", 2), ("d=128", 2)]
    assert s["groups"][0]["time_vs_first"]["b"] == pytest.approx(1.0)
    assert s["groups"][1]["time_vs_first"]["b"] == pytest.approx(1.1)
    assert s["groups"][1]["vs_first"]["b"] == pytest.approx(1.1)
    text = compare.render([a, b], s, 1, [7])
    assert "kernel time: a / this, by group (scenarios)" in text and "d=128 (2)" in text
    assert compare.summarize([a, b])["groups"] == []
    with pytest.raises(ValueError, match="no scenario has the parameter dd"):
        compare.group_labels(params, ["d", "dd"])


@pytest.mark.slow
def test_compare_two_files_with_the_real_harness(tmp_path):
    seed = (CPU_TASK_DIR / "kernel.cpp").read_text()
    (tmp_path / "a.cpp").write_text(seed)
    (tmp_path / "b.cpp").write_text(seed + "\n// the same kernel, another file\n")
    out = run_ks("compare", "attention_cpu", f"a={tmp_path / 'a.cpp'}", f"b={tmp_path / 'b.cpp'}",
                 "--scenarios", IDS, "--rounds", "2", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["order"] == ["a", "b", "b", "a"]
    assert doc["common"] == IDS.split(",")
    runs = [r for c in doc["candidates"] for r in c["runs"]]
    assert len(runs) == 4 and all(r["status"] == "correct" for r in runs)
    # New inputs every round, the same ones for every file within a round.
    by_name = {c["name"]: [r["seed"] for r in c["runs"]] for c in doc["candidates"]}
    assert by_name["a"] == by_name["b"] == doc["seeds"] and len(set(doc["seeds"])) == 2
    # One pair tag a round, the same for every file in it: attempts recorded from these runs are judged side by side.
    pairs = {c["name"]: [r["pair"] for r in c["runs"]] for c in doc["candidates"]}
    assert pairs["a"] == pairs["b"] and len(set(pairs["a"])) == 2
    run_ids = {p.rsplit(":", 1)[0] for p in pairs["a"]}
    assert len(run_ids) == 1 and sorted(p.rsplit(":", 1)[1] for p in pairs["a"]) == ["1", "2"]
    assert all(doc["geomean"][n] > 0 for n in ("a", "b")) and doc["vs_first"]["a"] == 1.0

    text = run_ks("lab", "compare", "attention_cpu", f"a={tmp_path / 'a.cpp'}", f"b={tmp_path / 'b.cpp'}",
                  "--scenarios", IDS, "--by", "causal")
    assert text.returncode == 0, text.stderr
    assert "vs a" in text.stdout and "geomean (common scenarios)" in text.stdout
    assert "kernel time: a / this" in text.stdout
    assert "causal=False (1)" in text.stdout and "causal=True (1)" in text.stdout
    assert doc["time_vs_first"]["a"] == 1.0 and doc["time_vs_first"]["b"] > 0


@pytest.mark.slow
def test_a_broken_candidate_is_reported_and_the_others_still_measured(tmp_path):
    seed = (CPU_TASK_DIR / "kernel.cpp").read_text()
    (tmp_path / "good.cpp").write_text(seed)
    (tmp_path / "broken.cpp").write_text(seed + "\nthis is not C++;\n")
    out = run_ks("compare", "attention_cpu", str(tmp_path / "good.cpp"), str(tmp_path / "broken.cpp"),
                 "--scenarios", IDS.split(",")[0])
    assert out.returncode == 1
    assert "broken: compile_error" in out.stdout
    assert "good" in out.stdout.splitlines()[1]


@pytest.mark.slow
def test_bench_pair_tags_the_result_and_refuses_a_tag_that_names_nothing(tmp_path):
    out = run_ks("lab", "bench", "attention_cpu", "--scenarios", IDS.split(",")[0], "--pair", "call5:1", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["pair"] == "call5:1" and "ks: note" not in out.stderr
    plain = run_ks("bench", "attention_cpu", "--scenarios", IDS.split(",")[0], "--json")
    assert "pair" not in json.loads(plain.stdout)
    bad = run_ks("lab", "bench", "attention_cpu", "--pair", "two words")
    assert bad.returncode == 2 and "--pair wants a tag" in bad.stderr and "Traceback" not in bad.stderr
    taken = run_ks("lab", "bench", "attention_cpu", "--pair", "declared:abc")  # the prefix of pairs a remark declares
    assert taken.returncode == 2 and "ks lab remark --same-call" in taken.stderr and "Traceback" not in taken.stderr
    # The old spelling still works, and says where the option lives now.
    old = run_ks("bench", "attention_cpu", "--pair", "two words")
    assert old.returncode == 2 and "`ks bench --pair` is now `ks lab bench --pair`" in old.stderr


@pytest.mark.parametrize("args, needle", [
    (["a=missing.cpp", "b=missing2.cpp"], "not found"),
    (["only_one.cpp"], "at least two"),
    (["a.cpp", "b.cpp", "--by", "d,colour"], "no scenario has the parameter colour"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, needle):
    for name in ("a.cpp", "b.cpp"):  # present, so that the other checks are reached
        (tmp_path / name).write_text((CPU_TASK_DIR / "kernel.cpp").read_text())
    out = run_ks("compare", "attention_cpu", *args, cwd=tmp_path)
    assert out.returncode == 2
    assert needle in out.stderr and "Traceback" not in out.stderr


def test_a_cell_whose_baseline_timing_is_off_is_flagged_with_the_kernel_times():
    """One run timed the baseline 40% slow on s1: its speedup there reads a gain the kernel time does
    not have. The cell is marked and the note gives both kernel times; s2 (baselines alike) is not."""
    def result(t1, base1):
        return {"status": "correct", "scenarios": [
            {"id": "s1", "ok": True, "time_ms": t1, "speedup": base1 / t1, "baseline": {"time_ms": base1}},
            {"id": "s2", "ok": True, "time_ms": 2.0, "speedup": 1.0, "baseline": {"time_ms": 2.0}}]}

    a = compare.Candidate("a", None, [result(1.0, 1.0)])
    b = compare.Candidate("b", None, [result(1.0, 1.02)])
    c = compare.Candidate("c", None, [result(1.2, 1.4)])     # 20% slower, but its baseline ran 40% slow
    s = compare.summarize([a, b, c])
    assert s["rows"]["s1"]["c"] > s["rows"]["s1"]["a"]         # the speedup alone says c won on s1
    assert set(s["baseline_off"]) == {"s1"} and set(s["baseline_off"]["s1"]) == {"c"}
    assert s["baseline_off"]["s1"]["c"] == pytest.approx(1.4 / 1.02)
    text = compare.render([a, b, c], s, 1, [7])
    row = next(line for line in text.splitlines() if line.startswith("s1 "))
    assert row.endswith("!") and row.count("!") == 1
    assert "s1 c: baseline x1.37; kernel 1200.0 vs 1000.0" in text
    # two timings of a scenario give no median to judge by: nothing is flagged
    assert compare.summarize([a, c])["baseline_off"] == {}


@pytest.mark.slow
@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupted_compare_still_prints_the_rounds_it_finished(planted_dir, tmp_path, sig, code):
    """Runs a, b, b, a: the second b hangs and is interrupted. Round 1 (a, b) was an hour of GPU time on a
    real compare; it is summed up, and the half round (b's second run) is left out."""
    hang, pid_file = tmp_path / "hang", tmp_path / "pid"
    proc = _interruptible_compare(planted_dir, tmp_path, "--rounds", "2")
    try:
        err = []
        for line in proc.stderr:  # the run order, one line a run as it starts
            err.append(line)
            if line.startswith("[3/4] b"):
                hang.touch()
                break
        deadline = time.monotonic() + 120
        while not pid_file.is_file():
            assert time.monotonic() < deadline and proc.poll() is None, "".join(err)
            time.sleep(0.1)
        proc.send_signal(sig)
        out, rest = proc.communicate(timeout=60)
    finally:
        _end(proc)
    assert proc.returncode == code, rest
    assert "interrupted after 2 of 4 runs; the table holds the 1 complete round(s)" in rest
    assert "geomean over 1 round(s)" in out and "vs a" in out
    assert "kernel time: a / this" in out and "Traceback" not in rest


@pytest.mark.slow
def test_an_interrupt_before_a_whole_round_says_nothing_compares(planted_dir, tmp_path):
    hang, pid_file = tmp_path / "hang", tmp_path / "pid"
    hang.touch()  # b hangs in round 1
    proc = _interruptible_compare(planted_dir, tmp_path, "--json")
    try:
        deadline = time.monotonic() + 120
        while not pid_file.is_file():
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        _end(proc)
    assert proc.returncode == 130
    assert "interrupted after 1 of 2 runs; no round completed, so nothing compares" in err
    doc = json.loads(out)  # --json: still one document, holding no run
    assert doc["interrupted"] is True and doc["runs_done"] == 1 and doc["rounds"] == 0
    assert all(c["runs"] == [] for c in doc["candidates"])


def test_times_table_gives_each_scenario_and_the_median_time_saved():
    """A change that removes a fixed 1 us (a memset before each launch) reads 1.010 on a 100 us launch and 1.001 on
    a 1 ms one: the median time saved says 1 us for both, where the ratios fall with the length."""
    def result(times_ms):
        return {"status": "correct", "scenarios": [
            {"id": i, "ok": True, "time_ms": t, "speedup": 1.0 / t} for i, t in times_ms.items()]}

    a = compare.Candidate("a", None, [result({"s100": 0.100, "s300": 0.300, "s1000": 1.000})])
    b = compare.Candidate("b", None, [result({"s100": 0.099, "s300": 0.299, "s1000": 0.999})])
    s = compare.summarize([a, b])
    assert s["time_saved_us"]["a"] == 0 and s["time_saved_us"]["b"] == pytest.approx(1.0)
    text = compare.render([a, b], s, 1, [7], times=True)
    assert "kernel time: a / this, per scenario" in text
    assert re.search(r"^s100\s+1\.000\s+1\.010$", text, re.M) and re.search(r"^s1000\s+1\.000\s+1\.001$", text, re.M)
    assert re.search(r"^median time saved \(us\)\s+0\.00\s+1\.00$", text, re.M)
    assert "per scenario" not in compare.render([a, b], s, 1, [7]).split("\n", 2)[2]  # only when asked
