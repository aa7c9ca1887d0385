"""scripts/clock_log.py: SM clock, power and temperature per phase while a kernel or a baseline runs.

The sampling needs nvidia-smi and a GPU (the `gpu` test); parsing nvidia-smi's rows and cutting
them into phases is checked here on rows of the format it prints.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from lab.flash_attn_fwd.scripts import clock_log as cl

REPO = Path(__file__).resolve().parents[3]
TASK = REPO / "kernels" / "flash_attn_fwd"
RUN = [sys.executable, "-m", "lab.flash_attn_fwd.scripts.clock_log"]  # from the repository root (cwd or PYTHONPATH)


def row(t: float, clock: float, power: float, temp: float = 50, reasons: str = "0x0000000000000000") -> str:
    stamp = datetime.fromtimestamp(t).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]  # nvidia-smi prints milliseconds
    return f"{stamp}, {clock:.0f}, {power:.2f}, {temp:.0f}, {reasons}"


def test_rows_that_do_not_parse_are_skipped():
    t0 = 1_780_000_000.0
    lines = ["timestamp, clocks.current.sm [MHz], power.draw [W], temperature.gpu",  # a header
             row(t0, 1980, 650.5), f"{row(t0 + 0.1, 1980, 1)[:23]}, [N/A], [N/A], 60, 0x0",
             row(t0 + 0.2, 1755, 699.9, 71, "0x0000000000000004"), "2026/12/03 13:0"]  # torn last line
    samples = cl.parse_samples(lines)
    assert [(s["clock_mhz"], s["power_w"], s["temp_c"]) for s in samples] == [(1980, 650.5, 50), (1755, 699.9, 71)]
    assert samples[0]["t"] == pytest.approx(t0, abs=1e-3)
    assert samples[1]["reasons"] == "0x0000000000000004"


def test_each_phase_gets_its_own_samples_after_the_clock_settles():
    t0 = 1_780_000_000.0
    lines = [row(t0 + 0.1 * i, 1980 if i < 30 else 1600, 500 if i < 30 else 700,
                 reasons="0x0" if i < 30 else "0x4") for i in range(60)]
    phases = [{"name": "kernel", "start": t0, "end": t0 + 2.95, "calls": 100, "ms_per_call": 1.0},
              {"name": "sdpa_cudnn", "start": t0 + 3.0, "end": t0 + 5.95, "calls": 90, "ms_per_call": 1.1},
              {"name": "empty", "start": t0 + 9.0, "end": t0 + 9.5, "calls": 1, "ms_per_call": 1.0}]
    rows = cl.summarize(cl.parse_samples(lines), phases)
    # kernel: samples 1.0 s .. 2.9 s after its start (20), all at 1980 MHz and 500 W.
    assert rows[0]["samples"] == 20 and rows[0]["clock_mhz"] == 1980 and rows[0]["power_w"] == 500
    assert rows[1]["samples"] == 20 and rows[1]["clock_mhz"] == 1600 and rows[1]["reasons"] == ["0x4"]
    assert rows[2]["samples"] == 0
    text = cl.render("d128-h32-8-s16384", 700.0, rows)
    assert "power limit 700.0 W" in text and "no samples" in text.splitlines()[-1]


def test_kernel_files_by_name():
    assert cl.parse_kernels(None) == {"kernel": cl.KERNEL}
    assert cl.parse_kernels(["a.cu", "probe=gen/b.cu"]) == {"kernel": Path("a.cu"), "probe": Path("gen/b.cu")}
    for bad, says in ((["a.cu", "b.cu"], "given twice"), (["=b.cu"], "NAME=FILE"), (["probe="], "NAME=FILE")):
        with pytest.raises(cl.ClockLogError, match=says):
            cl.parse_kernels(bad)


def test_bad_input_is_one_line_and_exit_2():
    out = subprocess.run([*RUN, "d128-h32-8-s99"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "d128-h32-8-s99" in out.stderr and len(out.stderr.strip().splitlines()) <= 2
    out = subprocess.run([*RUN, "d128-h16-16-s512", "--kernel", "x=a.cu", "--kernel", "x=b.cu"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "Traceback" not in out.stderr and "'x' is given twice" in out.stderr


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this machine has nvidia-smi")
def test_without_a_gpu_it_says_so():
    out = subprocess.run([*RUN, "d128-h16-16-s512"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "needs an NVIDIA GPU" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.gpu
def test_a_short_log_on_the_gpu(tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or shutil.which("nvidia-smi") is None:
        pytest.skip("needs CUDA and nvidia-smi")
    seed = TASK / "kernel.cu"  # the task's seed kernel
    out = subprocess.run([*RUN, "d128-h16-16-s2048", "--seconds", "2",
                          "--kernel", str(TASK / "best" / "kernel.cu"), "--kernel", f"seed={seed}",
                          "--phases", "kernel,seed,sdpa_cudnn", "--json", str(tmp_path / "clock.json")],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    doc = json.loads((tmp_path / "clock.json").read_text())
    assert [p["name"] for p in doc["phases"]] == ["kernel", "seed", "sdpa_cudnn"]
    assert doc["kernels"]["seed"] == str(seed)
    for p in doc["phases"]:
        assert p["calls"] > 0 and p["ms_per_call"] > 0 and p["samples"] >= 5
        assert 300 < p["clock_mhz"] < 2500 and p["power_w"] > 50
