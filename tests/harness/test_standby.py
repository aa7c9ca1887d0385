"""The standby server (harness/standby.py): one-shot `ks bench` commands, real processes, a real Unix socket."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.harness.conftest import CPU_TASK_DIR, REPO, active_sandbox, run_ks, started_inside
from tests.support.processes import wait_gone

ONE = "d24-h2-1-q31-k45-b4"


@pytest.fixture
def standby_env(monkeypatch):
    """Standby on (the suite turns it off), its sockets in a private folder of this test (short: a socket's path
    has 107 bytes at most), no sandbox. The runs' scratch folders go to a private TMPDIR too, so a test can see that
    its own runs left none (another process's leftovers in /tmp are not this test's)."""
    folder = Path(tempfile.mkdtemp(prefix="ks-sb-"))
    scratch = Path(tempfile.mkdtemp(prefix="ks-sbt-"))
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setenv("KS_STANDBY", "1")
    monkeypatch.setenv("KS_STANDBY_DIR", str(folder))
    monkeypatch.setenv("KS_STANDBY_IDLE_S", "120")
    monkeypatch.setenv("KS_SANDBOX", "off")
    monkeypatch.delenv("KS_RUN_MARK", raising=False)
    yield folder
    pids = [s["pid"] for s in _servers()]
    run_ks("standby", "stop")
    for pid in pids:
        if not wait_gone(pid, 20):
            os.kill(pid, signal.SIGKILL)
    shutil.rmtree(folder, ignore_errors=True)
    shutil.rmtree(scratch, ignore_errors=True)


def _scratch_results() -> list[Path]:
    """result.json files left in the runs' scratch folders (standby_env's private TMPDIR)."""
    return list(Path(os.environ["TMPDIR"]).glob("ks-harness-*/result.json"))


def _servers() -> list[dict]:
    got = run_ks("standby", "--json")
    assert got.returncode == 0, got.stderr
    return json.loads(got.stdout)["servers"]


def _bench(*extra: str, task: str = "attention_cpu", env: dict | None = None) -> tuple[dict, str]:
    got = run_ks("bench", task, "--scenarios", ONE, "--json", *extra, env=env)
    assert got.returncode in (0, 1), got.stderr
    return json.loads(got.stdout), got.stderr


def _wait(predicate, timeout: float = 30.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    return predicate()


def test_the_next_command_is_served_by_the_child_the_last_one_left_waiting(standby_env):
    first, said = _bench()
    assert first["status"] == "correct", first["message"]
    assert "warm_start" not in first["timings"]
    assert "now waits 120 s" in said
    live = _wait(_servers)
    assert len(live) == 1 and live[0]["task"] == str(CPU_TASK_DIR) and live[0]["runs"] == 0
    second, said = _bench()
    assert second["status"] == "correct", second["message"]
    assert second["timings"]["warm_start"] is True
    assert second["seed"] != first["seed"]  # fresh inputs, as a cold run draws
    assert "now waits" not in said  # the server was there already
    third, _ = _bench()
    assert third["timings"]["warm_start"] is True and third["timings"]["warm_pid"] != second["timings"]["warm_pid"]
    live = _servers()
    assert live[0]["runs"] == 2 and live[0]["busy"] is False
    assert not _scratch_results()

    stopped = run_ks("standby", "stop")
    assert stopped.returncode == 0 and "asked 1" in stopped.stdout
    assert _wait(lambda: not _servers())
    assert not list(standby_env.glob("*.sock"))


def test_off_by_setting_and_inside_a_run(standby_env):
    result, said = _bench(env={"KS_STANDBY": "0"})
    assert result["status"] == "correct" and "now waits" not in said
    result, said = _bench(env={"KS_RUN_MARK": "outer"})  # an agent's bash command: its sweep would end a server
    assert result["status"] == "correct" and "now waits" not in said
    assert not _servers()


@pytest.mark.slow
def test_other_settings_or_changed_task_files_run_cold_and_replace_the_stale_server(standby_env, tmp_path):
    ws = tmp_path / "ws"
    shutil.copytree(CPU_TASK_DIR, ws / "kernels" / "attention_cpu")
    task = str(ws / "kernels" / "attention_cpu")
    _bench(task=task)
    old = _wait(_servers)[0]["pid"]
    other, _ = _bench(task=task, env={"KS_THREADS": "1"})  # another environment: another key, its own server
    assert "warm_start" not in other["timings"]
    assert _wait(lambda: len(_servers()) == 2)
    ref = Path(task) / "reference.py"
    ref.write_text(ref.read_text() + "\n# edited\n")  # the task's own code changed: the waiting child is stale
    edited, _ = _bench(task=task)
    assert edited["status"] == "correct" and "warm_start" not in edited["timings"]
    assert wait_gone(old, 30)  # replaced; the other environment's server stays
    assert _wait(lambda: len(_servers()) == 2)
    again, _ = _bench(task=task)
    assert again["timings"]["warm_start"] is True


@pytest.mark.slow
def test_a_hung_kernel_in_a_standby_child_is_killed_and_the_server_carries_on(standby_env, planted_dir):
    _bench()
    waiting = _wait(_servers)[0]["child"]
    hung, _ = _bench("--source", str(planted_dir / "infinite_loop.cpp"), "--timeout", "8")
    assert hung["status"] == "timeout", hung["message"]
    assert wait_gone(waiting)  # the waiting child took the job, hung, and its group was killed
    live = _wait(lambda: [s for s in _servers() if s["runs"] == 1 and not s["busy"]])
    assert live and live[0]["child"] not in (None, waiting)  # a fresh one waits
    after, _ = _bench()
    assert after["status"] == "correct" and after["timings"]["warm_start"] is True


def _hanging_command(planted_dir, tmp_path, *extra: str):
    """A server waiting for the key of a run of hangs_on_flag.cpp, then such a run through it, hanging: (the
    server's pid, the command, the kernel's pid, the environment of the key)."""
    flag, pid_file = tmp_path / "hang", tmp_path / "pid"
    hang = {"KS_TEST_HANG_FILE": str(flag), "KS_TEST_PID_FILE": str(pid_file)}  # the key's environment: every run's
    _bench("--source", str(planted_dir / "hangs_on_flag.cpp"), env=hang)  # honest while the flag is absent
    server = _wait(_servers)[0]["pid"]
    flag.touch()
    cmd = subprocess.Popen([sys.executable, "-m", "ks_tui", "bench", "attention_cpu", "--scenarios", ONE,
                            "--source", str(planted_dir / "hangs_on_flag.cpp"), "--json", *extra],
                           cwd=REPO, env={**os.environ, **hang}, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           text=True)
    try:
        assert _wait(pid_file.exists, 60)
        kernel = int(_wait(lambda: pid_file.read_text().strip(), 10))
    except BaseException:
        cmd.kill()
        raise
    flag.unlink()  # the next run is honest again
    return server, cmd, kernel, hang


@pytest.mark.slow
def test_a_command_killed_mid_run_takes_its_kernel_along_and_leaves_the_server_waiting(standby_env, planted_dir,
                                                                                      tmp_path):
    server, cmd, kernel, hang = _hanging_command(planted_dir, tmp_path)
    cmd.kill()  # kill -9: no handler runs in ks
    cmd.wait()
    assert wait_gone(kernel, 20)  # the child saw its stdin end and took its group down
    live = _wait(lambda: [s for s in _servers() if s["runs"] == 1 and not s["busy"]], 30)
    assert live and live[0]["pid"] == server
    after, _ = _bench(env=hang)
    assert after["status"] == "correct" and after["timings"]["warm_start"] is True


@pytest.mark.slow
def test_a_server_that_dies_mid_run_leaves_a_clear_crash_not_a_hang(standby_env, planted_dir, tmp_path):
    server, cmd, kernel, _ = _hanging_command(planted_dir, tmp_path, "--timeout", "60")
    try:
        os.kill(server, signal.SIGKILL)
        assert wait_gone(server)
        os.kill(kernel, signal.SIGKILL)  # the kernel's process ends; nobody is left to report its status
        out, _ = cmd.communicate(timeout=60)
    finally:
        if cmd.poll() is None:
            cmd.kill()
    result = json.loads(out)
    assert result["status"] == "crashed"
    assert any("standby server ended" in w for w in result.get("warnings", [])), result


def test_a_folder_others_can_enter_or_too_long_for_a_socket_is_not_used(monkeypatch):
    from ks_tui.harness import standby

    folder = Path(tempfile.mkdtemp(prefix="ks-sb-"))
    try:
        folder.chmod(0o777)
        monkeypatch.setenv("KS_STANDBY_DIR", str(folder))
        assert standby.folder() is None
        folder.chmod(0o700)
        assert standby.folder() == folder
        deep = folder / ("d" * 80)
        monkeypatch.setenv("KS_STANDBY_DIR", str(deep))
        assert standby.folder() is None
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.slow
def test_ks_try_is_served_by_the_standby_child_of_its_session(standby_env, tmp_path):
    from tests.support.workspace import GIT_IDENTITY

    env = {**GIT_IDENTITY, "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "KS_WORKSPACE": ""}
    assert run_ks("init", str(tmp_path / "ws"), env=env, cwd=tmp_path).returncode == 0
    ws = tmp_path / "ws"
    new = run_ks("session", "new", "attention_cpu", env=env, cwd=ws)
    assert new.returncode == 0, new.stderr
    sid = new.stdout.strip()
    kernel = ws / "sessions" / sid / "worktree" / "kernels" / "attention_cpu" / "kernel.cpp"
    first = run_ks("try", "-s", sid, "--check", "--quick", "--json", env=env, cwd=ws)
    assert first.returncode == 0 and "now waits" in first.stderr, first.stderr
    kernel.write_text(kernel.read_text() + "\n// the next attempt\n")
    second = run_ks("try", "-s", sid, "--check", "--quick", "--json", env=env, cwd=ws)
    assert second.returncode == 0, second.stderr
    result = json.loads(second.stdout)["result"]
    assert result["status"] == "correct" and result["timings"]["warm_start"] is True
    live = _servers()
    assert len(live) == 1 and live[0]["task"] == str(kernel.parent) and live[0]["runs"] == 1


@pytest.mark.slow
def test_under_a_sandbox_the_standby_child_runs_inside_it(standby_env, monkeypatch, planted_dir):
    box = active_sandbox(monkeypatch)
    first, _ = _bench()
    waiting = _wait(_servers)[0]
    assert waiting["box"] == box.mode
    assert started_inside(waiting["child"], box)
    second, _ = _bench()
    assert first["status"] == second["status"] == "correct", second["message"]
    assert second["sandbox"] == box.mode and second["timings"]["warm_start"] is True
    assert not _scratch_results()  # its scratch went with the run
    if box.mode == "bwrap":
        # A source outside the task's workspace is not visible to the waiting child: that run starts cold.
        cold, _ = _bench("--source", str(planted_dir / "naive.cpp"))
        assert cold["status"] == "correct" and "warm_start" not in cold["timings"], cold["message"]
