"""device/noise.py on made-up bench results: the medians' speedup and the paired one compared between two runs."""

import pytest

from lab.flash_attn_fwd.device import noise


def _run(speedups: dict[str, float], paired: dict[str, float], geomean: float) -> dict:
    return {"geomean_speedup": geomean, "timings": {"wall_s": 100.0},
            "scenarios": [{"id": i, "speedup": x, "time_ms": 1.0, "baseline": {"name": "fa3"},
                           "timing": {"paired": {"fa3": paired[i], "sdpa_cudnn": 9.0}}}
                          for i, x in speedups.items()]}


def test_both_estimators_are_compared_per_scenario_and_in_the_geomean():
    a = _run({"s1": 1.00, "s2": 1.10}, {"s1": 1.00, "s2": 1.10}, 1.05)
    b = _run({"s1": 1.05, "s2": 1.10}, {"s1": 1.01, "s2": 1.10}, 1.07)
    out = noise.compare(a, b)
    assert out["speedup"]["over_3pct"] == 1 and out["speedup"]["worst"] == "s1"
    assert out["paired_speedup"]["over_3pct"] == 0
    assert out["paired_speedup"]["max_pct"] == pytest.approx(1.0)
    assert out["paired_geomean_diff_pct"] == pytest.approx(100 * ((1.01 * 1.10) ** 0.5 / 1.10 ** 0.5 - 1))


def test_runs_without_pairs_or_with_invalid_scenarios_leave_them_out():
    a = _run({"s1": 1.0, "s2": 1.2}, {"s1": 1.0, "s2": 1.2}, 1.1)
    b = _run({"s1": 1.0, "s2": 1.2}, {"s1": 1.0, "s2": 1.2}, 1.1)
    b["scenarios"][1]["invalid"] = ["hidden work"]
    del a["scenarios"][0]["timing"]["paired"]
    out = noise.compare(a, b)
    assert out["scenarios"] == 2 and out["paired_scenarios"] == 0 and out["paired_geomean"] == [None, None]
    assert noise.main(["/dev/null"]) == 2
