"""The harness says when the machine was shared while it timed: real busy processes, real /proc, a real harness
child; nvidia-smi's part through its CSV and a stand-in program on PATH (no GPU here; the GPU test is
tests/flash/test_gpu_sharing.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest

from ks_tui.harness import contention
from tests.harness.conftest import run_ks

SCENARIOS = ["d24-h2-1-q31-k45-b4"]  # a check-only run
SPIN = "import time\nend = time.monotonic() + {s}\nwhile time.monotonic() < end: pass\n"


def spinners(n: int, seconds: float) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", SPIN.format(s=seconds)]) for _ in range(n)]


@contextmanager
def busy_machine():
    """Every core kept busy by another process for the block (killed after it, whatever happens)."""
    procs = spinners(os.cpu_count() or 1, 60.0)
    try:
        time.sleep(0.3)  # the spinners started
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_other_processes_cpu_time_is_counted_and_this_ones_is_not():
    before = contention.cpu_snapshot()
    procs = spinners(1, 1.0)
    time.sleep(1.3)  # the child has ended but is not reaped: its time is not yet this process's children's
    others = contention.other_cores(before, contention.cpu_snapshot())
    for p in procs:
        p.wait()
    # ~1 core for ~1 s (the child's startup is idle time); a machine busy with other work only adds to it
    assert others is not None and others >= 0.6

    # This process's own CPU time is taken (by CPU time spent, whatever the load makes of the wall time) ...
    before = contention.cpu_snapshot()
    start = time.process_time()
    while time.process_time() - start < 0.5:
        pass
    after = contention.cpu_snapshot()
    assert after.own_s - before.own_s >= 0.45
    # ... and subtracted from the machine's busy time: what is left is the others'
    snap = contention.CpuSnapshot
    assert contention.other_cores(snap(10.0, 100.0, 5.0), snap(12.0, 103.0, 7.0)) == 0.5
    assert contention.other_cores(snap(10.0, 100.0, 5.0), snap(12.0, 102.0, 7.1)) == 0.0


def test_without_proc_stat_nothing_is_known(tmp_path):
    missing = tmp_path / "stat"
    before = contention.cpu_snapshot(missing)
    assert before.busy_s is None and contention.other_cores(before, contention.cpu_snapshot(missing)) is None
    missing.write_text("intr 1 2 3\n")  # not the cpu line first: unknown, not a crash
    assert contention.cpu_snapshot(missing).busy_s is None


@pytest.mark.slow
def test_bench_on_a_busy_machine_warns_and_records_the_sharing():
    cpus = os.cpu_count() or 1
    with busy_machine():
        out = run_ks("bench", "attention_cpu", "--json", "--quick")  # ~1.5 s of timing: /proc/stat ticks 10 ms
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert r["sharing"]["cpus"] == cpus and r["sharing"]["other_cpu_cores"] >= contention.OTHER_CORES_WARN
    assert r["sharing"]["gpu_utilization_before"] is None  # a CPU task asks nvidia-smi nothing
    warned = [w for w in r["warnings"] if w.startswith("other processes kept")]
    assert len(warned) == 1 and f"of {cpus} CPU cores busy while the kernel was timed" in warned[0]


@pytest.mark.slow
def test_the_warning_is_in_the_printed_report():
    with busy_machine():
        out = run_ks("bench", "attention_cpu", "--quick")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "warnings:" in text and "CPU cores busy while the kernel was timed" in text


def test_the_warning_follows_the_measured_sharing():
    """Without spinners of its own: this machine may be quiet or busy with others' work (CI, other sessions). The
    run warns exactly when the sharing it measured reaches the threshold, and not otherwise."""
    out = run_ks("bench", "attention_cpu", "--json", "--scenarios", SCENARIOS[0])
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    measured = r["sharing"]["other_cpu_cores"]
    assert isinstance(measured, float) and measured >= 0
    warned = [w for w in r["warnings"] if "CPU cores busy" in w]
    assert len(warned) == (1 if measured >= contention.OTHER_CORES_WARN else 0)


def test_a_check_run_measures_no_sharing():
    out = run_ks("check", "attention_cpu", "--json", "--scenarios", SCENARIOS[0])
    assert out.returncode == 0, out.stderr
    assert "sharing" not in json.loads(out.stdout)  # nothing was timed


# ------------------------------------------------------------------ nvidia-smi

SMI_CSV = "00000000:19:00.0, 0\n00000000:3B:00.0, 87\n00000000:4C:00.0, [N/A]\n"


def test_utilization_rows_are_read_by_bus_id():
    assert contention.parse_utilization(SMI_CSV) == {"00000000:19:00.0": 0, "00000000:3B:00.0": 87}
    props = SimpleNamespace(pci_domain_id=0, pci_bus_id=0x3B, pci_device_id=0)
    bus = contention.bus_id(props)
    assert bus == "00000000:3B:00.0"
    readings = contention.parse_utilization(SMI_CSV)
    assert contention.this_gpu(readings, bus) == 87
    assert contention.this_gpu(readings, "00000000:99:00.0") is None  # several GPUs, none ours: unknown
    assert contention.this_gpu({"00000000:19:00.0": 5}, None) == 5  # the only one there is
    assert contention.bus_id(object()) is None and contention.this_gpu(None, bus) is None


@pytest.fixture
def smi_on_path(tmp_path, monkeypatch):
    """A stand-in nvidia-smi program (this machine has no GPU): prints what the test writes to its file."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    reply = tmp_path / "reply"
    smi = bin_dir / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\ncat {reply}\nexit $(cat {reply}.rc 2>/dev/null || echo 0)\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return reply


def test_gpu_utilization_runs_nvidia_smi(smi_on_path: Path):
    smi_on_path.write_text(SMI_CSV)
    assert contention.gpu_utilization() == {"00000000:19:00.0": 0, "00000000:3B:00.0": 87}
    Path(f"{smi_on_path}.rc").write_text("9")  # nvidia-smi failing (no driver): nothing is said
    assert contention.gpu_utilization() is None


def test_gpu_utilization_without_nvidia_smi(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert contention.gpu_utilization() is None


def test_gpu_warnings_name_when_the_gpu_was_busy():
    assert contention.warnings(0.1, 16, 0, 0) == []
    assert contention.warnings(None, 16, None, None) == []
    [w] = contention.warnings(0.1, 16, 0, 42)
    assert w.startswith("another process was running kernels on this GPU after timing, with this run idle (42%)")
    [w] = contention.warnings(0.1, 16, 30, 42)
    assert "before this run used it (30%) and after timing" in w
    assert len(contention.warnings(2.0, 16, 30, None)) == 2
