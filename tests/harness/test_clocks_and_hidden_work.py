"""The clock record's arithmetic and its absence without NVML; the hidden-work rule; per-function blocks."""

from __future__ import annotations

import sys

import pytest

from ks_tui.harness import clocks
from ks_tui.harness.timing import HIDDEN_ABS_MS, MIXED, hidden_work_reason, interleaved


def test_without_nvidia_ml_py_the_clock_is_not_recorded_and_says_why(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml now raises ImportError
    rec = clocks.ClockRecorder("00000000:19:00.0")
    assert not rec.ok
    rec.start()
    assert rec.stop() == {"recorded": False, "why": "clock not recorded (nvidia-ml-py not installed)"}
    assert clocks.text(rec.stop()) == "clock not recorded (nvidia-ml-py not installed)"
    assert clocks.warnings(rec.stop()) == []


def test_with_nvidia_ml_py_but_no_driver_the_reason_is_nvmls():
    pytest.importorskip("pynvml")
    import torch

    if torch.cuda.is_available():
        pytest.skip("a driver is present here")
    rec = clocks.ClockRecorder(None)
    assert not rec.ok and rec.stop()["why"].startswith("clock not recorded (NVML: ")


def test_a_clock_that_moved_more_than_3_percent_is_warned_about_and_idle_samples_do_not_count():
    idle, power = 0x1, 0x4
    steady = clocks.record((0.0, 1980, 0), [(0.1, 1980, 0), (0.2, 1965, 0), (0.3, 345, idle)], (0.4, 1980, 0), 1980)
    assert steady["during"]["min_mhz"] == 1965 and steady["during"]["busy_samples"] == 2
    assert clocks.moved(steady) == pytest.approx(15 / 1980)
    assert clocks.warnings(steady) == []
    sunk = clocks.record((0.0, 345, idle), [(0.1, 1980, 0), (0.2, 1755, power)], (0.3, 1785, power), 1980)
    assert clocks.moved(sunk) == pytest.approx(225 / 1980)  # the idle reading before is left out
    (w,) = clocks.warnings(sunk)
    assert "moved 11.4% (1755-1980 MHz)" in w and "sw_power_cap" in w
    assert clocks.text(sunk) == "clock 1755-1980 MHz while timing (max 1980), moved 11.4%: sw_power_cap"
    assert clocks.reason_names(0x4 | 0x40) == ["sw_power_cap", "hw_thermal_slowdown"]


def test_hidden_work_beyond_the_threshold_makes_a_scenario_invalid():
    assert hidden_work_reason({"median_ms": 0.003, "hidden_ms": 0.0}) is None
    assert hidden_work_reason({"median_ms": 0.003, "hidden_ms": HIDDEN_ABS_MS * 0.9}) is None
    assert hidden_work_reason({"median_ms": 2.0, "hidden_ms": 0.5}) is None  # under half the median
    why = hidden_work_reason({"median_ms": 0.003, "hidden_ms": 1.25})
    assert why.startswith("work outside the timed stream") and "1.250 ms" in why
    assert hidden_work_reason({"median_ms": 1.0}) is None  # CPU timings carry no such record


def test_each_timed_block_knows_which_function_it_times():
    seen = []

    def block(call, n):
        seen.append(call.ks_name)
        for i in range(n):
            call(i)
        return [1e-3] * n

    class T:
        warmup, min_reps, max_reps, budget_s, alternate = 2, 4, 4, 1.0, False

    timed, errors = interleaved({"": [lambda: None], "lib": [lambda: None]}, T, 2, block)
    assert not errors and set(timed) == {"", "lib"}
    assert seen.count("") == seen.count("lib") == 3  # one warm-up block and two rounds each

    seen.clear()
    T.alternate = True  # blocks shared by both go under one name; the kernel's own block at the end under its
    timed, errors = interleaved({"": [lambda: None], "lib": [lambda: None]}, T, 2, block, alone=("",))
    assert seen == ["", "lib", MIXED, MIXED, "", ""]


def test_a_kernel_much_faster_between_the_libraries_calls_than_alone_is_invalid():
    assert hidden_work_reason({"median_ms": 1.0, "alone_ms": 1.1}) is None  # noise, or the alone block's tail
    assert hidden_work_reason({"median_ms": 1.1, "alone_ms": 1.0}) is None  # slower between them: no gain
    why = hidden_work_reason({"median_ms": 0.2, "alone_ms": 1.0})
    assert why and "in a block of its own" in why
    why = hidden_work_reason({"median_ms": 0.003, "hidden_ms": 0.0, "mixed_hidden_ms": 1.25})
    assert why and "shared with the libraries" in why
