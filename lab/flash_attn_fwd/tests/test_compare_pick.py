"""compare.py: the device call's A/B of kernel files, and --pick, which decides which file a call
benches on the full grid afterwards.

The A/B runs end to end here on the CPU task (KS_TASK) through the real harness and compiler;
--pick runs as device_run.sh runs it (a child process reading $OUT/work).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lab.flash_attn_fwd.scripts import compare as compare_script

REPO = Path(__file__).resolve().parents[3]
RUN = [sys.executable, "-m", "lab.flash_attn_fwd.scripts.compare"]  # from the repository root (cwd or PYTHONPATH)
CPU_SEED = REPO / "kernels" / "attention_cpu" / "kernel.cpp"
IDS = "d24-h2-1-q31-k45-b4+d48-h8-2-q77-k301-b1-causal"


def write_summary(work: Path, tag: str, label: str, gains: dict, failed: dict | None = None) -> None:
    path = work / f"{tag}summary.json"
    doc = json.loads(path.read_text()) if path.exists() else {}
    doc[label] = {"vs_first": gains, "failed": failed or {}}
    path.write_text(json.dumps(doc))



def pick(out: Path, *args: str, min_gain: str | None = None) -> subprocess.CompletedProcess:
    env = {"OUT": str(out), "PATH": "/usr/bin:/bin"}
    if min_gain:
        env["KS_MIN_GAIN"] = min_gain
    return subprocess.run([*RUN, "--pick", *args], capture_output=True, text=True,
                          env=env, timeout=60, cwd=REPO)


@pytest.fixture
def work(tmp_path):
    (tmp_path / "work").mkdir()
    return tmp_path


def test_the_fastest_candidate_that_beats_the_reference_by_the_margin(work):
    write_summary(work / "work", "g1-", "nomask_long",
                  {"v13": 1.0, "a": 1.004, "b": 1.03, "c": 1.2}, failed={"c": "incorrect: wrong"})
    write_summary(work / "work", "g1-", "short", {"v13": 1.0, "a": 1.5, "b": 1.0})  # not the first subset
    out = pick(work, "g1-", "nomask_long,short", "v13=k.cu", "a=a.cu", "b=b.cu", "c=c.cu")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "b.cu"                      # c is faster but wrong: never picked
    assert "min gain 1.01" in out.stderr


def test_nothing_when_no_candidate_clears_the_margin_or_the_reference_failed(work):
    w = work / "work"
    write_summary(w, "g2-", "quick", {"ref": 1.0, "x": 1.005})
    assert pick(work, "g2-", "quick", "ref=r.cu", "x=x.cu").stdout == ""           # +0.5% < 1%
    assert pick(work, "g2-", "quick", "ref=r.cu", "x=x.cu", min_gain="1.004").stdout == "x.cu"
    write_summary(w, "g3-", "quick", {"ref": None, "x": None}, failed={"ref": "timeout: killed"})
    assert pick(work, "g3-", "quick", "ref=r.cu", "x=x.cu").stdout == ""           # no reference
    out = pick(work, "g4-", "quick", "ref=r.cu", "x=x.cu")                          # no results at all
    assert out.stdout == "" and "no summary" in out.stderr


def test_a_long_id_list_is_found_under_its_hashed_label(work):
    compare = compare_script
    ids = "+".join(f"d128-h16-16-s{n}" for n in (512, 1024, 2048, 4096, 8192))
    label = compare.label_of(ids)
    assert label.startswith("ids-") and len(label) < 20
    write_summary(work / "work", "g1-", label, {"ref": 1.0, "x": 1.1})
    assert pick(work, "g1-", ids, "ref=r.cu", "x=x.cu").stdout == "x.cu"


def test_an_interleaved_ab_end_to_end_with_the_real_harness(work, tmp_path):
    """Two rounds of two files on two subsets: every run's JSON kept, one seed per round shared by
    both files, a summary per subset, and --pick reads that summary."""
    (tmp_path / "a.cpp").write_text(CPU_SEED.read_text())
    (tmp_path / "b.cpp").write_text(CPU_SEED.read_text() + "\n// the same kernel, another file\n")
    first, second = IDS.split("+")
    env = dict(os.environ, OUT=str(work), KS_TASK="attention_cpu", KS_ROUNDS="2", KS_TAG="g1-", KS_BY="causal")
    p = subprocess.run([*RUN, f"{first},{second}",
                        f"a={tmp_path / 'a.cpp'}", f"b={tmp_path / 'b.cpp'}"],
                       capture_output=True, text=True, env=env, timeout=300, cwd=REPO)
    assert p.returncode == 0, p.stderr
    runs = {f.name: json.loads(f.read_text()) for f in (work / "work").glob("g1-?-r?.json")}
    assert sorted(runs) == ["g1-a-r1.json", "g1-a-r4.json", "g1-b-r2.json", "g1-b-r3.json"]
    assert all(r["status"] == "correct" and len(r["scenarios"]) == 2 for r in runs.values())
    assert runs["g1-a-r1.json"]["seed"] == runs["g1-b-r2.json"]["seed"] != runs["g1-a-r4.json"]["seed"]
    assert runs["g1-b-r3.json"]["seed"] == runs["g1-a-r4.json"]["seed"]
    # one pair tag a round (`ks bench --pair`): attempts recorded from these files are judged side by side
    assert runs["g1-a-r1.json"]["pair"] == runs["g1-b-r2.json"]["pair"] != runs["g1-a-r4.json"]["pair"]
    assert runs["g1-b-r3.json"]["pair"] == runs["g1-a-r4.json"]["pair"]
    assert runs["g1-a-r1.json"]["pair"].rsplit(":", 1)[0] == runs["g1-a-r4.json"]["pair"].rsplit(":", 1)[0]
    summary = json.loads((work / "work" / "g1-summary.json").read_text())
    assert set(summary) == {first, second}
    assert summary[first]["common"] == [first]                     # each subset only its own ids
    assert summary[first]["time_vs_first"]["a"] == 1.0 and summary[first]["time_vs_first"]["b"] > 0
    assert p.stdout.count("kernel time: a / this") == 4   # the totals and the KS_BY rows, per subset
    assert [g["label"] for g in summary[second]["groups"]] == ["causal=True"]
    gain = summary[first]["vs_first"]["b"]
    assert pick(work, "g1-", f"{first},{second}", "a=a.cpp", "b=b.cpp",
                min_gain=str(gain * 0.99)).stdout == "b.cpp"
    assert pick(work, "g1-", f"{first},{second}", "a=a.cpp", "b=b.cpp",
                min_gain=str(gain * 1.01)).stdout == ""


def test_a_run_starts_only_if_it_can_end_by_the_deadline():
    fits = compare_script.run_fits
    floor = compare_script.MIN_RUN_SECONDS
    assert fits(0, 100, [], None) == (True, floor)          # no history, no estimate: the floor
    assert fits(0, 100, [], 210) == (False, 210)            # a full-grid estimate does not fit
    assert fits(0, 100, [50, 80], 210) == (True, 80)        # measured runs replace the estimate
    assert fits(0, 79, [50, 80], None) == (False, 80)
    assert fits(0, 100, [5], None) == (True, floor)         # never below the floor


def test_runs_that_cannot_finish_are_skipped_and_recorded_as_not_run(work, tmp_path):
    (tmp_path / "a.cpp").write_text(CPU_SEED.read_text())
    env = dict(os.environ, OUT=str(work), KS_TASK="attention_cpu", KS_RUN_SECONDS="1000",
               KS_DEADLINE=str(int(time.time()) + 500))
    p = subprocess.run([*RUN, IDS, f"a={tmp_path / 'a.cpp'}", f"b={tmp_path / 'a.cpp'}"],
                       capture_output=True, text=True, env=env, timeout=120, cwd=REPO)
    assert p.returncode == 0, p.stderr
    assert "skipping round 1 of 1: deadline (needs ~2000s" in p.stdout   # both runs of the round
    assert "a: not_run: deadline" in p.stdout and "(0 of 1 round(s)" in p.stdout
    assert not list((work / "work").glob("a-r*.json"))      # nothing was benched


def test_a_round_starts_only_if_all_its_runs_fit():
    fits = compare_script.round_fits
    floor = compare_script.MIN_RUN_SECONDS
    assert fits(0, 2 * floor, [], None, 2) == (True, 2 * floor)
    assert fits(0, 2 * floor - 1, [], None, 2) == (False, 2 * floor)   # one run would fit, the round not
    assert fits(0, 300, [100, 140], None, 2) == (True, 280)              # the longest run so far, per run
    assert fits(0, 279, [100, 140], None, 2) == (False, 280)
    assert fits(0, 500, [], 210, 3) == (False, 630)                      # the estimate before any run


def test_a_bad_run_estimate_is_one_clear_error(work, tmp_path):
    env = dict(os.environ, OUT=str(work), KS_TASK="attention_cpu", KS_RUN_SECONDS="about 200")
    p = subprocess.run([*RUN, IDS, "a=a.cpp", "b=b.cpp"],
                       capture_output=True, text=True, env=env, timeout=120, cwd=REPO)
    assert p.returncode == 2 and "KS_RUN_SECONDS='about 200' is not a number" in p.stderr
    assert "Traceback" not in p.stderr


def test_a_grouping_by_an_unknown_parameter_is_one_clear_error(work):
    env = dict(os.environ, OUT=str(work), KS_TASK="attention_cpu", KS_BY="causal,colour")
    p = subprocess.run([*RUN, IDS, "a=a.cpp", "b=b.cpp"],
                       capture_output=True, text=True, env=env, timeout=120, cwd=REPO)
    assert p.returncode == 2 and "no scenario has the parameter colour" in p.stderr
    assert "Traceback" not in p.stderr


@pytest.mark.parametrize("rounds", ["two", "0", "1.5"])
def test_a_bad_round_count_is_one_clear_error(work, rounds):
    env = dict(os.environ, OUT=str(work), KS_TASK="attention_cpu", KS_ROUNDS=rounds)
    p = subprocess.run([*RUN, IDS, "a=a.cpp", "b=b.cpp"],
                       capture_output=True, text=True, env=env, timeout=120, cwd=REPO)
    assert p.returncode == 2 and f"KS_ROUNDS={rounds!r} is not a whole number" in p.stderr
    assert "Traceback" not in p.stderr and not list((work / "work").iterdir())  # nothing was run


@pytest.mark.parametrize("args,message", [([IDS, "a=a.cpp"], "give at least two kernel files"),
                                          ([IDS, "a=a.cpp", "a=b.cpp"], "two candidates named 'a'"),
                                          ([IDS], "usage: compare.py SUBSET")])
def test_bad_arguments_are_one_clear_error(work, args, message):
    env = dict(os.environ, OUT=str(work), KS_TASK="attention_cpu")
    p = subprocess.run([*RUN, *args], capture_output=True, text=True, env=env, timeout=120,
                       cwd=REPO)
    assert p.returncode == 2 and message in p.stderr
    assert "Traceback" not in p.stderr and not list((work / "work").iterdir())  # nothing was run


def test_help_prints_the_usage():
    p = subprocess.run([*RUN, "--help"], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert p.returncode == 0 and "Usage (repo root, GPU machine):" in p.stdout


def test_every_named_subset_is_in_the_task_grid():
    compare = compare_script
    out = subprocess.run([sys.executable, "-m", "ks_tui", "scenarios", "flash_attn_fwd", "--json"],
                         capture_output=True, text=True, check=True, cwd=REPO, timeout=120)
    grid = {s["id"] for s in json.loads(out.stdout)["scenarios"]}
    for name, ids in compare.SUBSETS.items():
        assert ids and len(set(ids)) == len(ids), name
        assert set(ids) <= grid, (name, sorted(set(ids) - grid))
    params = [s["params"] for s in json.loads(out.stdout)["scenarios"]]
    for name, rule in compare.FILTERS.items():
        assert any(rule(p) for p in params), name   # a rule that selects nothing is a typo
    assert sum(compare.FILTERS["d96"](p) for p in params) == 14


def test_two_device_run_invocations_in_one_call_keep_both_archives(tmp_path):
    """`device_run.sh groups` chained twice into one $OUT: the second packs results-2.tgz, so the first's run
    files survive (each archive holds its own runs), and compare.txt holds both tables."""
    import tarfile

    out = tmp_path / "out"
    (tmp_path / "a.cpp").write_text(CPU_SEED.read_text())
    (tmp_path / "b.cpp").write_text(CPU_SEED.read_text() + "\n// the same kernel, another file\n")
    first = IDS.split("+")[0]
    env = dict(os.environ, OUT=str(out), KS_TASK="attention_cpu", KS_ROUNDS="1")
    script = REPO / "lab" / "flash_attn_fwd" / "scripts" / "device_run.sh"
    for _ in range(2):
        p = subprocess.run(["bash", str(script), "groups", f"{first} a={tmp_path / 'a.cpp'} b={tmp_path / 'b.cpp'}"],
                           capture_output=True, text=True, env=env, timeout=300, cwd=REPO)
        assert p.returncode == 0, p.stdout + p.stderr
    assert sorted(f.name for f in out.glob("*.tgz")) == ["results-2.tgz", "results.tgz"]
    for name in ("results.tgz", "results-2.tgz"):
        with tarfile.open(out / name) as tar:
            runs = sorted(n for n in tar.getnames() if n.endswith("-r1.json") or n.endswith("-r2.json"))
        assert runs == ["work/g1-a-r1.json", "work/g1-b-r2.json"], (name, runs)
    assert (out / "compare.txt").read_text().count("kernel time: a / this") == 2
    assert not (out / "work").exists()
