"""The pre-started harness child (harness/warm.py) through the real client and real child processes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from ks_tui.harness.client import run_harness
from ks_tui.harness.warm import WarmPool
from tests.harness.conftest import active_sandbox, started_inside
from tests.support.processes import gone, wait_gone

ONE = ["d24-h2-1-q31-k45-b4"]


@pytest.fixture(autouse=True)
def _no_sandbox(monkeypatch):
    # A pre-started child runs outside any sandbox, so it serves only where none is in force.
    monkeypatch.setenv("KS_SANDBOX", "off")


@pytest.mark.slow
def test_under_a_sandbox_the_next_child_is_pre_started_inside_it(cpu_task, planted_dir, monkeypatch):
    box = active_sandbox(monkeypatch)
    pool = WarmPool()
    try:
        first = run_harness(cpu_task, scenarios=ONE, pool=pool)
        waiting = pool.idle_pid
        assert started_inside(waiting, box)
        scratch = pool._child.scratch
        assert scratch is not None and scratch.is_dir()
        second = run_harness(cpu_task, scenarios=ONE, pool=pool)
        assert first["status"] == second["status"] == "correct", second["message"]
        assert first["sandbox"] == second["sandbox"] == box.mode
        assert "warm_start" not in first["timings"] and second["timings"]["warm_start"] is True
        assert not scratch.exists()  # its own folder went with the run
        assert wait_gone(waiting)
        if box.mode == "bwrap":
            # A source outside the task's workspace is not visible to the waiting child: that run starts cold.
            outside = planted_dir.parent / "elsewhere.cpp"
            outside.write_text(cpu_task.kernel.read_text())
            cold = run_harness(cpu_task, outside, scenarios=ONE, pool=pool)
            assert cold["status"] == "correct" and "warm_start" not in cold["timings"], cold["message"]
    finally:
        pool.close()
    assert pool.idle_pid is None


@pytest.mark.slow
def test_the_second_run_is_served_by_the_child_started_after_the_first(cpu_task):
    pool = WarmPool()
    try:
        first = run_harness(cpu_task, scenarios=ONE, pool=pool)
        assert first["status"] == "correct", first["message"]
        assert "warm_start" not in first["timings"]  # nothing was pre-started before the first run
        waiting = pool.idle_pid
        assert waiting is not None and not gone(waiting)
        second = run_harness(cpu_task, scenarios=ONE, pool=pool)
        assert second["status"] == "correct", second["message"]
        assert second["timings"]["warm_start"] is True
        assert second["timings"]["warm_pid"] == waiting  # the child pre-started after the first run
        assert wait_gone(waiting)  # one run per process: it is not reused
        assert second["seed"] != first["seed"]  # fresh inputs still
        assert pool.idle_pid not in (None, waiting)  # and the next one is already on its way
    finally:
        pool.close()


@pytest.mark.slow
def test_a_crash_does_not_poison_the_next_run_and_close_leaves_nothing(cpu_task, planted_dir):
    pool = WarmPool()
    try:
        crashed = run_harness(cpu_task, planted_dir / "segfault.cpp", scenarios=ONE, pool=pool)
        assert crashed["status"] == "crashed"
        ok = run_harness(cpu_task, scenarios=ONE, pool=pool)
        assert ok["timings"]["warm_start"] is True
        assert ok["status"] == "correct", ok["message"]
        last = pool.idle_pid
    finally:
        pool.close()
    assert last is not None and wait_gone(last)
    assert pool.idle_pid is None


@pytest.mark.slow
def test_a_child_made_under_another_environment_is_not_used(cpu_task, monkeypatch):
    pool = WarmPool()
    try:
        run_harness(cpu_task, scenarios=ONE, pool=pool)
        stale = pool.idle_pid
        monkeypatch.setenv("KS_THREADS", "1")  # the run's environment changed: that child was made for another
        r = run_harness(cpu_task, scenarios=ONE, pool=pool)
        assert "warm_start" not in r["timings"]
        assert wait_gone(stale)
    finally:
        pool.close()


def test_the_waiting_child_dies_with_its_parent(cpu_task, tmp_path):
    # A parent killed with SIGKILL runs no atexit: the child sees its stdin end and exits.
    script = textwrap.dedent(f"""
        import time
        from ks_tui.harness.warm import WarmPool
        pool = WarmPool()
        pool.prime({str(cpu_task.dir)!r})
        print(pool.idle_pid, flush=True)
        time.sleep(600)
    """)
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                              env=dict(os.environ))
    child = int(parent.stdout.readline())
    parent.kill()
    parent.wait()
    assert wait_gone(child, timeout=60)
