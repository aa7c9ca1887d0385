"""Timing one zero-argument callable: CPU wall clock or CUDA events, median of many calls.

The repetition count adapts to a per-scenario budget (task.yaml `timing`), so a big grid of
slow scenarios still finishes in minutes while fast ones get many samples.
"""

from __future__ import annotations

import statistics
import time
from typing import Callable


def _reps_for(one_call_s: float, timing) -> int:
    if one_call_s <= 0:
        return timing.max_reps
    return int(max(timing.min_reps, min(timing.max_reps, timing.budget_s / one_call_s)))


def time_cpu(funcs: dict[str, list[Callable[[], object]]], timing) -> dict[str, dict]:
    """Median monotonic-clock time of each named function, sampled round-robin.

    Interleaving kernel and baseline calls means both see the same machine load (other
    processes, frequency changes), so their ratio stays meaningful on a busy box.
    Each entry is a list of equivalent callables (input sets) cycled through.
    """
    for i in range(timing.warmup):
        for calls in funcs.values():
            calls[i % len(calls)]()
    one_round = 0.0
    for calls in funcs.values():
        t0 = time.perf_counter()
        calls[0]()
        one_round += time.perf_counter() - t0
    reps = _reps_for(one_round / max(1, len(funcs)), timing)
    samples: dict[str, list[float]] = {name: [] for name in funcs}
    cpu: dict[str, float] = dict.fromkeys(funcs, 0.0)
    for i in range(reps):
        for name, calls in funcs.items():
            call = calls[i % len(calls)]
            c0, t0 = time.process_time(), time.perf_counter()
            call()
            t1, c1 = time.perf_counter(), time.process_time()
            samples[name].append(t1 - t0)
            cpu[name] += c1 - c0
    # CPU seconds per wall second (all threads of the process). Informational only: on a
    # loaded machine it reads low, so it is no proof of how many threads a kernel used.
    return {name: {**_summary(s), "cores_used": round(cpu[name] / max(sum(s), 1e-9), 2)}
            for name, s in samples.items()}


def _summary(samples_s: list[float]) -> dict:
    ms = sorted(s * 1e3 for s in samples_s)
    return {"median_ms": statistics.median(ms), "min_ms": ms[0], "max_ms": ms[-1], "reps": len(ms)}


# Work a kernel hides from the events (launched on its own stream, left running) shows as wall time
# after the harness stream's last event: more than this, beyond the empty block's, makes it invalid.
HIDDEN_ABS_MS = 0.05
HIDDEN_REL = 0.5  # ... and more than this share of its event-timed median


def hidden_work_reason(timed: dict) -> str | None:
    """Why a function's event times miss work it left running elsewhere, or None: the device busy past the
    last event of its blocks (its own, or those it shared with the libraries), or the function running much
    faster between the libraries' calls than in a block of its own (its work overlapping theirs)."""
    median = timed.get("median_ms")
    if median is None:
        return None
    for key, where in (("hidden_ms", "each timed block"), ("mixed_hidden_ms", "each block shared with the libraries")):
        hidden = timed.get(key)
        if hidden is not None and hidden > max(HIDDEN_ABS_MS, HIDDEN_REL * median):
            return (f"work outside the timed stream: after {where} the device stayed busy "
                    f"{hidden:.3f} ms past the harness stream's last event (event median {median:.3f} ms); "
                    "a kernel must run on the stream it is given")
    alone = timed.get("alone_ms")
    if alone is not None and median < (1 - ALONE_REL) * alone:
        return (f"work outside the timed stream: {median:.3f} ms between the libraries' calls but {alone:.3f} ms "
                "in a block of its own; a kernel must run on the stream it is given")
    return None


class GpuTimer:
    """CUDA events on the harness's stream, with an L2 flush before every timed call.

    Each block of calls is also timed by the wall clock between two device-wide synchronizations: the
    part of it the harness stream's events do not cover (less that of an empty block) is work left
    running on another stream (`hidden_ms`). Persisting L2 lines are reset before each block (l2.py)."""

    def __init__(self, torch, stream):
        from ks_tui.harness.l2 import PersistingL2

        self.torch, self.stream = torch, stream
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        self.l2_bytes = int(getattr(props, "L2_cache_size", 0) or 64 << 20)
        # Writing twice the L2 size evicts everything the previous call left there.
        self.flush_buf = torch.empty(max(2 * self.l2_bytes, 64 << 20) // 4, dtype=torch.int32,
                                     device="cuda")
        self.persisting = PersistingL2()
        self.gaps: dict[str, list[float]] = {}  # per function name: wall - event span of each block (s)
        self._empty_gap: float | None = None

    def rotation_sets(self, input_bytes: int) -> int:
        """How many input copies to cycle through so consecutive calls never share L2 lines."""
        if input_bytes >= self.l2_bytes:
            return 1
        return int(min(8, max(2, -(-2 * self.l2_bytes // max(1, input_bytes)))))

    def _timed(self, call, n: int) -> list[float]:
        torch = self.torch
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        first, last = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        self.persisting.reset()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.cuda.stream(self.stream):
            first.record(self.stream)
            for i in range(n):
                self.flush_buf.zero_()
                starts[i].record(self.stream)
                call(i)
                ends[i].record(self.stream)
            last.record(self.stream)
        # Whole-device sync: work a candidate pushed to another stream is waited for too.
        torch.cuda.synchronize()
        wall = time.perf_counter() - t0
        name = getattr(call, "ks_name", None)
        if name is not None:
            self.gaps.setdefault(name, []).append(wall - first.elapsed_time(last) / 1e3)
        return [s.elapsed_time(e) / 1e3 for s, e in zip(starts, ends)]

    def empty_gap(self) -> float:
        """The wall-minus-events gap of a block that runs nothing (launch and sync latency), best of 5."""
        if self._empty_gap is None:
            def nothing(i):
                pass
            nothing.ks_name = "\0empty"
            for _ in range(5):
                self._timed(nothing, 1)
            self._empty_gap = min(self.gaps.pop("\0empty"))
        return self._empty_gap

    def hidden_ms(self, name: str, last: int = 0) -> float | None:
        """Wall time past the harness stream's events in this function's best block (of its `last` ones when
        given), less an empty block's."""
        gaps = self.gaps.get(name)
        if not gaps:
            return None
        return max(0.0, (min(gaps[-last:] if last else gaps) - self.empty_gap()) * 1e3)

    def time(self, calls: list[Callable[[], object]], timing) -> dict:
        """Median of one function's calls (see `interleaved` for several)."""
        timed, errors = interleaved({"": calls}, timing, 1, self._timed)
        if "" in errors:
            raise errors[""]
        return timed[""]

    def time_interleaved(self, funcs, timing, rounds: int = 5, alone: tuple[str, ...] = ()):
        """`interleaved` on the GPU; `alone` names the functions checked for hidden work (the kernel): each gets
        `hidden_ms` from the blocks it ran alone, and with alternating blocks `mixed_hidden_ms` from those."""
        self.gaps.clear()
        timed, errors = interleaved(funcs, timing, rounds, self._timed, alone)
        for name, t in timed.items():
            # Taking turns, a checked function's own blocks are its warm-up and its blocks alone at the end: those
            # count (a kernel honest while warmed up must not hide behind its warm-up block).
            t["hidden_ms"] = self.hidden_ms(name, last=ALONE_BLOCKS if "alone_ms" in t else 0)
            if name in alone and MIXED in self.gaps:
                t["mixed_hidden_ms"] = self.hidden_ms(MIXED)
        return timed, errors


MIXED = "\0mixed"  # the name an alternating block's gaps are kept under (it times several functions)
ALONE_BLOCKS = 2    # alternating: blocks of the checked function's own at the end (two: one hiccup is no verdict)
ALONE_CALLS = 1     # ... its calls in each that count (after a lead call)
ALONE_REL = 0.2     # ... it may not run more than this much faster between the others' calls than alone


def interleaved(funcs: dict[str, list[Callable[[], object]]], timing, rounds: int,
                timed_block: Callable[[Callable[[int], object], int], list[float]], alone: tuple[str, ...] = ()
                ) -> tuple[dict[str, dict], dict[str, Exception]]:
    """Time several functions in `rounds` blocks; the median of each one's calls.

    `timed_block(call, n)` runs call(0..n-1) and returns n durations in seconds. With `timing.alternate`
    (the default) each block runs every function's calls in turn, call by call, so the kernel and each library
    see the same clock, temperature and power state (on an H100 a scenario's speedup held 3x steadier so than
    with a block per function, docs/harness.md). Without it the functions take turns block by block. The
    order rotates every round. A block's first call after the device-wide sync runs ~10% slow: taking turns,
    that is one call of one function per block. Taking turns, the order inside each turn is chosen so that every
    function follows every function about as often (`Successions`): under a power cap a call's clock can depend on
    what ran just before it, and a fixed cyclic order would put each function always after the same neighbour.
    The functions in `alone` (the kernel) also get ALONE_BLOCKS short blocks of their own at the end:
    `alone_ms`, the median of their calls but each block's first, for hidden_work_reason's check that work left
    on another stream did not overlap the others' calls; and, taking turns, `paired`: {other function: the
    median, over the turns in which both ran, of the other's call time over its own} (see `paired_ratios`).
    A function that raises is dropped and its error returned; the caller decides whether that is fatal (the
    kernel) or a skip (a library).
    """
    errors: dict[str, Exception] = {}
    plan: dict[str, tuple[Callable[[int], object], int]] = {}
    for name, calls in funcs.items():
        def call(i, calls=calls):
            calls[i % len(calls)]()
        call.ks_name = name  # lets a timer keep per-function records (GpuTimer's hidden-work check)
        try:
            # The warm-up calls are timed too: their tail estimates one call.
            warm = timed_block(call, max(2, timing.warmup))
        except Exception as e:
            errors[name] = e
            continue
        plan[name] = (call, _reps_for(statistics.median(warm[1:]), timing))
    rounds = max(1, rounds)
    samples: dict[str, list[float]] = {name: [] for name in plan}
    order = list(plan)
    done = dict.fromkeys(plan, 0)  # each function's calls so far: its input sets rotate on across blocks
    successions = Successions()
    turns: dict[tuple[int, int], dict[str, float]] = {}  # (round, turn in its block) -> {function: seconds}
    for r in range(rounds):
        shift = r % max(1, len(order))
        turn = [name for name in order[shift:] + order[:shift] if name not in errors]
        counts = {name: plan[name][1] // rounds + (1 if r < plan[name][1] % rounds else 0) for name in turn}
        if getattr(timing, "alternate", False):
            _alternating_block(plan, turn, counts, done, samples, errors, timed_block, turns, r, successions)
            continue
        for name in turn:
            call, n = plan[name][0], counts[name]
            if name in errors or n == 0:
                continue
            try:
                samples[name].extend(timed_block(call, n))
            except Exception as e:
                errors[name] = e
    out = {name: {**_summary(s), "rounds": rounds} for name, s in samples.items() if s and name not in errors}
    if getattr(timing, "alternate", False):
        for name in alone:
            if name in out:
                try:
                    lone = [t for _ in range(ALONE_BLOCKS) for t in timed_block(plan[name][0], ALONE_CALLS + 1)[1:]]
                except Exception as e:
                    errors[name] = e
                    out.pop(name)
                    continue
                out[name]["alone_ms"] = statistics.median(lone) * 1e3
                out[name]["paired"] = paired_ratios(turns, name, [n for n in out if n != name])
        for name in out:
            out[name]["after"] = successions.after_ms(name)
    return out, errors


def paired_ratios(turns: dict[tuple[int, int], dict[str, float]], mine: str, others: list[str]) -> dict[str, float]:
    """For each other function, the median over the turns in which both ran of (its time / mine).

    Taking turns, a function's call and the others' calls of the same turn are adjacent in time, so a clock or
    power swing slower than a few calls moves both alike and cancels in their ratio; a ratio of the two medians
    mixes calls made at different clocks (on an H100 under its power cap, a long scenario's few calls each).
    """
    ratios: dict[str, list[float]] = {n: [] for n in others}
    for times in turns.values():
        if times.get(mine, 0) > 0:
            for n in others:
                if n in times:
                    ratios[n].append(times[n] / times[mine])
    return {n: statistics.median(r) for n, r in ratios.items() if r}


class Successions:
    """How often each function's call came right after each function's call (itself included), across the blocks
    of one scenario, and the order of a turn that evens those counts out.

    Under a power cap the clock a call gets can depend on the power drawn just before it: a 50 ms call after a
    library that draws less may start at a higher clock than after one that draws more. Rotating one cyclic order
    round by round would leave each function always after the same neighbour (the kernel always after the last
    library, the first library always after the kernel), so that neighbour's power would favour or handicap it
    on every call of the run. Here each call goes, among the functions the turn still needs, to the one that has
    followed the previous call's function least often (ties: the rotated order), so every function sees about
    the same mix of predecessors. It also keeps each call's time by its predecessor (`after_ms`), so a run shows
    whether the predecessor moved a function's time at all."""

    SYNC = "sync"  # the predecessor of a block's first call: the device-wide synchronize before the block

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str], int] = {}  # (before, after) -> calls
        self.times: dict[str, dict[str, list[float]]] = {}  # function -> its predecessor -> its calls' seconds

    def order(self, names: list[str], before: str | None) -> list[str]:
        """One turn: each of `names` once, the first after `before` (None: a block's first turn, in the given
        order's start, so the block's slow first call still rotates round by round)."""
        left, out = list(names), []
        while left:
            pick = left[0] if before is None else min(left, key=lambda n: self.counts.get((before, n), 0))
            if before is not None:
                self.counts[(before, pick)] = self.counts.get((before, pick), 0) + 1
            left.remove(pick)
            out.append(pick)
            before = pick
        return out

    def record(self, name: str, before: str | None, seconds: float) -> None:
        self.times.setdefault(name, {}).setdefault(self.SYNC if before is None else before, []).append(seconds)

    def after_ms(self, name: str) -> dict[str, float]:
        """{predecessor: the median of `name`'s calls right after it, ms} (SYNC: a block's first call)."""
        return {b: statistics.median(s) * 1e3 for b, s in sorted(self.times.get(name, {}).items())}


def _alternating_block(plan, turn: list[str], counts: dict[str, int], done: dict[str, int],
                       samples: dict[str, list[float]], errors: dict[str, Exception], timed_block,
                       turns: dict[tuple[int, int], dict[str, float]], r: int, successions: Successions) -> None:
    """One block in which the functions' calls take turns (one function running out of calls leaves the rest);
    each call's time also goes to `turns` under (round r, turn j); `successions` orders each turn."""
    slots: list[tuple[str, int, int]] = []
    before: str | None = None
    for j in range(max(counts.values(), default=0)):
        names = successions.order([name for name in turn if j < counts[name]], before)
        slots += [(name, done[name] + j, j) for name in names]
        before = names[-1]  # j < max(counts): some function has a call in every turn
    if not slots:
        return
    failed: list[str] = []

    def mixed(i: int) -> None:
        name, k, _ = slots[i]
        try:
            plan[name][0](k)
        except Exception:
            failed.append(name)
            raise

    mixed.ks_name = MIXED  # type: ignore[attr-defined]
    try:
        times = timed_block(mixed, len(slots))
    except Exception as e:  # the block's calls are lost for everyone; the one that raised is dropped
        if failed:
            errors[failed[-1]] = e
            return
        raise
    for i, ((name, _, j), t) in enumerate(zip(slots, times)):
        samples[name].append(t)
        turns.setdefault((r, j), {})[name] = t
        successions.record(name, slots[i - 1][0] if i else None, t)
    for name in turn:
        done[name] += counts[name]
