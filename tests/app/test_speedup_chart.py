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
