"""Input the session 22 audit used to break the harness and the CLI: a kernel that forges its
result, a source that is not UTF-8, a task whose reference fails, empty or NaN options, and
SIGTERM in the middle of a run. Real child processes, real g++."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from ks_tui.harness.client import run_harness
from tests.harness.conftest import REPO, run_ks
from tests.harness.test_task_loader import task_copy  # noqa: F401 - a fixture

ONE = ["d24-h2-1-q31-k45-b4"]


@pytest.mark.slow
def test_a_kernel_that_writes_its_own_verdict_is_not_believed(cpu_task, planted_dir):
    r = run_harness(cpu_task, planted_dir / "forges_result.cpp", mode="bench", quick=True)
    assert r["status"] == "crashed" and r["geomean_speedup"] is None
    assert r["message"].startswith("result refused: the result does not hold the scenarios")
    out = run_ks("bench", "attention_cpu", "--quick", "--source", str(planted_dir / "forges_result.cpp"))
    assert out.returncode == 1 and "9.9" not in out.stdout and "result refused" in out.stdout


def test_a_kernel_that_claims_bad_task_input_is_a_crash_not_exit_2(cpu_task, planted_dir):
    out = run_ks("check", "attention_cpu", "--scenarios", *ONE, "--source", str(planted_dir / "fakes_bad_input.cpp"))
    assert out.returncode == 1, out.stderr
    assert "status crashed" in out.stdout and "exit code 2" in out.stdout
    assert "ks: error: the task is broken" not in out.stderr


def test_a_source_that_is_not_utf8_is_a_compile_error_with_the_compilers_words(cpu_task, tmp_path):
    src = tmp_path / "latin1.cpp"
    src.write_bytes(b"int x = caf\xe9;\n" + cpu_task.kernel.read_bytes())
    r = run_harness(cpu_task, src, scenarios=ONE)
    assert r["status"] == "compile_error", r.get("message")
    assert "error" in r["compile"]["log"] and "Traceback" not in r["stderr_tail"]


def test_a_reference_that_fails_on_a_scenario_is_bad_task_input_not_a_kernel_crash(task_copy):  # noqa: F811
    # The task's own code raises on one shape (as a reference with a bug would).
    with open(task_copy / "reference.py", "a") as f:
        f.write("\n_make = make_inputs\n\n"
                "def make_inputs(p, gen, device):\n"
                "    if p['d'] == 24:\n"
                "        raise ValueError('no inputs for d=24')\n"
                "    return _make(p, gen, device)\n")
    out = run_ks("check", str(task_copy), "--scenarios", ONE[0])
    assert out.returncode == 2, out.stdout + out.stderr
    assert f"reference.py: make_inputs failed on scenario {ONE[0]}" in out.stderr
    assert "ValueError: no inputs for d=24" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize("args, words", [
    (["--scenarios", ""], "--scenarios names no scenario"),
    (["--scenarios", ","], "--scenarios names no scenario"),
    (["--timeout", "nan"], "--timeout must be a positive number"),
    (["--source", "/nonexistent/kernel.cpp"], "kernel source not found"),
])
def test_empty_or_nan_options_are_bad_usage_and_json_still_gets_one_document(args, words):
    for json_flag in ([], ["--json"]):
        out = run_ks("check", "attention_cpu", *args, *json_flag)
        assert out.returncode == 2 and words in out.stderr and "Traceback" not in out.stderr
        if json_flag:
            doc = json.loads(out.stdout)
            assert words in doc["error"] and doc["exit_code"] == 2
        else:
            assert out.stdout == ""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_or_sighup_during_a_check_kills_the_kernel_and_removes_the_scratch_folder(planted_dir, tmp_path, sig):
    pid_file, scratch = tmp_path / "pids", tmp_path / "tmp"
    scratch.mkdir()
    child = subprocess.Popen([sys.executable, "-m", "ks_tui", "check", "attention_cpu", "--scenarios", *ONE,
                              "--source", str(planted_dir / "infinite_loop.cpp"), "--timeout", "300"],
                             cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                             env={**os.environ, "KS_SANDBOX": "off", "KS_TEST_PID_FILE": str(pid_file),
                                  "TMPDIR": str(scratch)})
    deadline = time.monotonic() + 120
    while not (pid_file.is_file() and len(pid_file.read_text().split()) == 2):
        assert time.monotonic() < deadline and child.poll() is None, "the kernel never started"
        time.sleep(0.1)
    pids = [int(x) for x in pid_file.read_text().split()]
    child.send_signal(sig)
    child.communicate(timeout=60)
    assert child.returncode == 128 + sig
    deadline = time.monotonic() + 15
    alive = pids
    while alive and time.monotonic() < deadline:
        alive = [p for p in pids if _alive(p)]
        time.sleep(0.1)
    for p in alive:  # no orphan outlives a failed test
        os.kill(p, signal.SIGKILL)
    assert not alive, "the kernel or its child outlived ks"
    assert not list(scratch.glob("ks-harness-*")), "the harness's scratch folder was left behind"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (killed, not yet reaped by init) counts as gone.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_an_empty_workspace_name_is_refused(tmp_path):
    out = run_ks("init", "", cwd=tmp_path)
    assert out.returncode == 2 and "ks init needs a folder name" in out.stderr
    assert list(tmp_path.iterdir()) == []  # the current folder did not become a workspace


@pytest.mark.parametrize("args, words", [
    (["--rounds", "99999999999999999999"], "--rounds must be between 1 and 1000"),
    (["--by", ","], "--by names no parameter"),
])
def test_compare_refuses_a_huge_round_count_and_an_empty_grouping(cpu_task, args, words):
    kernel = str(cpu_task.kernel)
    out = run_ks("compare", "attention_cpu", f"a={kernel}", f"b={kernel}", "--scenarios", *ONE, *args)
    assert out.returncode == 2 and words in out.stderr and "Traceback" not in out.stderr


def test_the_agent_started_inside_a_session_worktree_uses_the_main_workspace(tmp_path):
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@x", "ANTHROPIC_API_KEY": ""}
    assert run_ks("init", str(tmp_path / "ws"), env=env).returncode == 0
    ws = tmp_path / "ws"
    sid = run_ks("session", "new", "attention_cpu", cwd=ws, env=env).stdout.strip()
    (ws / ".ks").mkdir()
    (ws / ".ks" / "config.toml").write_text("bogus = 1\n")  # the main workspace's config: read, and refused
    out = run_ks("run", "--session", sid, "--headless", cwd=ws / "sessions" / sid / "worktree", env=env)
    assert out.returncode == 2 and f"{ws / '.ks' / 'config.toml'}" in out.stderr and "unknown setting 'bogus'" in out.stderr


def test_outside_any_workspace_session_commands_are_refused_and_the_bundled_tasks_stay_readable(tmp_path):
    def branches() -> set[str]:
        out = subprocess.run(["git", "branch", "--list", "ks/*", "--format=%(refname:short)"], cwd=REPO,
                             capture_output=True, text=True).stdout
        return set(out.split())

    before = branches()
    env = {"KS_WORKSPACE": "", "ANTHROPIC_API_KEY": ""}
    try:
        for cmd in (["session", "new", "attention_cpu"], ["run", "attention_cpu", "--headless"], ["tui"], ["sessions"]):
            out = run_ks(*cmd, cwd=tmp_path, env=env)
            assert out.returncode == 2 and "no KernelSeek workspace at or above" in out.stderr, (cmd, out.stderr)
    finally:  # had one been made in the checkout the tests run from, take it away again
        for branch in branches() - before:
            sid = branch.split("/")[-1]
            subprocess.run(["git", "worktree", "remove", "--force", f"sessions/{sid}/worktree"], cwd=REPO)
            subprocess.run(["git", "branch", "-D", branch], cwd=REPO, capture_output=True)
            shutil.rmtree(REPO / "sessions" / sid, ignore_errors=True)
    assert branches() == before
    assert run_ks("check", "attention_cpu", "--scenarios", *ONE, cwd=tmp_path, env=env).returncode == 0
