"""Each decision point fires on a history that should trigger it and stays quiet otherwise."""

from dataclasses import replace

import pytest

from ks_tui.questions import DecisionConfig, detect, measured_noise
from ks_tui.questions.points import attempts_since_gain, gain_of, gains, last_gain

from .builders import fail, ok, run

CFG = DecisionConfig(plateau_n=3, failure_n=3, every_n=5, suspicious_factor=1.5, noise=0.02)


def points(history, event="attempt", config=CFG):
    return [p.point for p in detect(history, event, config)]


def test_session_start_fires_only_on_its_event():
    assert points([], "session_start") == ["session_start"]
    assert "session_start" not in points(run(1.0))


def test_agent_stop_fires_only_on_its_event():
    assert points(run(1.0, 1.1), "agent_stop") == ["agent_stop"]
    assert "agent_stop" not in points(run(1.0, 1.1))


def test_plateau_fires_after_n_attempts_without_gain():
    assert "plateau" in points(run(1.0, 1.2, 1.1, 1.15, 1.19))


def test_plateau_does_not_fire_while_gains_keep_coming():
    assert "plateau" not in points(run(1.0, 1.1, 1.2, 1.3, 1.4))
    # one attempt short of the threshold
    assert "plateau" not in points(run(1.0, 1.2, 1.1, 1.15))


def test_rise_inside_the_noise_is_not_a_gain():
    # Every attempt is less than 2 % above the best (1.0): no gain, so a plateau.
    history = run(1.0, 1.005, 1.01, 1.015)
    assert attempts_since_gain(history, 0.02) == 3
    assert "plateau" in points(history)
    # The same steps with no noise floor count as gains.
    assert "plateau" not in points(history, config=DecisionConfig(plateau_n=3, noise=0.0))


def test_small_rises_do_not_creep_the_best_upward():
    # 1.015 is inside the noise of 1.0, so the best stays 1.0 and 1.03 is a real gain over it.
    assert attempts_since_gain(run(1.0, 1.015, 1.03), 0.02) == 0


def test_last_gain_names_the_attempt_that_gained():
    # attempts are numbered from 1: the third (1.03) is the last gain; the fourth rises inside the noise
    assert last_gain(run(1.0, 1.015, 1.03, 1.04), 0.02) == (3, 1)
    assert last_gain(run(1.0), 0.02) == (1, 0)
    assert last_gain([], 0.02) == (None, None)


def test_measured_noise_from_a_repeated_kernel_raises_the_floor():
    same = dict(kernel_sha256="abc")
    history = [ok(1, 1.00, **same), ok(2, 1.10, **same), ok(3, 1.06), ok(4, 1.07)]
    assert measured_noise(history) == pytest.approx(0.10 / 1.00)
    # 1.07 is 7 % over 1.00 (a gain at 2 % noise) but inside the 10 % measured spread.
    assert "plateau" in points(history)
    assert "plateau" not in points([ok(1, 1.00), ok(2, 1.10), ok(3, 1.06), ok(4, 1.07)],
                                   config=DecisionConfig(plateau_n=3, noise=0.0))


def test_plateau_needs_a_correct_attempt_first():
    assert "plateau" not in points(run("incorrect", "compile_error", "crashed", "timeout"),
                                   config=DecisionConfig(plateau_n=3, failure_n=10))


def test_plateau_fires_again_only_at_multiples_of_n():
    assert "plateau" in points(run(1.0, 0.9, 0.9, 0.9))
    assert "plateau" not in points(run(1.0, 0.9, 0.9, 0.9, 0.9))
    assert "plateau" in points(run(1.0, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9))


def test_failure_streak_fires_after_n_failures_in_a_row():
    assert "failure_streak" in points(run(1.0, "compile_error", "incorrect", "crashed"))


def test_failure_streak_is_broken_by_a_pass_and_skips_cancelled_runs():
    assert "failure_streak" not in points(run("incorrect", "incorrect", 1.0, "incorrect"))
    assert "failure_streak" not in points(run("incorrect", "incorrect"))
    history = run("incorrect", "incorrect", "cancelled", "timeout")
    assert "failure_streak" in points(history)
    assert "failure_streak" in points(run("incorrect", "unchecked", "incorrect", "incorrect"))


def test_unmeasured_attempts_do_not_count_toward_a_plateau():
    assert "plateau" not in points(run(1.0, 0.9, "unchecked", "cancelled"))
    assert attempts_since_gain(run(1.0, 0.9, "unchecked", "cancelled", 0.95), 0.02) == 2


def test_a_rollback_measures_nothing_so_it_neither_extends_a_plateau_nor_breaks_a_streak():
    back = ok(3, 1.0, rollback_of=1)
    assert attempts_since_gain([*run(1.0, 0.9), back, ok(4, 0.95)], 0.02) == 2
    assert "failure_streak" in points([*run(1.0, "incorrect", "incorrect"), ok(4, 1.0, rollback_of=1),
                                       fail(5)])


def test_suspicious_gain_on_a_jump_larger_than_the_factor():
    assert "suspicious_gain" in points(run(1.0, 1.1, 1.7))
    assert "suspicious_gain" not in points(run(1.0, 1.1, 1.6))  # 1.45x the best, under 1.5


def test_the_first_timed_run_is_suspicious_when_it_beats_the_fastest_baseline_by_the_factor():
    found = detect([fail(1, "compile_error"), ok(2, 1.7)], "attempt", CFG)
    assert [p.point for p in found] == ["suspicious_gain"]
    assert "first timed run, is 1.70x the fastest baseline, more than 1.5x" in found[0].reason
    assert "suspicious_gain" not in points([ok(1, 1.4)])  # under the factor
    assert "suspicious_gain" not in points([ok(1, 1.7, scope="subset")])  # a few chosen scenarios


def test_suspicious_gain_above_the_device_peak():
    history = [ok(1, 1.0, device="NVIDIA H200", max_tflops=600.0),
               ok(2, 1.05, device="NVIDIA H200", max_tflops=1200.0)]
    found = detect(history, "attempt", CFG)
    assert [p.point for p in found] == ["suspicious_gain"]
    assert "989" in found[0].reason
    below_peak = [history[0], ok(2, 1.05, device="NVIDIA H200", max_tflops=700.0)]
    assert "suspicious_gain" not in points(below_peak)
    # An unknown device has no peak to exceed.
    assert "suspicious_gain" not in points([ok(1, 1.0, device="Some CPU", max_tflops=5000.0)])


def test_a_failed_run_is_never_a_suspicious_gain():
    assert "suspicious_gain" not in points([ok(1, 1.0), fail(2, "incorrect", device="NVIDIA H200",
                                                              max_tflops=5000.0)])


def test_every_n_steps_fires_on_multiples_of_n():
    assert "every_n_steps" in points(run(1.0, 1.1, 1.2, 1.3, 1.4))
    assert "every_n_steps" not in points(run(1.0, 1.1, 1.2, 1.3))


def test_points_come_most_urgent_first():
    history = run(1.0, 0.9, 0.9, 2.0)
    assert points(history, config=DecisionConfig(plateau_n=10, every_n=4)) == ["suspicious_gain", "every_n_steps"]


def test_unknown_event_is_rejected():
    with pytest.raises(ValueError, match="unknown event"):
        detect([], "lunch", CFG)


# Geomeans over different scenario sets (the full grid, the quick subset, a --scenarios
# selection) do not compare: the session that found this had a 6-scenario subset at 1.035
# counted as the best over a 182-scenario full grid at 1.019.
def test_a_subset_run_is_never_a_gain_and_never_the_best():
    from ks_tui.questions import best_speedup

    history = [ok(1, 1.00), ok(2, 1.50, scope="subset"), ok(3, 0.80, scope="subset")]
    assert best_speedup(history) == 1.00
    assert attempts_since_gain(history, 0.02) == 2
    assert "suspicious_gain" not in points(history[:2])


def test_quick_and_full_runs_are_compared_within_their_own_scope():
    from ks_tui.questions import best_speedup

    # A quick run at 1.2 is no gain over an earlier quick 1.3; the first full run sets the full
    # grid's reference (no gain, so it does not restart the plateau); a later full run is a gain
    # over it even though a quick run once read higher.
    history = [ok(1, 1.30, scope="quick"), ok(2, 1.00), ok(3, 1.20, scope="quick"), ok(4, 1.10)]
    assert attempts_since_gain(history, 0.02) == 0
    assert attempts_since_gain(history[:3], 0.02) == 2
    assert best_speedup(history) == 1.10          # the full grid outranks any quick run
    assert best_speedup(history[:1]) == 1.30      # only quick runs: the best of those
    # A quick run 1.6x over the best full run is not "suspicious": it is another subset.
    assert "suspicious_gain" not in points([ok(1, 1.0), ok(2, 1.6, scope="quick")])
    assert "suspicious_gain" in points([ok(1, 1.0, scope="quick"), ok(2, 1.6, scope="quick")])


@pytest.mark.parametrize("spreads, noise", [
    ([0.10], 0.10), ([0.01, 0.15], 0.15),           # too few repeats to call one an outlier
    ([0.01, 0.012, 0.15], 0.012),                    # one disturbed re-measure does not set the floor
    ([0.01, 0.14, 0.15], 0.14),                      # two that agree still do
])
def test_measured_noise_leaves_out_one_outlier_among_three_or_more_repeats(spreads, noise):
    history, n = [], 0
    for i, spread in enumerate(spreads):
        for value in (1.0, 1.0 + spread):
            n += 1
            history.append(ok(n, value, kernel_sha256=f"k{i}"))
    assert measured_noise(history) == pytest.approx(noise)


def test_measured_noise_ignores_one_kernel_measured_over_different_scenarios():
    same = dict(kernel_sha256="abc")
    history = [ok(1, 1.00, **same), ok(2, 1.20, scope="quick", **same), ok(3, 0.9, scope="subset", **same)]
    assert measured_noise(history) == 0.0


def test_scope_comes_from_the_attempt_mode_or_else_the_result():
    from ks_tui.questions.views import from_attempt_dict

    base = {"number": 1, "status": "correct", "speedup": 1.0}
    assert from_attempt_dict({**base, "mode": "bench"}).scope == "full"
    assert from_attempt_dict({**base, "mode": "bench-quick"}).scope == "quick"
    assert from_attempt_dict({**base, "mode": "bench-subset"}).scope == "subset"
    assert from_attempt_dict(base, {"quick": True}).scope == "quick"
    assert from_attempt_dict(base, {"quick": False, "selection": ["a", "b"]}).scope == "subset"
    assert from_attempt_dict(base, {"quick": False, "selection": None}).scope == "full"


def test_a_remeasure_of_the_same_kernel_is_never_a_gain():
    same = dict(kernel_sha256="abc")
    # 1.03 re-measures attempt 1's kernel: drift (it sets the noise), not a gain
    assert last_gain([ok(1, 1.00, **same), ok(2, 1.03, **same)], 0.02) == (1, 1)


def test_a_kernels_first_run_on_another_device_can_be_that_devices_gain():
    """Issue 8, session 42: v45 had H100 grids (#144); its first H200 grid (#145) read far above the H200's best, but
    counted as a re-measure, so a slower new kernel timed after it (#146) took the gain and named the bar."""
    h100, h200 = "NVIDIA H100 80GB HBM3", "NVIDIA H200"
    history = [ok(1, 1.155, device=h200, kernel_sha256="v35"), ok(2, 1.187, device=h100, kernel_sha256="v45"),
               ok(3, 1.198, device=h200, kernel_sha256="v45"), ok(4, 1.194, device=h200, kernel_sha256="all3")]
    assert last_gain(history, 0.02) == (3, 1)
    # a second H200 run of v45 is a re-measure there: drift, never a gain
    assert last_gain([*history[:3], ok(4, 1.230, device=h200, kernel_sha256="v45")], 0.02) == (3, 1)


def test_a_rollback_to_a_failed_attempt_does_not_extend_a_failure_streak():
    from ks_tui.questions.views import AttemptView
    rb = AttemptView(number=4, status="incorrect", rollback_of=2)
    h = [ok(1, 1.0), AttemptView(number=2, status="incorrect"), AttemptView(number=3, status="incorrect"), rb]
    assert "failure_streak" not in points(h)


def test_history_points_do_not_fire_again_on_an_attempt_that_measured_nothing():
    from ks_tui.questions.views import AttemptView
    h = [ok(1, 1.0), ok(2, 1.0), ok(3, 1.0), ok(4, 1.0)]
    assert "plateau" in points(h)
    assert "plateau" not in points([*h, AttemptView(number=5, status="correct", speedup=1.0, rollback_of=1)])
    assert "plateau" not in points([*h, AttemptView(number=5, status="unchecked")])


def test_runs_on_another_device_are_compared_only_with_that_devices_runs():
    """The session moved from an H200 to an H100 (issue 8): the same kernel reads ~1% lower there."""
    from ks_tui.questions import best_speedup

    a, b = "NVIDIA H200", "NVIDIA H100 80GB HBM3"
    history = [ok(1, 1.00, device=a), ok(2, 1.16, device=a, kernel_sha256="v35"),
               ok(3, 1.148, device=b, kernel_sha256="v35"), ok(4, 1.149, device=b)]
    # #3 is the H100's reference (no gain, no restart of the plateau); #4 is inside the noise of it.
    assert last_gain(history, 0.02) == (2, 2)
    # 1.175 > 1.148 * 1.02 on the H100 (a gain there), though under the H200 best 1.16 * 1.02
    assert last_gain([*history, ok(5, 1.175, device=b)], 0.02) == (5, 0)
    assert best_speedup(history) == 1.149      # the H200's 1.16 does not count on the H100
    assert best_speedup(history, upto=2) == 1.16
    # One kernel measured on two devices is two speeds, not noise.
    assert measured_noise(history) == 0.0
    # A jump across devices is not a suspicious gain; on one device it is.
    assert "suspicious_gain" not in points([ok(1, 0.7, device=a), ok(2, 1.2, device=b)])
    assert "suspicious_gain" in points([ok(1, 0.7, device=b), ok(2, 1.2, device=b)])


def _paired_history(partner_sha="v35", partner_device="H100", candidate=1.16068, pair="c5:1"):
    """Session 28's shape: v35's reference on an H100, a re-measure of it in a compare round, and the candidate
    timed in the same round (+0.85% over the re-measure; below the 2% floor against the first reading)."""
    return [ok(1, 1.14786, kernel_sha256="v35", device="H100"),
            ok(2, 1.14857, kernel_sha256="vtmore", device="H100"),
            ok(3, 1.15085, kernel_sha256=partner_sha, device=partner_device, pair=pair),
            ok(4, candidate, kernel_sha256="v36", device="H100", pair=pair)]


def test_a_run_that_beats_the_best_kernel_timed_beside_it_is_a_gain_at_the_paired_noise():
    history = _paired_history()
    assert last_gain(history, 0.02) == (1, 3)  # unpaired: +1.1% over #1 is inside the 2% floor
    assert last_gain(history, 0.02, paired_noise=0.005) == (4, 0)
    g = gain_of(history, 0.02, paired_noise=0.005)  # which run showed it, and by how much
    assert (g.over, round(g.ratio, 6), g.declared) == (3, round(1.16068 / 1.15085, 6), False)
    assert gain_of(history, 0.02).over is None
    assert gain_of(_paired_history(pair="declared:abc"), 0.02, paired_noise=0.005).declared
    assert gain_of(_paired_history(candidate=1.20), 0.02, paired_noise=0.005).over is None  # above the floor too
    # every gain, each with the attempts up to the next: #1 (the first run; #2, #3 after it), then #4
    assert [(x.number, x.since, x.over) for x in gains(history, 0.02, paired_noise=0.005)] == [(1, 2, None), (4, 0, 3)]
    assert [x.number for x in gains(history, 0.02)] == [1]
    config = DecisionConfig(plateau_n=3)
    assert [p.point for p in detect(history[:3], "attempt", config)] == []  # #2, #3: 2 since the gain
    assert "plateau" not in [p.point for p in detect(history, "attempt", config)]


@pytest.mark.parametrize("why, history", [
    ("the partner ran another kernel than the best", _paired_history(partner_sha="vtmore")),
    ("the partner ran on another device", _paired_history(partner_device="H200")),
    ("the rise is inside the paired noise", _paired_history(candidate=1.1530)),
    ("the runs were not in one round", _paired_history(pair="")),
])
def test_a_pair_is_no_gain_unless_it_beat_the_best_kernel_on_one_device_by_the_paired_noise(why, history):
    number, _ = last_gain(history, 0.02, paired_noise=0.005)
    assert number == 1, why


def test_a_paired_gain_keeps_the_higher_bar_for_unpaired_runs_after_it():
    """v35 read 1.160 in one call and 1.148 beside its successor in another: the successor's 1.155 is a paired gain,
    yet an unpaired run after it must still clear 1.160 (not 1.155) by the floor."""
    history = [ok(1, 1.160, kernel_sha256="v35", device="H100"),
               ok(2, 1.148, kernel_sha256="v35", device="H100", pair="c:1"),
               ok(3, 1.155, kernel_sha256="v36", device="H100", pair="c:1"),
               ok(4, 1.180, kernel_sha256="v37", device="H100")]  # above 1.155 x 1.02, below 1.160 x 1.02
    assert last_gain(history, 0.02, paired_noise=0.005) == (3, 1)


def test_a_kernels_first_round_beside_the_best_kernel_counts_though_it_was_timed_before():
    """Session 36: v41 was timed beside a kernel that was not the log's best (#78's), then beside the best (#72's)
    in another call: that first round beside the best kernel is the paired rule's one chance, not a re-measure."""
    history = [ok(1, 1.1607, kernel_sha256="v36", device="H100"),
               ok(2, 1.1562, kernel_sha256="v37", device="H100", pair="c1:1"),
               ok(3, 1.1815, kernel_sha256="v41", device="H100", pair="c1:1"),   # beats v37, not the best kernel
               ok(4, 1.1566, kernel_sha256="v36", device="H100", pair="c3:1"),
               ok(5, 1.1791, kernel_sha256="v41", device="H100", pair="c3:1")]   # +1.9% beside v36
    assert last_gain(history[:3], 0.02, paired_noise=0.005) == (1, 2)
    g = gain_of(history, 0.02, paired_noise=0.005)
    assert (g.number, g.since, g.over) == (5, 0, 4)
    # Without the pair tags both are plain re-measures inside the 2% floor: no gain.
    assert last_gain(history, 0.02) == (1, 4)


def test_a_kernel_has_one_round_beside_each_best_kernel():
    """A kernel that lost its round beside the best kernel does not get another by being timed beside it again."""
    lost = [ok(1, 1.160, kernel_sha256="v36", device="H100"),
            ok(2, 1.158, kernel_sha256="v36", device="H100", pair="c1:1"),
            ok(3, 1.160, kernel_sha256="v41", device="H100", pair="c1:1"),   # +0.17%: inside the paired noise
            ok(4, 1.150, kernel_sha256="v36", device="H100", pair="c2:1"),
            ok(5, 1.170, kernel_sha256="v41", device="H100", pair="c2:1")]   # +1.7% in a second round: drift
    assert last_gain(lost, 0.02, paired_noise=0.005) == (1, 4)
    # The same second round is a gain where the first did not use the chance (the first partner was another kernel).
    other = [*lost[:1], ok(2, 1.158, kernel_sha256="v37", device="H100", pair="c1:1"), *lost[2:]]
    assert last_gain(other, 0.02, paired_noise=0.005) == (5, 0)


def test_the_gain_bar_names_the_kernel_the_paired_rule_compares_with_on_the_latest_device():
    from ks_tui.questions import gain_bar

    a, b = "H200", "H100"
    history = [ok(1, 1.10, kernel_sha256="v1", device=a),
               ok(2, 1.16, kernel_sha256="v2", device=a),                 # a gain on the H200
               ok(3, 1.148, kernel_sha256="v2", device=b),                # the H100's reference
               ok(4, 1.164, kernel_sha256="v3", device=b, pair="c:1"),    # the fastest H100 reading, no gain
               ok(5, 1.150, kernel_sha256="v4", device=b, pair="c:1")]
    bar = gain_bar(history, 0.02, paired_noise=0.005)
    # not #4 (the fastest reading): the paired rule compares with the kernel that set the H100's best, #3's
    assert (bar.device, bar.holder, round(bar.plain, 5)) == (b, 3, round(1.148 * 1.02, 5))
    gained = [*history, ok(6, 1.1545, kernel_sha256="v3", device=b, pair="c2:1"),
              ok(7, 1.17, kernel_sha256="v5", device=b, pair="c2:1")]  # +1.3% beside v3, not the best kernel (v2)
    assert gain_bar(gained, 0.02, paired_noise=0.005).holder == 3
    won = [*history, ok(6, 1.149, kernel_sha256="v2", device=b, pair="c3:1"),
           ok(7, 1.17, kernel_sha256="v5", device=b, pair="c3:1")]     # v5 beats v2's run by 1.8%: a gain
    bar = gain_bar(won, 0.02, paired_noise=0.005)
    assert (bar.holder, round(bar.plain, 5)) == (7, round(1.17 * 1.02, 5))
    assert gain_bar([*won, ok(8, 1.0, device=a)], 0.02, paired_noise=0.005).holder == 2  # the H200's again
    assert gain_bar([], 0.02) is None


def test_best_lead_is_measured_against_the_run_beside_it_else_the_fastest_earlier_rival():
    from ks_tui.questions import AttemptView, best_lead

    history = [ok(1, 1.1607, kernel_sha256="v36", device="H100"),
               ok(2, 1.1700, kernel_sha256="other", device="H200"),       # another device: never a rival
               ok(3, 1.1800, kernel_sha256="sub", device="H100", scope="subset"),  # another scope: never a rival
               ok(4, 1.1621, kernel_sha256="v36", device="H100", pair="c:1"),
               ok(5, 1.1638, kernel_sha256="v37", device="H100", pair="c:1"),
               ok(6, 1.1650, kernel_sha256="v37", device="H100")]
    lead = best_lead(history, 5)
    assert (lead.over, lead.paired) == (4, True) and lead.ratio == pytest.approx(1.1638 / 1.1621)
    # Unpaired: the fastest earlier run of another kernel on its device and scope (#4, not #1, #2 or #3); its own
    # kernel's earlier run (#5) is no rival.
    lead = best_lead(history, 6)
    assert (lead.over, lead.paired) == (4, False) and lead.ratio == pytest.approx(1.1650 / 1.1621)
    assert best_lead(history, 1) is None                   # nothing before it
    # A run that names no device (an old attempt) competes, as best_rule.comparable has it.
    lead = best_lead([ok(1, 1.10, kernel_sha256="old", device=""), ok(2, 1.11, kernel_sha256="new", device="H100")], 2)
    assert (lead.over, lead.paired) == (1, False)
    assert best_lead([*history, AttemptView(number=7, status="incorrect", speedup=1.2)], 7) is None  # not timed


def test_a_remeasure_of_a_comment_only_edit_is_no_gain_while_a_code_change_is():
    """#2's file has other bytes than #1's (a new kernel_sha256) but, when only its comments were edited, the same
    code: its +3% is drift of a re-measure (and the noise it measures), not a gain. The same numbers for a real code
    change are a gain."""
    first = ok(1, 1.00, kernel_sha256="file1", code="codeA")
    commented = ok(2, 1.03, kernel_sha256="file2", code="codeA")
    changed = ok(2, 1.03, kernel_sha256="file2", code="codeB")
    assert last_gain([first, commented], 0.02) == (1, 1)
    assert last_gain([first, changed], 0.02) == (2, 0)
    assert measured_noise([first, commented]) == pytest.approx(0.03)
    assert measured_noise([first, changed]) == 0.0
    # with the bank's floor from config, as the plateau point judges it
    assert "plateau" in points([first, commented, ok(3, 1.0, code="codeC"), ok(4, 1.0, code="codeD")])
    assert "plateau" not in points([first, changed, ok(3, 1.0, code="codeC"), ok(4, 1.0, code="codeD")])
    # where no code identity is known (older callers), the file's sha256 still tells kernels apart
    assert last_gain([ok(1, 1.00, kernel_sha256="file1"), ok(2, 1.03, kernel_sha256="file2")], 0.02) == (2, 0)
    assert last_gain([ok(1, 1.00, kernel_sha256="file1"), ok(2, 1.03, kernel_sha256="file1")], 0.02) == (1, 1)


def test_a_comment_only_copy_of_the_best_kernel_timed_beside_it_is_no_paired_gain():
    """The paired rule wants another kernel beside the best one: the best kernel with its comments edited (a promotion
    to best/) timed beside its own file in one call is the same kernel twice, so +0.8% there is noise."""
    def history(code3, copy_first=False):
        best = ok(2, 0.99, kernel_sha256="f1", code="v35", device="H100", pair="c1:1")
        copy = ok(3, 0.99 * 1.008, kernel_sha256="f3", code=code3, device="H100", pair="c1:1")
        return [ok(1, 1.00, kernel_sha256="f1", code="v35", device="H100"),
                *([replace(copy, number=2), replace(best, number=3)] if copy_first else [best, copy])]
    assert [g.number for g in gains(history("v36"), 0.02, 0.005)] == [1, 3]
    assert [g.number for g in gains(history("v35"), 0.02, 0.005)] == [1]
    assert [g.number for g in gains(history("v36", copy_first=True), 0.02, 0.005)] == [1, 2]
    assert [g.number for g in gains(history("v35", copy_first=True), 0.02, 0.005)] == [1]
    from ks_tui.questions.points import best_lead
    assert best_lead(history("v35"), 3) is None  # no other kernel to lead
    assert best_lead(history("v36"), 3).over == 2


def test_an_attempt_views_identity_is_its_code_else_its_file_sha256():
    from ks_tui.questions.views import AttemptView, from_attempt_dict

    base = {"number": 1, "status": "correct", "speedup": 1.0}
    assert from_attempt_dict({**base, "code": "c0de"}, {"kernel_sha256": "f11e"}).identity == "c0de"
    assert from_attempt_dict(base, {"kernel_sha256": "f11e"}).identity == "f11e"
    assert from_attempt_dict({**base, "code": ""}, {"kernel_sha256": "f11e"}).code == ""
    assert AttemptView(number=1, status="correct").identity == ""


def test_last_round_names_the_latest_chance_beside_the_best_kernel_and_whether_it_counted():
    from ks_tui.questions.points import standing

    def last_round(history, noise, paired_noise=None):
        return standing(history, noise, paired_noise)[2]

    won = last_round(_paired_history(), 0.02, paired_noise=0.005)
    assert (won.number, won.over, won.holder, won.won) == (4, 3, 1, True)
    assert won.ratio == pytest.approx(1.16068 / 1.15085)
    assert last_round(_paired_history(), 0.02) is None  # no paired rule, no rounds
    lost = [ok(1, 1.160, kernel_sha256="v36", device="H100"),
            ok(2, 1.158, kernel_sha256="v36", device="H100", pair="c1:1"),
            ok(3, 1.160, kernel_sha256="v41", device="H100", pair="c1:1"),
            ok(4, 1.150, kernel_sha256="v36", device="H100", pair="c2:1"),
            ok(5, 1.170, kernel_sha256="v41", device="H100", pair="c2:1")]  # a second round: no chance, no record
    r = last_round(lost, 0.02, paired_noise=0.005)
    assert (r.number, r.over, r.holder, r.won) == (3, 2, 1, False)


def test_log_lines_say_a_lost_round_is_spent_until_a_gain_comes_after_it():
    """Session 39: v44's code ran beside #115's kernel, +0.37%: the log says that chance is gone."""
    from ks_tui.questions import plateau_lines, plateau_of

    config = DecisionConfig(noise=0.02, paired_noise=0.005)
    history = [ok(1, 1.179, kernel_sha256="v41", device="H100"),
               ok(2, 1.1833, kernel_sha256="v44", device="H100", pair="c2:1"),
               ok(3, 1.1789, kernel_sha256="v41", device="H100", pair="c2:1")]
    lines = plateau_lines(plateau_of(history, config, best=1), best=1)
    assert lines[-1] == ("(#2's round beside #1's kernel (#3, same call): +0.37%, not above the 0.5% same-call noise; "
                         "that kernel's one round beside #1's is spent)")
    assert plateau_of(history, config, best=1).to_dict()["last_paired_round"] == {
        "attempt": 2, "beside": 3, "kernel_of": 1, "ratio": round(1.1833 / 1.1789, 6), "won": False}
    # A gain after the lost round makes it history: the line goes.
    gained = [*history, ok(4, 1.25, kernel_sha256="v45", device="H100")]
    assert not any("round beside" in line for line in plateau_lines(plateau_of(gained, config, best=4), best=4))


def test_every_device_keeps_its_own_gain_bar_the_latest_first():
    """Session 41 of flash_attn_fwd: the log named only the H100's bar; the H200's (#35's kernel, 1.179x alone)
    lived in the notes, though the next call could land on either card."""
    from ks_tui.questions import DecisionConfig, device_bars, gain_needs_lines, plateau_of

    a, b = "H200", "H100"
    history = [ok(1, 1.10, kernel_sha256="v1", device=a),
               ok(2, 1.16, kernel_sha256="v2", device=a),                 # a gain on the H200
               ok(3, 1.148, kernel_sha256="v2", device=b),                # the H100's reference
               ok(4, 1.150, kernel_sha256="v4", device=b, pair="c:1")]
    bars = device_bars(history, 0.02, paired_noise=0.005)
    assert [(x.device, x.holder, round(x.plain, 5)) for x in bars] == [(b, 3, round(1.148 * 1.02, 5)),
                                                                        (a, 2, round(1.16 * 1.02, 5))]
    # back on the H200: its bar comes first
    assert [x.device for x in device_bars([*history, ok(5, 1.0, device=a)], 0.02, paired_noise=0.005)] == [a, b]
    assert device_bars([], 0.02) == [] and device_bars([ok(1, 1.1, device=a, scope="subset")], 0.02) == []
    p = plateau_of(history, DecisionConfig(noise=0.02, paired_noise=0.005), best=2)
    assert gain_needs_lines(p) == [
        "(a gain on H100 must beat #3's kernel by 0.5% in one call (`ks show 3 --kernel`) or read above 1.1710x alone)",
        "(a gain on H200 must beat #2's kernel by 0.5% in one call (`ks show 2 --kernel`) or read above 1.1832x alone)"]
    assert p.to_dict()["gain_needs_elsewhere"] == [{"device": a, "beside_kernel_of": 2, "paired_noise": 0.005,
                                                    "alone_above": pytest.approx(1.16 * 1.02)}]


def test_an_invalid_timing_is_a_suspicious_gain_whatever_its_size():
    from ks_tui.questions.views import from_attempt_dict

    found = detect([ok(1, 1.0), ok(2, 1.01, invalid=2)], "attempt", CFG)
    assert [p.point for p in found] == ["suspicious_gain"]
    assert "attempt 2 has 2 invalid timing(s)" in found[0].reason
    view = from_attempt_dict({"number": 3, "status": "correct"}, {"invalid": 1, "status": "correct"})
    assert view.invalid == 1 and from_attempt_dict({"number": 4, "status": "correct"}, {}).invalid == 0
