"""Fixtures shared by the agent and screen tests (tests/support/ holds the pieces)."""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import shutil
import sys
from pathlib import Path

import pytest

# Python's bytecode caches (__pycache__, git-ignored) for the suite and the `ks` children it starts, also where
# PYTHONDONTWRITEBYTECODE is set: every worker would otherwise compile the test modules (assertion rewriting) and
# ks_tui again at each start, and each of the hundreds of child processes its part of ks_tui.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# No standby harness server (harness/standby.py) outlives a test's `ks bench`: tests/harness/test_standby.py turns
# it on where it is the subject.
os.environ["KS_STANDBY"] = "0"

from tests.support.fake_messages_api import FakeMessagesAPI
from tests.support.workspace import GIT_IDENTITY, HOST_VARS, make_workspace


def pytest_xdist_auto_num_workers(config) -> int:
    """One worker more than the cores: much of a test's time is spent waiting on its child processes (a harness
    child starting, a planted hang timing out, a server coming up), which the extra worker fills. On a machine with
    an NVIDIA device, none: the `gpu` tests time kernels and need the device to themselves."""
    if Path("/dev/nvidiactl").exists() or shutil.which("nvidia-smi"):
        return 0
    return (os.cpu_count() or 1) + 1


def pytest_unconfigure(config) -> None:
    """An xdist worker, once its session has ended and its last report is sent, exits without the interpreter's
    teardown: freeing the modules and objects of hundreds of tests (torch, textual, the SDKs) took seconds at
    the end of every run, with the controller waiting on the last worker. Registered last, this runs first of
    the exit handlers, after the threads have been joined."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        atexit.register(_exit_now)


def _exit_now() -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def run_wide_dir(tmp_path_factory, name: str) -> Path:
    """A folder under this run's temporary root, shared by every xdist worker of the run (each worker has a
    base folder of its own below that root): a build cache kept there is filled once, not once per worker.
    Only for what the product already shares safely between processes (the build cache publishes atomically)."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    path = root / name
    path.mkdir(exist_ok=True)
    return path


@contextlib.contextmanager
def run_wide_lock(tmp_path_factory, name: str):
    """Held by one worker of this run at a time: a second test that builds what a first one is building waits for
    it and then finds the build in the run-wide cache (an nvcc build is seconds of CPU on a machine of 2 cores)."""
    with open(run_wide_dir(tmp_path_factory, "locks") / f"{name}.lock", "w") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        yield


@pytest.fixture
def base_env(monkeypatch, tmp_path):
    """A fixed git identity, no user config, no API key (human mode), no workspace from the
    environment. Returns the monkeypatch, for more settings."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    for name, value in GIT_IDENTITY.items():
        monkeypatch.setenv(name, value)
    for name in HOST_VARS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.fixture
def workspace(base_env, tmp_path) -> Path:
    return make_workspace(tmp_path)


@pytest.fixture
def fake_api(base_env):
    """`fake_api(script)` starts the scripted Messages API on 127.0.0.1 and points the real
    SDK at it with a key (agent mode); turn retries wait almost nothing."""
    servers: list[FakeMessagesAPI] = []

    def start(script, **kw) -> FakeMessagesAPI:
        api = FakeMessagesAPI(script, **kw)
        api.start()
        servers.append(api)
        base_env.setenv("ANTHROPIC_BASE_URL", api.url)
        base_env.setenv("ANTHROPIC_API_KEY", "sk-test-key")
        base_env.setenv("KS_API_MAX_RETRIES", "2")
        base_env.setenv("KS_TURN_RETRY_DELAY", "0.01")
        base_env.setenv("KS_MODEL", "claude-opus-4-6")
        return api

    yield start
    for api in servers:
        api.close()
