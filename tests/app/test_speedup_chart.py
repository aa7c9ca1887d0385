"""The speedup chart tells failed attempts from correct ones that were only checked."""

from ks_tui.app.widgets.bench.speedup_chart import SpeedupChart, points_from_attempts


def _bottom_row(attempts: list[dict]) -> str:
    lines = SpeedupChart(points_from_attempts(attempts), height=3).lines(40)
    return lines[-2].plain  # the last grid row; the legend follows it


def test_check_only_attempt_is_not_drawn_as_a_failure():
    row = _bottom_row([{"number": 1, "status": "correct", "speedup": None},
                       {"number": 2, "status": "incorrect", "speedup": None},
                       {"number": 3, "status": "correct", "speedup": 1.2}])
    marks = row[7:10]  # after the 7-column label
    assert marks[0] == "·" and marks[1] == "×" and marks[2] == "█"


def test_legend_names_every_mark():
    legend = SpeedupChart(points_from_attempts([{"number": 1, "status": "correct", "speedup": 0.5}])).lines(80)[-1].plain
    for word in ("attempt", "best", "1.0x", "failed", "not timed"):
        assert word in legend


def test_the_best_line_follows_the_attempt_logs_rule():
    """A faster subset probe and a run on the device the session left do not raise the best line."""
    from ks_tui.app.widgets.bench.speedup_chart import best_so_far

    h200, h100 = "NVIDIA H200", "NVIDIA H100 80GB HBM3"
    attempts = [{"number": 1, "status": "correct", "speedup": 1.16, "mode": "bench", "device": h200},
                {"number": 2, "status": "correct", "speedup": 1.27, "mode": "bench-subset", "device": h200},
                {"number": 3, "status": "correct", "speedup": 1.148, "mode": "bench", "device": h100},
                {"number": 4, "status": "correct", "speedup": 1.16, "mode": "bench", "device": h200,
                 "rollback_of": 1},
                {"number": 5, "status": "correct", "speedup": 1.149, "mode": "bench", "device": h100}]
    assert best_so_far(points_from_attempts(attempts)) == [1.16, 1.16, 1.148, 1.148, 1.149]
    # Only quick runs so far: the best of those, until a whole-grid run arrives.
    quick = [{"number": 1, "status": "correct", "speedup": 1.3, "mode": "bench-quick"},
             {"number": 2, "status": "correct", "speedup": 1.1, "mode": "bench"}]
    assert best_so_far(points_from_attempts(quick)) == [1.3, 1.1]
