"""probe_estimators.py on made-up turn-taking blocks: a clock step moves the ratio of medians, not the pairs."""

from lab.flash_attn_fwd.scripts.probe_estimators import estimates, spread_pct


def test_a_clock_step_between_pairs_leaves_the_paired_ratios_alone():
    # Kernel 1.0 ms and library 1.2 ms at full clock; after the first pair both run 10% slower, and the kernel has
    # more calls after the step than the library: the medians' ratio moves, each adjacent pair's ratio stays 1.2.
    block = {"f": ["", "lib", "", "lib", "", ""], "ms": [1.0, 1.2, 1.1, 1.32, 1.1, 1.1]}
    got = estimates([block], "lib")
    assert abs(got["median_of_pairs"] - 1.2) < 1e-9 and abs(got["trimmed_mean_of_pairs"] - 1.2) < 1e-9
    assert abs(got["ratio_of_medians"] - 1.26 / 1.1) < 1e-9  # 1.145: off by 4.5%
    assert estimates([{"f": ["", ""], "ms": [1.0, 1.0]}], "lib") is None


def test_spread_is_range_over_mean():
    assert abs(spread_pct([0.99, 1.01]) - 2.0) < 1e-9
