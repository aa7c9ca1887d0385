"""The GPU timer's block interleaving, driven by a CPU block timer (no timing asserted)."""

import time

import pytest

from ks_tui.harness.timing import interleaved
from ks_tui.task import Timing


def _recording_block(log):
    def timed_block(call, n):
        out = []
        for i in range(n):
            t0 = time.perf_counter()
            call(i)
            out.append(time.perf_counter() - t0)
        log.append(n)
        return out
    return timed_block


def _counter(trace, name, fail_after=None):
    count = [0]

    def f():
        count[0] += 1
        trace.append(name)
        if fail_after is not None and count[0] > fail_after:
            raise RuntimeError(f"{name} broke")
    return f


def test_blocks_alternate_and_rotate_and_count_reps():
    trace, blocks = [], []
    timing = Timing(warmup=2, min_reps=12, max_reps=12, budget_s=1e-9, alternate=False)
    funcs = {"": [_counter(trace, "k")], "a": [_counter(trace, "a")], "b": [_counter(trace, "b")]}
    timed, errors = interleaved(funcs, timing, 4, _recording_block(blocks))
    assert errors == {}
    assert {k: v["reps"] for k, v in timed.items()} == {"": 12, "a": 12, "b": 12}
    assert all(v["rounds"] == 4 for v in timed.values())
    body = trace[3 * 2:]  # after the warm-up of each
    # 4 rounds of 3 blocks of 3 calls; the order starts one later each round.
    firsts = [body[i] for i in range(0, len(body), 3)]
    assert firsts == ["k", "a", "b", "a", "b", "k", "b", "k", "a", "k", "a", "b"]


def test_uneven_reps_spread_over_rounds():
    trace, blocks = [], []
    timing = Timing(warmup=2, min_reps=7, max_reps=7, budget_s=1e-9, alternate=False)
    timed, _ = interleaved({"": [_counter(trace, "k")]}, timing, 3, _recording_block(blocks))
    assert timed[""]["reps"] == 7
    assert blocks == [2, 3, 2, 2]  # warm-up, then 7 split as 3 + 2 + 2


@pytest.mark.parametrize("alternate", [False, True])
def test_a_failing_function_is_dropped_and_the_rest_still_timed(alternate):
    trace, blocks = [], []
    timing = Timing(warmup=2, min_reps=10, max_reps=10, budget_s=1e-9, alternate=alternate)
    funcs = {"": [_counter(trace, "k")], "lib": [_counter(trace, "lib", fail_after=5)],
             "dead": [_counter(trace, "dead", fail_after=0)]}
    timed, errors = interleaved(funcs, timing, 5, _recording_block(blocks))
    assert set(errors) == {"lib", "dead"}
    assert "lib broke" in str(errors["lib"]) and "dead broke" in str(errors["dead"])
    # Once dropped, a function is not called again. Taking turns, the block in which a library fails is lost to
    # the kernel too (its calls there are not counted).
    assert set(timed) == {""} and timed[""]["reps"] == (8 if alternate else 10)
    assert trace.count("lib") == 6 and trace.count("dead") == 1


def test_rounds_is_read_from_task_yaml():
    from ks_tui.task import load_task
    from tests.harness.conftest import REPO

    import yaml

    task = load_task("flash_attn_fwd", REPO)
    written = yaml.safe_load(task.yaml_path.read_text())["timing"]
    assert task.timing.rounds == written["rounds"] != Timing().rounds  # not the default by chance
    assert task.timing.for_run(True).rounds == written["quick"]["rounds"]


@pytest.mark.parametrize("rounds", [1, 2, 9])
def test_all_rounds_counts_give_exact_reps(rounds):
    trace, blocks = [], []
    timing = Timing(warmup=3, min_reps=9, max_reps=9, budget_s=1e-9)
    timed, _ = interleaved({"": [_counter(trace, "k")], "x": [_counter(trace, "x")]}, timing,
                           rounds, _recording_block(blocks))
    assert timed[""]["reps"] == timed["x"]["reps"] == 9


def test_taking_turns_call_by_call_rotates_the_order_and_counts_reps():
    trace, blocks = [], []
    timing = Timing(warmup=2, min_reps=6, max_reps=6, budget_s=1e-9)  # alternate: the default
    funcs = {"": [_counter(trace, "k")], "a": [_counter(trace, "a")], "b": [_counter(trace, "b")]}
    timed, errors = interleaved(funcs, timing, 3, _recording_block(blocks), alone=("",))
    assert errors == {} and {k: v["reps"] for k, v in timed.items()} == {"": 6, "a": 6, "b": 6}
    body = trace[3 * 2:]
    # One block a round, each starting one later in the order (k, a, b); inside a block the second turn's order
    # goes to the functions that have followed the previous call's least (b -> k, then k -> b: k -> a was taken)
    assert body[:18] == ["k", "a", "b", "k", "b", "a", "a", "k", "b", "b", "a", "k", "b", "k", "a", "a", "b", "k"]
    assert body[18:] == ["k"] * 4  # then the kernel alone: two blocks of a lead call and one that counts
    assert blocks == [2, 2, 2, 6, 6, 6, 2, 2]
    assert "alone_ms" in timed[""] and "alone_ms" not in timed["a"]


def test_taking_turns_with_uneven_counts_leaves_the_longer_one_alone_at_the_end_of_a_block():
    trace = []

    def block(call, n):  # the slow function's warm-up says 2 ms a call: fewer reps within the budget
        for i in range(n):
            call(i)
        return [2e-3 if call.ks_name == "s" else 1e-6] * n

    timing = Timing(warmup=2, min_reps=2, max_reps=4, budget_s=0.003)
    timed, _ = interleaved({"f": [_counter(trace, "f")], "s": [_counter(trace, "s")]}, timing, 1, block)
    assert timed["f"]["reps"] == 4 and timed["s"]["reps"] == 2
    assert trace[4:] == ["f", "s", "f", "s", "f", "f"]


def test_each_function_s_inputs_rotate_on_across_blocks():
    seen = []
    sets = [lambda i=i: seen.append(i) for i in range(3)]
    timing = Timing(warmup=2, min_reps=4, max_reps=4, budget_s=1e-9)
    interleaved({"": sets}, timing, 2, _recording_block([]))
    assert seen == [0, 1, 0, 1, 2, 0]  # warm-up 0 1, then the 4 timed calls: 0 1 | 2 0, not 0 1 | 0 1


def test_taking_turns_pairs_each_call_with_the_others_of_its_turn():
    # The device slows by 1% a call. The library takes 2.5x the kernel's time at any clock, so within the budget
    # it gets 4 calls to the kernel's 10 and runs out early in the block: its median comes from the block's
    # faster start, the kernel's from its slower rest, and the medians' ratio reads ~4% low. The ratio within
    # each turn is off only by the one call between the two (1%).
    trace, clock = [], [1.0]

    def block(call, n):
        out = []
        for i in range(n):
            call(i)
            clock[0] *= 1.01
            out.append(1e-3 * clock[0] * (2.5 if trace[-1] == "lib" else 1.0))
        return out

    timing = Timing(warmup=2, min_reps=2, max_reps=20, budget_s=0.0105)
    funcs = {"": [_counter(trace, "k")], "lib": [_counter(trace, "lib")]}
    timed, errors = interleaved(funcs, timing, 1, block, alone=("",))
    assert errors == {} and (timed[""]["reps"], timed["lib"]["reps"]) == (10, 4)
    assert timed[""]["paired"] == {"lib": pytest.approx(2.5 * 1.01)}
    assert timed["lib"]["median_ms"] / timed[""]["median_ms"] < 2.5 * 0.97  # the bias pairing avoids


def test_pairs_only_where_calls_take_turns():
    import dataclasses

    funcs = {"": [lambda: None], "a": [lambda: None]}
    apart = Timing(warmup=2, min_reps=4, max_reps=4, budget_s=1e-9, alternate=False)
    timed, _ = interleaved(funcs, apart, 2, _recording_block([]), alone=("",))
    assert "paired" not in timed[""]
    turns = dataclasses.replace(apart, alternate=True)
    timed, _ = interleaved(funcs, turns, 2, _recording_block([]), alone=("",))
    assert set(timed[""]["paired"]) == {"a"} and "paired" not in timed["a"]


def _predecessors(body, names):
    """name -> {name of the call just before: count}, inside the blocks' call sequence."""
    out = {n: dict.fromkeys(names, 0) for n in names}
    for before, after in zip(body, body[1:]):
        out[after][before] += 1
    return out


@pytest.mark.parametrize("reps", [8, 100])
def test_taking_turns_every_function_follows_every_other_about_as_often(reps):
    # A fixed cyclic order (rotated round by round) put the kernel always right after the last library and the
    # first library always right after the kernel: under a power cap, a neighbour's power draw then favours or
    # handicaps one function on every call. The grid's longest launches get 8 calls; short ones up to 100.
    trace, blocks = [], []
    timing = Timing(warmup=2, min_reps=reps, max_reps=reps, budget_s=1e-9)
    names = ["k", "cudnn", "flash", "fa3"]
    funcs = {("" if n == "k" else n): [_counter(trace, n)] for n in names}
    timed, errors = interleaved(funcs, timing, 4, _recording_block(blocks), alone=("",))
    assert errors == {} and all(v["reps"] == reps for v in timed.values())
    body, per_block = trace[4 * 2:4 * 2 + 4 * reps], reps  # the shared blocks, 4 rounds of `reps` calls
    pred = {n: dict.fromkeys(names, 0) for n in names}
    for b in range(4):
        block = body[b * per_block:(b + 1) * per_block]
        assert block[0] == names[b]  # a block's slow first call still rotates round by round
        for n, counts in _predecessors(block, names).items():
            for m, c in counts.items():
                pred[n][m] += c
    for n in names:
        others = [pred[n][m] for m in names if m != n]
        # 8 calls a function: 7 successions a block, 28 in all, none of the others before it more than 3 times
        assert (min(others) >= 1 and max(others) <= 3) if reps == 8 else max(others) - min(others) <= 3, (n, pred[n])
    # the old order: the kernel after fa3 on every call but a block's first, fa3 after flash
    assert pred["k"]["fa3"] < 0.5 * sum(pred["k"].values()) and pred["fa3"]["flash"] < 0.5 * sum(pred["fa3"].values())


def test_successions_order_is_a_permutation_that_evens_out_the_counts():
    from ks_tui.harness.timing import Successions

    s = Successions()
    assert s.order(["a", "b", "c"], None) == ["a", "b", "c"]  # a block's first turn keeps the given start
    assert s.order(["a", "b", "c"], "c") == ["a", "c", "b"]  # c -> a (new), a -> b taken, a -> c new
    assert sorted(s.order(["b", "c"], "b")) == ["b", "c"]  # a function out of calls is left out
    assert s.order([], "a") == []


def test_taking_turns_each_function_s_median_by_the_call_before_it():
    # The kernel runs 30% slower right after the "hot" library (a power-state carry-over, say): its medians by
    # predecessor show it, where its overall median only mixes the two.
    trace = []

    def block(call, n):
        out = []
        for i in range(n):
            before = trace[-1] if i else None
            call(i)
            slow = 1.3 if trace[-1] == "k" and before == "hot" else 1.0
            out.append(1e-3 * slow)
        return out

    timing = Timing(warmup=2, min_reps=24, max_reps=24, budget_s=1e-9)
    funcs = {"": [_counter(trace, "k")], "hot": [_counter(trace, "hot")], "cool": [_counter(trace, "cool")]}
    timed, errors = interleaved(funcs, timing, 4, block, alone=("",))
    assert errors == {}
    after = timed[""]["after"]
    assert after["hot"] == pytest.approx(1.3) and after["cool"] == pytest.approx(1.0)
    assert set(after) <= {"hot", "cool", "", "sync"} and "sync" in after  # the kernel starts a block in round 0
    assert set(timed["hot"]["after"]) >= {"", "cool"} and all(ms == pytest.approx(1.0) for ms in timed["hot"]["after"].values())
