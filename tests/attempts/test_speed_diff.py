"""compare_results: which scenarios it pairs, and what it reports for them."""

from ks_tui.attempts.speed_diff import compare_results, comparison_text


def _scen(i, ms, base_ms, ok=True):
    return {"id": i, "ok": ok, "time_ms": ms, "baseline": {"name": "b", "time_ms": base_ms},
            "speedup": base_ms / ms if ok else None}


def test_pairs_only_scenarios_timed_correctly_in_both():
    old = {"scenarios": [_scen("a", 2.0, 2.0), _scen("b", 1.0, 1.0), _scen("c", 1.0, 1.0)]}
    new = {"scenarios": [_scen("a", 1.0, 2.0), _scen("b", 1.0, 1.0, ok=False), _scen("d", 1.0, 1.0)]}
    cmp = compare_results(new, old)
    assert cmp["scenarios"] == 1 and cmp["only_new"] == 1 and cmp["only_old"] == 2
    assert cmp["speedup"] == 2.0 and cmp["kernel_time"] == 2.0 and cmp["baseline_time"] == 1.0
    assert [r["id"] for r in cmp["moved_most"]] == ["a"]
    text = comparison_text(cmp, "attempt 3")
    assert "1.0000x -> 2.0000x (x2.0000)" in text and "baselines ran" not in text


def test_nothing_in_common_says_so():
    old = {"scenarios": [_scen("a", 1.0, 1.0)]}
    assert compare_results({"scenarios": [_scen("b", 1.0, 1.0)]}, old) is None
    assert compare_results({}, old) is None
    assert "no scenario timed in both" in comparison_text(None, "attempt 1")


def test_moved_most_is_ordered_by_size_of_change_either_way():
    old = {"scenarios": [_scen(i, 1.0, 1.0) for i in "abc"]}
    new = {"scenarios": [_scen("a", 1.0, 1.05), _scen("b", 1.0, 0.8), _scen("c", 1.0, 1.2)]}
    assert [r["id"] for r in compare_results(new, old, top=2)["moved_most"]] == ["b", "c"]
