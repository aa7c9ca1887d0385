"""check / bench / compare over real Dask clusters: a local `--workers 2`, a scheduler and workers
started as their own processes (`--cluster`), a worker killed or stopped mid-run, and a
scheduler nobody answers at."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from ks_tui.cluster import ClusterSpec
from ks_tui.errors import KsError
from tests.cluster.conftest import QUICK, REPO, free_port

TWO = ["d24-h2-1-q31-k45-b4", "d16-h4-4-q200-k50-b1-causal"]


def run_ks(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ks_tui", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO, env=dict(os.environ))


def _verdicts(result: dict) -> list[tuple]:
    """What must not depend on where a run ran: the ids, their verdicts and error measures."""
    return [(s["id"], s["ok"], s["error"]["max_abs"], s["error"]["bound"], s["draws"]) for s in result["scenarios"]]


@pytest.mark.slow
def test_local_workers_2_gives_the_single_machine_result():
    single = run_ks("check", "attention_cpu", "--quick", "--json", "--seed", "7")
    spread = run_ks("check", "attention_cpu", "--quick", "--json", "--seed", "7", "--workers", "2")
    assert single.returncode == 0 and spread.returncode == 0, spread.stderr
    one, two = json.loads(single.stdout), json.loads(spread.stdout)
    assert two["status"] == "correct" and two["correct"] == "4/4"
    # The same seed draws the same inputs on any worker: identical ids, verdicts and errors.
    assert _verdicts(two) == _verdicts(one)
    assert [s["id"] for s in two["scenarios"]] == QUICK
    addresses = {w["address"] for w in two["workers"]}
    assert len(addresses) == 2 and {s["worker"] for s in two["scenarios"]} == addresses
    assert all(w["device"] == one["device"] for w in two["workers"])
    assert two["cluster"]["workers"] == 2 and len(two["cluster"]["compiled_on"]) == 1  # one build, shipped
    assert two["kernel_sha256"] == one["kernel_sha256"] and two["seed"] == 7


@pytest.mark.slow
def test_bench_over_a_running_scheduler(external, cpu_task):
    from ks_tui.cluster.cli import summary_lines

    res = run_ks("bench", "attention_cpu", "--scenarios", *TWO, "--cluster", external.address, "--json")
    assert res.returncode == 0, res.stderr
    r = json.loads(res.stdout)
    assert r["status"] == "correct" and [s["id"] for s in r["scenarios"]] == [s.id for s in cpu_task.select(ids=TWO)]
    assert all(w in summary_lines(r) for w in external.workers)  # the workers under the table
    for s in r["scenarios"]:
        # each speedup is the ratio of two times taken on the worker that ran the scenario
        assert s["worker"] in external.workers and s["speedup"] == s["baselines"]["torch_sdpa"] / s["time_ms"]
    assert sorted(w["address"] for w in r["workers"]) == sorted(external.workers)
    assert "geomean_by_device" not in r  # one device kind


@pytest.mark.slow
def test_a_worker_killed_mid_run_has_its_shard_run_elsewhere(external, victim, cpu_task):
    from ks_tui.cluster.run import run_sharded

    from ks_tui.cluster.cli import WorkerProgress

    killed, lines = [], io.StringIO()
    show = WorkerProgress(lines)

    def on_event(msg: dict) -> None:
        show(msg)
        if msg.get("event") == "start" and msg.get("worker") == victim.address and not killed:
            os.kill(victim.proc.pid, signal.SIGKILL)
            killed.append(msg["job"])

    r = run_sharded(cpu_task, None, ClusterSpec(address=external.address), mode="check", quick=True, seed=11,
                    on_event=on_event)
    assert killed, "the victim worker never started a job"
    assert r["status"] == "correct" and r["correct"] == "4/4"
    assert [s["id"] for s in r["scenarios"]] == QUICK
    assert all(s["worker"] in external.workers for s in r["scenarios"])  # none from the dead worker
    assert f"[worker {victim.address}] shard" in lines.getvalue()  # per-worker progress lines
    assert any(f"[worker {w}] shard" in lines.getvalue() for w in external.workers)


@pytest.mark.slow
def test_a_hung_worker_has_its_shard_rerun(external, victim, cpu_task):
    from ks_tui.cluster.run import run_sharded

    stopped = []

    def on_event(msg: dict) -> None:
        if msg.get("event") == "start" and msg.get("worker") == victim.address and not stopped:
            os.kill(victim.proc.pid, signal.SIGSTOP)
            stopped.append(msg["job"])

    r = run_sharded(cpu_task, None, ClusterSpec(address=external.address), mode="check", quick=True, seed=12,
                    on_event=on_event, hang_s=15)
    assert stopped
    assert r["status"] == "correct" and [s["id"] for s in r["scenarios"]] == QUICK
    assert victim.address in [x["from"] for x in r["cluster"]["reruns"]]
    assert all(s["worker"] != victim.address for s in r["scenarios"])


@pytest.mark.slow
def test_a_hang_with_no_other_worker_fails_naming_it(external, victim, cpu_task):
    from ks_tui.cluster.connect import Cluster
    from ks_tui.cluster.jobs import Job, JobRunner

    def on_event(msg: dict) -> None:
        if msg.get("event") == "start" and msg.get("worker") == victim.address:
            os.kill(victim.proc.pid, signal.SIGSTOP)

    with Cluster(ClusterSpec(address=external.address), "cpu") as cl:
        runner = JobRunner(cl, cpu_task, {"mode": "check", "quick": False, "timeout": 60, "seed": 1,
                                          "cached_baselines": False}, on_event, hang_s=4)
        runner.hung.update(external.workers)  # as if the others had hung before: none is left to take it
        job = Job("j", "shard 1/1 (1 scenarios)", cpu_task.kernel.read_bytes(), [TWO[0]], 1, victim.address)
        t0 = time.monotonic()
        with pytest.raises(KsError) as err:
            runner.run([job])
    assert time.monotonic() - t0 < 60
    msg = err.value.message
    assert f"worker {victim.address} did not finish shard 1/1" in msg and "nothing recorded" in msg
    assert "\n" not in msg


def test_a_worker_that_does_not_answer_is_left_out(external, victim, cpu_task):
    from ks_tui.cluster.connect import Cluster
    from ks_tui.cluster.jobs import JobRunner

    os.kill(victim.proc.pid, signal.SIGSTOP)
    with Cluster(ClusterSpec(address=external.address), "cpu") as cl:
        runner = JobRunner(cl, cpu_task, {"mode": "check", "quick": True, "timeout": 60, "seed": 1,
                                          "cached_baselines": False})
        runner.identify_s = 3
        assert runner.prepare() == sorted(external.workers)
    assert runner.stats.unresponsive == [victim.address]


@pytest.mark.slow
def test_unreachable_scheduler_is_one_line_exit_2():
    port = free_port()
    t0 = time.monotonic()
    out = run_ks("check", "attention_cpu", "--quick", "--cluster", f"tcp://127.0.0.1:{port}")
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        f"ks: error: cannot reach the Dask scheduler at tcp://127.0.0.1:{port}: no answer within 3s"]
    assert out.stdout == "" and time.monotonic() - t0 < 60


@pytest.mark.slow
def test_compare_runs_the_candidates_side_by_side(external, tmp_path):
    slow = tmp_path / "copy.cpp"
    slow.write_bytes((REPO / "kernels" / "attention_cpu" / "kernel.cpp").read_bytes())
    out = run_ks("compare", "attention_cpu", f"a={REPO / 'kernels' / 'attention_cpu' / 'kernel.cpp'}",
                 f"b={slow}", "--scenarios", TWO[0], "--cluster", external.address, "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    runs = [c["runs"][0] for c in doc["candidates"]]
    assert [r["status"] for r in runs] == ["correct", "correct"]
    assert {r["worker"] for r in runs} == set(external.workers)  # one candidate per worker, at once
    assert runs[0]["seed"] == runs[1]["seed"]  # the same inputs for both
    assert not any(r.get("pair") for r in runs)  # different devices make no same-call pair


def test_bad_cluster_options_are_one_line_exit_2():
    for args in (["--workers", "0"], ["--workers", "lots"], ["--workers", "2", "--cluster", "tcp://x:1"]):
        out = run_ks("check", "attention_cpu", "--quick", *args)
        assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, (args, out.stderr)


def test_the_single_machine_path_imports_no_dask():
    code = ("import sys\nfrom ks_tui.cli import build_parser\nfrom ks_tui.commands.harness_cmds import cluster_spec\n"
            "a = build_parser().parse_args(['check', 'attention_cpu'])\nassert cluster_spec(a) is None\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                         env={k: v for k, v in os.environ.items() if k != "KS_CLUSTER"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.slow
def test_a_cancelled_cluster_run_comes_back_cancelled(external, cpu_task):
    import threading

    from ks_tui.cluster.run import run_sharded

    cancel = threading.Event()

    def on_event(msg: dict) -> None:
        if msg.get("event") == "start":
            cancel.set()

    t0 = time.monotonic()
    r = run_sharded(cpu_task, None, ClusterSpec(address=external.address), mode="check", quick=True,
                    on_event=on_event, cancel=cancel)
    assert r["status"] == "cancelled" and r["scenarios"] == [] and r["correct"] == "0/4"
    assert time.monotonic() - t0 < 60
    # A worker's thread finishes the job it had begun: wait for that, so later runs find it free.
    from distributed import Client

    with Client(external.address, timeout=20, set_as_default=False) as c:
        deadline = time.monotonic() + 120
        while any(c.run(lambda dask_worker: len(dask_worker.active_threads)).values()) and \
                time.monotonic() < deadline:
            time.sleep(0.5)
