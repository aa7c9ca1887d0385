"""Real Dask clusters on this machine: a scheduler and two workers started as separate
processes (shared by this folder's tests), and a third worker that a test may kill or stop."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import run_wide_dir
from tests.support.processes import wait_gone

REPO = Path(__file__).resolve().parents[2]
QUICK = ["d64-h4-4-q128-k128-b2", "d48-h8-2-q77-k301-b1-causal", "d16-h4-4-q200-k50-b1-causal",
         "d24-h2-1-q31-k45-b4"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def cluster_cache(tmp_path_factory) -> Path:
    return run_wide_dir(tmp_path_factory, "ks-cluster-cache")


@pytest.fixture(autouse=True)
def _private_cache(cluster_cache, monkeypatch):
    # The client, the workers and their harness children share one private build cache.
    monkeypatch.setenv("KS_CACHE_DIR", str(cluster_cache))
    monkeypatch.delenv("KS_CLUSTER", raising=False)


@pytest.fixture(scope="session")
def cpu_task():
    from ks_tui.task import load_task

    return load_task(REPO / "kernels" / "attention_cpu", REPO)


def _env(cache: Path) -> dict:
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "KS_CACHE_DIR": str(cache)}


def start_worker(address: str, cache: Path, name: str) -> subprocess.Popen:
    # No nanny: the process started here is the worker, so a test can kill or stop exactly it.
    return subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "1",
                             "--no-nanny", "--host", "127.0.0.1", "--no-dashboard", "--memory-limit", "0",
                             "--name", name], env=_env(cache), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)


def wait_workers(address: str, n: int, timeout: float = 90) -> list[str]:
    """The scheduler's worker addresses once it has exactly n."""
    from distributed import Client

    deadline = time.monotonic() + timeout
    with Client(address, timeout=20, set_as_default=False) as c:
        while time.monotonic() < deadline:
            workers = sorted(c.scheduler_info(n_workers=-1)["workers"])
            if len(workers) == n:
                return workers
            time.sleep(0.2)
    raise AssertionError(f"the scheduler at {address} did not reach {n} workers in {timeout}s")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            os.kill(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait(timeout=30)


@dataclass
class External:
    address: str
    workers: list[str]
    cache: Path


@pytest.fixture(scope="session")
def external(cluster_cache):
    """`python -m distributed.cli.dask_scheduler` and two `dask_worker` processes."""
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                               "--port", str(port), "--dashboard-address", "127.0.0.1:0", "--no-show"],
                              env=_env(cluster_cache), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)]
    try:
        procs += [start_worker(address, cluster_cache, f"w{i}") for i in range(2)]
        workers = wait_workers(address, 2)
        yield External(address, workers, cluster_cache)
    finally:
        for p in reversed(procs):
            stop(p)


@dataclass
class Victim:
    proc: subprocess.Popen
    address: str


@pytest.fixture
def victim(external):
    """A third worker on the shared scheduler, for a test to kill or stop; gone afterwards."""
    proc = start_worker(external.address, external.cache, "victim")
    try:
        workers = wait_workers(external.address, 3)
        (address,) = set(workers) - set(external.workers)
        yield Victim(proc, address)
    finally:
        try:
            os.kill(proc.pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
        stop(proc)
        assert wait_gone(proc.pid)
        wait_workers(external.address, 2)
