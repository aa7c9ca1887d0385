"""How a bench spends its correctness draws: all but the last before timing, the last after it in the timed
buffers, each judged once (real child processes on the CPU task)."""

from __future__ import annotations

import pytest

from ks_tui.harness.client import run_harness
from tests.harness.test_planted_kernels import SUBSET

TWO = ["d48-h8-2-q77-k301-b1-causal", "d24-h2-1-q31-k45-b4"]


def verdicts(result: dict) -> list:
    return [(s["id"], s["ok"], s["draws"], s["error"]) for s in result["scenarios"]]


def test_a_bench_judges_the_same_draws_as_a_check_and_the_last_after_timing(cpu_task, planted_dir, monkeypatch):
    # Every reference made ahead (KS_REF_PREFETCH=all) counts the draws judged before timing.
    monkeypatch.setenv("KS_REF_PREFETCH", "all")
    src = planted_dir / "naive.cpp"
    checked = run_harness(cpu_task, src, scenarios=TWO, seed=777)
    benched = run_harness(cpu_task, src, scenarios=TWO, seed=777, mode="bench")
    assert checked["status"] == benched["status"] == "correct", benched["message"]
    draws = cpu_task.timing.draws
    assert checked["timings"]["ref_prefetched"] == len(TWO) * draws
    assert benched["timings"]["ref_prefetched"] == len(TWO) * (draws - 1)  # the last waits for the timed buffers
    assert "recheck_reference_s" in benched["timings"]
    assert all(s["time_ms"] for s in benched["scenarios"])
    # No turns on the CPU: the speedup is the medians' ratio, and no second speedup is recorded.
    assert all(s["speedup"] == s["baseline"]["time_ms"] / s["time_ms"] and "speedup_of_medians" not in s
               and not s["timing"].get("paired") for s in benched["scenarios"])
    # The same seed, the same draws, the same verdicts and worst errors: the after-timing draw is the check's last.
    assert verdicts(benched) == verdicts(checked)
    assert all(s["draws"] == draws for s in benched["scenarios"])


@pytest.mark.slow
def test_a_kernel_caching_by_pointer_is_caught_after_timing_in_a_bench(cpu_task, planted_dir):
    r = run_harness(cpu_task, planted_dir / "cache_by_pointer.cpp", scenarios=TWO[1:], mode="bench")
    assert r["status"] == "incorrect"
    (s,) = r["scenarios"]
    assert "re-check after timing failed" in s["error"]["what"] and s["error"]["draw"] == cpu_task.timing.draws - 1


def test_a_bench_that_times_nothing_still_judges_every_draw_of_the_passing_scenarios(cpu_task, planted_dir):
    seen = []
    r = run_harness(cpu_task, planted_dir / "no_causal.cpp", scenarios=SUBSET, mode="bench", on_progress=seen.append)
    assert r["status"] == "incorrect" and "not timed" in r["message"]
    by_id = {s["id"]: s for s in r["scenarios"]}
    assert [by_id[i]["ok"] for i in SUBSET] == [False, False, True]
    assert by_id[SUBSET[2]]["draws"] == cpu_task.timing.draws and by_id[SUBSET[0]]["draws"] == 1
    assert not any(s["time_ms"] for s in r["scenarios"])
    # The second pass shows as a re-check of the passing scenario alone, after the check's own count is done.
    phases = [(p["phase"], p["done"], p["scenario"]) for p in seen if p["phase"] != "compile"]
    tail = phases[phases.index(("check", len(SUBSET), "")) + 1:]
    assert tail == [("recheck", 2, SUBSET[2]), ("recheck", len(SUBSET), "")]
    assert "bench" not in {p[0] for p in phases}
