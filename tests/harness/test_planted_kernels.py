"""Planted kernels against attention_cpu through the real child process: each gets its verdict."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from ks_tui.harness.client import run_harness
from tests.support.processes import wait_gone

# A subset that covers GQA, odd lengths, causal with s_q < s_k and s_q > s_k.
SUBSET = ["d48-h8-2-q77-k301-b1-causal", "d16-h4-4-q200-k50-b1-causal", "d24-h2-1-q31-k45-b4"]


def check(task, planted_dir, kind, **kw):
    kw.setdefault("scenarios", SUBSET)
    return run_harness(task, planted_dir / f"{kind}.cpp", **kw)


@pytest.fixture(scope="module")
def verdict(cpu_task, planted_dir):
    """verdict(kind): one run of the planted kernel on SUBSET, made once for this module's tests that only read
    its result (each child run costs seconds: a Python start and the torch import)."""
    runs: dict[str, dict] = {}

    def get(kind: str) -> dict:
        if kind not in runs:
            runs[kind] = check(cpu_task, planted_dir, kind)
        return runs[kind]

    return get


def test_seed_kernel_passes_every_quick_scenario(cpu_task):
    r = run_harness(cpu_task, quick=True)
    assert r["status"] == "correct", r["message"]
    assert r["correct"] == f"{len(cpu_task.quick)}/{len(cpu_task.quick)}"
    assert r["selection"] is None  # the quick subset is the task's, not a --scenarios pick
    assert all(s["draws"] >= 2 for s in r["scenarios"])
    assert isinstance(r["seed"], int)


def test_honest_naive_accumulation_passes(verdict):
    r = verdict("naive")
    assert r["status"] == "correct", r["message"]
    for s in r["scenarios"]:
        assert s["error"]["max_abs"] <= s["error"]["bound"]
    assert not [w for w in r["warnings"] if "process" in w]  # an honest run warns of no leftover process


@pytest.mark.slow
def test_each_run_draws_a_new_seed(cpu_task, planted_dir, verdict):
    a = verdict("naive")
    b = check(cpu_task, planted_dir, "naive", scenarios=SUBSET[:1])
    assert a["seed"] != b["seed"]


@pytest.mark.slow
def test_a_seed_reproduces_a_scenarios_inputs_whatever_else_runs(cpu_task, planted_dir):
    # The naive kernel is deterministic, so equal errors mean equal inputs.
    both = check(cpu_task, planted_dir, "naive", seed=1234)
    alone = check(cpu_task, planted_dir, "naive", seed=1234, scenarios=SUBSET[2:])
    other = check(cpu_task, planted_dir, "naive", seed=1235, scenarios=SUBSET[2:])
    assert alone["scenarios"][0]["error"] == both["scenarios"][2]["error"]
    assert other["scenarios"][0]["error"]["max_abs"] != alone["scenarios"][0]["error"]["max_abs"]


@pytest.mark.slow
def test_kernel_output_is_drained_kept_apart_and_cut(cpu_task, planted_dir):
    seen = []
    r = check(cpu_task, planted_dir, "chatty", scenarios=SUBSET[2:], on_progress=seen.append)
    assert r["status"] == "correct", r["message"]
    assert '{"partial": 5}' in r["stderr_tail"]  # look-alike JSON is kernel output, not a message
    assert "xxxx" in r["stderr_tail"]
    assert max(len(line) for line in r["stderr_tail"].splitlines()) <= 2000
    assert seen[-1]["phase"] == "check" and seen[-1]["done"] == 1  # the watcher lived to the end


@pytest.mark.parametrize("kind, needle", [
    ("zeros", "max|err|"),
    ("skip_row", "NaN/Inf"),
    ("no_causal", "max|err|"),
    ("bf16_math", "max|err|"),
    ("writes_input", "wrote into its input 'q'"),
    ("refuses_gqa", "kernel returned 3"),
    ("cache_by_pointer", "max|err|"),
])
def test_wrong_kernels_are_incorrect(verdict, kind, needle):
    r = verdict(kind)
    assert r["status"] == "incorrect"
    bad = [s for s in r["scenarios"] if not s["ok"]]
    assert bad, "some scenario must fail"
    assert needle in bad[0]["error"]["what"]
    assert bad[0]["id"] in r["message"]


def test_ignored_mask_fails_only_causal_scenarios(verdict):
    r = verdict("no_causal")
    verdict = {s["id"]: s["ok"] for s in r["scenarios"]}
    assert verdict == {SUBSET[0]: False, SUBSET[1]: False, SUBSET[2]: True}


def test_bf16_error_is_reported_with_its_size(verdict):
    r = verdict("bf16_math")
    for s in r["scenarios"]:
        assert not s["ok"]
        # Rounded to 8 mantissa bits: far beyond the fp32 bound, far below a wrong answer.
        assert s["error"]["bound"] < s["error"]["max_abs"] < 0.5


@pytest.mark.slow
def test_caching_after_warm_up_is_caught_by_the_recheck_after_timing(cpu_task, planted_dir):
    one = [SUBSET[2]]
    checked = check(cpu_task, planted_dir, "cache_after_warmup", scenarios=one)
    assert checked["status"] == "correct", "two honest calls per buffer pass the check"
    benched = check(cpu_task, planted_dir, "cache_after_warmup", scenarios=one, mode="bench")
    assert benched["status"] == "incorrect"
    assert "re-check after timing" in benched["scenarios"][0]["error"]["what"]


@pytest.mark.parametrize("kind, signal_name", [("segfault", "SIGSEGV"), ("abort", "SIGABRT")])
def test_crashing_kernels_are_crashed_with_stderr(verdict, kind, signal_name):
    r = verdict(kind)
    assert r["status"] == "crashed"
    assert signal_name in r["message"]
    assert "during check of" in r["message"]
    assert "Fatal Python error" in r["stderr_tail"]  # faulthandler's report from the child
    assert r["compile"]["ok"] is True


@pytest.mark.slow
def test_infinite_loop_times_out_and_the_whole_group_dies(cpu_task, planted_dir, tmp_path, monkeypatch):
    pid_file = tmp_path / "pids"
    monkeypatch.setenv("KS_TEST_PID_FILE", str(pid_file))
    monkeypatch.setenv("KS_SANDBOX", "off")  # the kernel writes its host pids to a file outside
    r = check(cpu_task, planted_dir, "infinite_loop", scenarios=SUBSET[:1], timeout=8)
    assert r["status"] == "timeout"
    assert "killed after 8s" in r["message"]
    pids = pid_file.read_text().split() if pid_file.exists() else []
    if len(pids) == 2:  # the kernel was reached (the usual case): it and its fork are gone
        child, grandchild = (int(x) for x in pids)
        assert wait_gone(child) and wait_gone(grandchild)
        assert "during check of" in r["message"]


def test_cancel_stops_a_running_kernel(cpu_task, planted_dir, tmp_path, monkeypatch):
    pid_file = tmp_path / "pids"
    monkeypatch.setenv("KS_TEST_PID_FILE", str(pid_file))
    monkeypatch.setenv("KS_SANDBOX", "off")  # the kernel writes its host pids to a file outside
    cancel = threading.Event()
    seen = []

    def on_progress(p):
        seen.append(p)
        if p.get("phase") == "check" and p.get("scenario"):
            # Cancel once the kernel is really running (it wrote its pid file).
            threading.Thread(target=lambda: (_wait_for(pid_file), cancel.set()), daemon=True).start()

    r = check(cpu_task, planted_dir, "infinite_loop", scenarios=SUBSET[:1], timeout=200,
              cancel=cancel, on_progress=on_progress)
    assert r["status"] == "cancelled"
    assert any(p.get("phase") == "compile" for p in seen)
    child, grandchild = (int(x) for x in pid_file.read_text().split())
    assert wait_gone(child) and wait_gone(grandchild)


@pytest.mark.parametrize("kind", ["leaves_process", "escapes_session"])
def test_a_process_the_kernel_leaves_running_is_killed_and_named(cpu_task, planted_dir, tmp_path, monkeypatch, kind):
    """A fork that outlives a run that ended normally, in the child's group or out of it by setsid(): the verdict
    stands (the kernel is honest), the fork is dead when run_harness returns, and a warning names it."""
    pid_file = tmp_path / "pid"
    monkeypatch.setenv("KS_TEST_PID_FILE", str(pid_file))
    monkeypatch.setenv("KS_SANDBOX", "off")  # the kernel writes its host pids to a file outside
    r = check(cpu_task, planted_dir, kind, scenarios=SUBSET[:1])
    assert r["status"] == "correct", r["message"]
    fork = int(pid_file.read_text())
    assert wait_gone(fork)
    assert [w for w in r["warnings"] if f"pid {fork}" in w and "killed" in w], r["warnings"]


@pytest.mark.slow
def test_an_interrupted_run_leaves_no_fork_running(cpu_task, planted_dir, tmp_path, monkeypatch):
    """Ctrl-C in ks while the kernel spins, after it forked a process that left the group by setsid(): the
    interrupt propagates, and the fork is gone too, not only the child's group."""
    import signal

    pid_file = tmp_path / "pid"
    monkeypatch.setenv("KS_TEST_PID_FILE", str(pid_file))
    monkeypatch.setenv("KS_SANDBOX", "off")  # the kernel writes its host pids to a file outside

    def interrupt_once_forked(signum, frame):
        if pid_file.exists() and pid_file.read_text().strip():
            signal.setitimer(signal.ITIMER_REAL, 0)
            raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt_once_forked)
    signal.setitimer(signal.ITIMER_REAL, 0.2, 0.2)
    try:
        with pytest.raises(KeyboardInterrupt):
            check(cpu_task, planted_dir, "escapes_then_hangs", scenarios=SUBSET[:1], timeout=100)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert wait_gone(int(pid_file.read_text()))


def _wait_for(path: Path) -> None:
    while not (path.exists() and path.read_text().strip().count(" ") == 1):
        time.sleep(0.05)


FAULTY_REFERENCE = '''
from ks_tui.tasklib.attention.helpers import CPU_BASELINES as BASELINES
from ks_tui.tasklib.attention.helpers import make_inputs, make_output, call_cpu as call_kernel


def reference(inputs, p):  # stands in for torch failing after the call, as after a CUDA fault
    raise RuntimeError("CUDA error: an illegal memory access was encountered")
'''


def test_an_error_raised_after_the_kernel_call_is_a_crash_that_says_where(tmp_path):
    import shutil

    from ks_tui.task import load_task
    from tests.harness.conftest import CPU_TASK_DIR

    task_dir = tmp_path / "attention_cpu"
    shutil.copytree(CPU_TASK_DIR, task_dir, ignore=shutil.ignore_patterns("results"))
    (task_dir / "reference.py").write_text(FAULTY_REFERENCE)
    task = load_task(task_dir, tmp_path)
    r = run_harness(task, scenarios=SUBSET[:2])
    assert r["status"] == "crashed"
    assert r["message"] == (f"RuntimeError during check of {SUBSET[0]}: "
                            "CUDA error: an illegal memory access was encountered")
    assert r["correct"] == "0/2"
    assert "Traceback" in r["stderr_tail"]
