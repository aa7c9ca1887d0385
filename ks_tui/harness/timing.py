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


def time_cpu(calls: list[Callable[[], object]], timing) -> dict:
    """Warm-up, then the median of N monotonic-clock samples, cycling over `calls`."""
    for i in range(timing.warmup):
        calls[i % len(calls)]()
    t0 = time.perf_counter()
    calls[0]()
    reps = _reps_for(time.perf_counter() - t0, timing)
    samples = []
    for i in range(reps):
        call = calls[i % len(calls)]
        t0 = time.perf_counter()
        call()
        samples.append(time.perf_counter() - t0)
    return _summary(samples)


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
        def call(i):
            calls[i % len(calls)]()

        self._timed(call, max(1, timing.warmup))
        probe = statistics.median(self._timed(call, 3))
        return _summary(self._timed(call, _reps_for(probe, timing)))
