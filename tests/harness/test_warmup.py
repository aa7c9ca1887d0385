"""The libraries' first calls made ahead of the bench (harness/warmup.py), driven on the CPU with a reference
module written here: one call per baseline and scenario in the bench's order, the first group on the calling
thread (run_here, until the check is done), the others on threads of their own, stop() waiting for the call in
progress and starting no other, cancel() not waiting, failures only recorded."""

from __future__ import annotations

import importlib
import threading
import types

import pytest

from ks_tui.harness.reference_api import Unavailable
from ks_tui.harness.runner import _Background, _draw_seed
from ks_tui.harness.warmup import LibraryWarmup, groups

torch = pytest.importorskip("torch")


def test_groups_follow_the_declaration_and_give_the_rest_a_thread_each():
    assert groups(["a", "b", "c"], None) == [["a", "b", "c"]]
    assert groups(["a", "b", "c", "d"], [["b", "a"], ["x"]]) == [["a", "b"], ["c"], ["d"]]
    assert groups([], [["a"]]) == []


class Library:
    """A task's baselines that say which thread called them, for which scenario; `gate` holds a call open."""

    def __init__(self, names, failing=None, unavailable=(), gate=None):
        self.calls: list[tuple[str, str, str]] = []
        self.entered = threading.Event()
        self.failing, self.unavailable, self.gate = failing or {}, set(unavailable), gate
        self.BASELINES = {n: self._factory(n) for n in names}

    def _factory(self, name):
        def factory(inputs, p):
            if name in self.unavailable:
                raise Unavailable("not here")

            def call():
                self.calls.append((name, p["sid"], threading.current_thread().name))
                if name in self.failing:
                    raise RuntimeError(self.failing[name])
                self.entered.set()
                if self.gate is not None:
                    self.gate.wait(60)
                return inputs["x"] * 2
            return call
        return factory

    def module(self, declared=None):
        mod = types.SimpleNamespace(BASELINES=self.BASELINES,
                                    make_inputs=lambda p, gen, device: {"x": torch.randn(4, generator=gen)})
        if declared is not None:
            mod.BASELINE_GROUPS = declared
        return mod


def start(lib, names, declared=None, n=3):
    task = types.SimpleNamespace(device="cpu", baselines=list(names))
    scenarios = [types.SimpleNamespace(id=f"s{i}", params={"sid": f"s{i}"}) for i in range(n)]
    torch_import = _Background(importlib.import_module, "torch")
    return LibraryWarmup(torch_import, lambda t: lib.module(declared), task, scenarios, 7, _draw_seed)


def wait_for(cond):
    ev = threading.Event()
    for _ in range(6000):
        if cond():
            return
        ev.wait(0.01)
    raise AssertionError("the warm-up never got there")


def test_every_baseline_once_per_scenario_in_order_the_first_group_on_the_calling_thread():
    lib = Library(["sdpa_a", "sdpa_b", "fa"])
    w = start(lib, ["sdpa_a", "sdpa_b", "fa", "absent"], declared=[["sdpa_a", "sdpa_b"]])
    w.run_here(until=lambda: False)
    wait_for(lambda: w.calls == 9)
    w.stop()
    t = w.timings()
    assert (t["warmup_calls"], t["warmup_failed"], t["warmup_stop"]) == (9, 0, "all done")
    for name in ("sdpa_a", "sdpa_b", "fa"):
        assert [sid for n, sid, _ in lib.calls if n == name] == ["s0", "s1", "s2"]
    thread = {n: th for n, _, th in lib.calls}
    assert thread["sdpa_a"] == thread["sdpa_b"] == threading.current_thread().name != thread["fa"]


def test_run_here_goes_on_where_it_stopped():
    """The runner calls it during the compile, then again during the check: no scenario is warmed twice."""
    lib = Library(["a"])
    w = start(lib, ["a"], n=4)
    w.run_here(until=lambda: len(lib.calls) >= 2)
    w.run_here(until=lambda: False)
    w.run_here(until=lambda: False)  # nothing left
    w.stop()
    assert [c[1] for c in lib.calls] == ["s0", "s1", "s2", "s3"]
    assert w.timings()["warmup_stop"] == "all done" and w.timings()["warmup_calls"] == 4


def test_run_here_ends_when_the_check_does():
    lib = Library(["a", "b"])
    w = start(lib, ["a", "b"], n=5)  # no groups declared: both on the calling thread
    w.run_here(until=lambda: len(lib.calls) >= 3)
    w.stop()
    assert [c[:2] for c in lib.calls] == [("a", "s0"), ("b", "s0"), ("a", "s1")]
    assert w.timings()["warmup_stop"] == "bench started"


def test_stop_waits_for_the_call_in_progress_and_starts_no_other():
    gate = threading.Event()
    lib = Library(["here", "slow"], gate=gate)
    w = start(lib, ["here", "slow"], declared=[["here"]])  # "slow" on a thread of its own
    assert lib.entered.wait(60)
    stopper = threading.Thread(target=w.stop)
    stopper.start()
    stopper.join(0.3)
    assert stopper.is_alive()  # the call is still open: stop() has to wait for it
    gate.set()
    stopper.join(60)
    assert not stopper.is_alive()
    assert [c[:2] for c in lib.calls] == [("slow", "s0")]  # and run_here, called now, starts nothing
    w.run_here(until=lambda: False)
    assert len(lib.calls) == 1 and w.timings()["warmup_stop"] == "bench started"


def test_cancel_does_not_wait_and_nothing_more_starts():
    gate = threading.Event()
    lib = Library(["here", "slow"], gate=gate)
    w = start(lib, ["here", "slow"], declared=[["here"]])
    assert lib.entered.wait(60)
    w.cancel()  # returns although the call is still open (a hang here ends in the suite's timeout)
    assert not gate.is_set()
    gate.set()
    w.stop()
    assert len(lib.calls) == 1


def test_unavailable_is_skipped_and_a_cuda_error_ends_that_thread_only():
    lib = Library(["gone", "broken", "fine"], failing={"broken": "CUDA error: an illegal memory access"},
                  unavailable=["gone"])
    w = start(lib, ["gone", "broken", "fine"], declared=[["gone"]])
    w.run_here(until=lambda: False)
    wait_for(lambda: w.calls == 3)
    w.stop()
    t = w.timings()
    assert t["warmup_calls"] == 3 and t["warmup_failed"] == 1
    assert "broken: RuntimeError: CUDA error" in t["warmup_stop"]
    assert [sid for n, sid, _ in lib.calls if n == "broken"] == ["s0"]
    assert [sid for n, sid, _ in lib.calls if n == "fine"] == ["s0", "s1", "s2"]


def test_run_here_does_not_wait_for_torch_when_the_compile_is_already_over():
    release = threading.Event()

    class SlowImport:  # torch still being imported
        @staticmethod
        def result():
            release.wait(60)
            return torch

    lib = Library(["a"])
    task = types.SimpleNamespace(device="cpu", baselines=["a"])
    scenarios = [types.SimpleNamespace(id="s0", params={"sid": "s0"})]
    w = LibraryWarmup(SlowImport, lambda t: lib.module(), task, scenarios, 7, _draw_seed)
    w.run_here(until=lambda: True)  # returns at once (a hang here ends in the suite's timeout)
    assert lib.calls == [] and not release.is_set()
    release.set()
    w.stop()
    assert lib.calls == []  # stopped before its group ran
