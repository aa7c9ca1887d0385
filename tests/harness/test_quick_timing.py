"""task.yaml `timing.quick`: a smaller timing budget for --quick runs, validated like the other timing keys."""

from __future__ import annotations

import pytest

from ks_tui.errors import InputFileError
from ks_tui.harness.client import run_harness
from ks_tui.task import load_task
from tests.harness.test_task_loader import edit, task_copy  # noqa: F401  (fixture)

QUICK = "  budget_s: 0.2\n"


def test_quick_overrides_apply_to_quick_runs_only(task_copy):  # noqa: F811
    edit(task_copy, QUICK, QUICK + "  quick: {budget_s: 0.05, rounds: 3, max_reps: 7}\n")
    t = load_task(task_copy, task_copy.parent.parent).timing
    assert (t.budget_s, t.rounds, t.max_reps) == (0.2, 5, 100)  # full runs: unchanged
    q = t.for_run(True)
    assert (q.budget_s, q.rounds, q.max_reps, q.warmup, q.draws, q.threads) == (0.05, 3, 7, 2, 2, 1)
    assert t.for_run(False) is t


@pytest.mark.parametrize("quick, words", [
    ("{draws: 1}", "unknown key 'draws'"),          # correctness draws are never cut
    ("{threads: 2}", "unknown key 'threads'"),
    ("{budget_s: 0}", "timing.quick.budget_s must be a positive number"),
    ("{rounds: 2.5}", "timing.quick.rounds must be a positive whole number"),
    ("{min_reps: 500}", "timing.quick.min_reps is larger than max_reps"),
    ("[0.05]", "timing.quick must be a mapping"),
])
def test_bad_quick_timing_names_the_key(task_copy, quick, words):  # noqa: F811
    line = edit(task_copy, QUICK, QUICK + f"  quick: {quick}\n")
    with pytest.raises(InputFileError) as info:
        load_task(task_copy, task_copy.parent.parent)
    assert words in str(info.value) and f":{line}" in str(info.value)


def test_a_quick_bench_times_with_the_quick_budget(task_copy):  # noqa: F811
    edit(task_copy, QUICK, QUICK + "  quick: {min_reps: 1, max_reps: 3}\n")
    task = load_task(task_copy, task_copy.parent.parent)
    r = run_harness(task, mode="bench", quick=True, scenarios=["d24-h2-1-q31-k45-b4"])
    assert r["status"] == "correct", r["message"]
    assert r["scenarios"][0]["timing"]["reps"] <= 3 < task.timing.min_reps  # a full run would take 5 at least
