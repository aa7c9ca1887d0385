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


class GpuTimer:
    """CUDA events on the harness's stream, with an L2 flush before every timed call."""

    def __init__(self, torch, stream):
        self.torch, self.stream = torch, stream
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        self.l2_bytes = int(getattr(props, "L2_cache_size", 0) or 64 << 20)
        # Writing twice the L2 size evicts everything the previous call left there.
        self.flush_buf = torch.empty(max(2 * self.l2_bytes, 64 << 20) // 4, dtype=torch.int32,
                                     device="cuda")

    def rotation_sets(self, input_bytes: int) -> int:
        """How many input copies to cycle through so consecutive calls never share L2 lines."""
        if input_bytes >= self.l2_bytes:
            return 1
        return int(min(8, max(2, -(-2 * self.l2_bytes // max(1, input_bytes)))))

    def _timed(self, call, n: int) -> list[float]:
        torch = self.torch
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        with torch.cuda.stream(self.stream):
            for i in range(n):
                self.flush_buf.zero_()
                starts[i].record(self.stream)
                call(i)
                ends[i].record(self.stream)
        # Whole-device sync: work a candidate pushed to another stream is waited for too.
        torch.cuda.synchronize()
        return [s.elapsed_time(e) / 1e3 for s, e in zip(starts, ends)]

    def time(self, calls: list[Callable[[], object]], timing) -> dict:
        """Median of one function's calls (see `interleaved` for several)."""
        timed, errors = interleaved({"": calls}, timing, 1, self._timed)
        if "" in errors:
            raise errors[""]
        return timed[""]

    def time_interleaved(self, funcs, timing, rounds: int = 5):
        return interleaved(funcs, timing, rounds, self._timed)


def interleaved(funcs: dict[str, list[Callable[[], object]]], timing, rounds: int,
                timed_block: Callable[[Callable[[int], object], int], list[float]]
                ) -> tuple[dict[str, dict], dict[str, Exception]]:
    """Time several functions in alternating blocks; the median of each one's calls.

    `timed_block(call, n)` runs call(0..n-1) and returns n durations in seconds. Blocks of
    the kernel and of each baseline take turns (the order rotates every round), so a clock
    or temperature drift during the run moves all of them alike and their ratio holds. A
    function that raises is dropped and its error returned; the caller decides whether
    that is fatal (the kernel) or a skip (a library).
    """
    errors: dict[str, Exception] = {}
    plan: dict[str, tuple[Callable[[int], object], int]] = {}
    for name, calls in funcs.items():
        def call(i, calls=calls):
            calls[i % len(calls)]()
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
    for r in range(rounds):
        shift = r % max(1, len(order))
        for name in order[shift:] + order[:shift]:
            call, reps = plan[name]
            n = reps // rounds + (1 if r < reps % rounds else 0)
            if name in errors or n == 0:
                continue
            try:
                samples[name].extend(timed_block(call, n))
            except Exception as e:
                errors[name] = e
    return ({name: {**_summary(s), "rounds": rounds} for name, s in samples.items()
             if s and name not in errors}, errors)
