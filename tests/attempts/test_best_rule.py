"""best_rule: the one rule the store, the question package and the TUI use to name a session's best run."""

from __future__ import annotations

import subprocess
import sys

from ks_tui import best_rule


def test_the_latest_device_is_the_last_measured_record_that_names_one():
    records = [("H200", True), ("", True), ("H100", True), ("H200", False), ("", True)]
    # the H200 rollback (not measured) and the unnamed run after it leave the session on the H100
    assert best_rule.latest_device(records) == "H100"
    assert best_rule.latest_device([("", True), ("H200", False)]) == ""
    assert best_rule.latest_device(iter([("A", True), ("B", True)])) == "B"  # a generator is read once


def test_runs_compare_on_one_device_or_where_either_names_none():
    assert best_rule.comparable("H100", "H100")
    assert not best_rule.comparable("H200", "H100")
    assert best_rule.comparable("", "H100") and best_rule.comparable("H200", "")


def test_a_whole_grid_run_outranks_a_faster_subset_and_ties_go_to_the_earliest():
    runs = [("a", 1.10, True), ("b", 1.30, False), ("c", 1.12, True), ("d", 1.12, True), ("e", None, True)]
    pick = best_rule.fastest(runs, lambda r: r[1], lambda r: r[2])
    assert pick is not None and pick[0] == "c"
    only_subsets = [("x", 1.2, False), ("y", 1.25, False), ("z", None, False)]
    assert best_rule.fastest(only_subsets, lambda r: r[1], lambda r: r[2])[0] == "y"
    assert best_rule.fastest([("n", None, True)], lambda r: r[1], lambda r: r[2]) is None


def test_the_question_package_reaches_the_rule_without_git():
    """questions/ must not import git (docs/questions.md): best_rule sits outside attempts/ for that."""
    code = ("import sys; import ks_tui.questions.views, ks_tui.questions.efficacy; "
            "print('git' in sys.modules, 'ks_tui.attempts.store' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]
