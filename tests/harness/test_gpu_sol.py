"""On a Hopper GPU: speed of light and the clock record of a real bench, the wall-time check catching a kernel
that hides its work on its own stream, `ks profile` on a flash_attn_fwd scenario, and `ks check --sanitize`
catching a planted out-of-bounds write and a planted shared-memory race (tests/harness/gpu_planted.py)."""

from __future__ import annotations

import json
import shutil

import pytest

from ks_tui.harness.profile import find_tool
from tests.harness import gpu_planted
from tests.harness.conftest import run_ks

torch = pytest.importorskip("torch")

pytestmark = [pytest.mark.gpu, pytest.mark.slow,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    root = tmp_path_factory.mktemp("gpu-planted")
    task = gpu_planted.write_task(root)
    return task, gpu_planted.write_kernels(root)


def bench(task, source, *ids):
    out = run_ks("bench", str(task), "--source", str(source), "--json", *(("--scenarios", *ids) if ids else ()),
                 timeout=900)
    assert out.stdout, out.stderr[-3000:]
    return out.returncode, json.loads(out.stdout)


def test_an_honest_bench_has_speed_of_light_clocks_and_the_persisting_l2_reset(planted):
    task, kernels = planted
    code, r = bench(task, kernels["honest"])
    assert code == 0 and r["status"] == "correct", r["message"]
    for s in r["scenarios"]:
        sol = s["speed_of_light"]
        assert sol["bound"] == "memory" and 0 < sol["fraction"] <= 1.05, s
        assert not s.get("invalid"), s["invalid"]
        assert s["timing"]["hidden_ms"] is not None and s["timing"]["hidden_ms"] < 0.05
        assert s["timing"]["alone_ms"] > 0 and s["timing"]["mixed_hidden_ms"] < 0.05  # the kernel took turns
        paired = s["timing"]["paired"]  # ... so each library's calls were paired with its calls of the same turn
        assert set(paired) == {n for n, t in s["baselines"].items() if t} and all(x > 0 for x in paired.values())
        assert s["speedup"] == paired[s["baseline"]["name"]]  # the scenario's speedup is the paired ratio
        # each function's median by the function that ran just before it (the kernel as "kernel", a block's first
        # call after "sync"), the kernel's and each library's
        libs = {n for n, t in s["baselines"].items() if t}
        assert set(s["timing"]["after"]) <= {"kernel", "sync", *libs} and len(s["timing"]["after"]) >= 2
        assert set(s["timing"]["baselines_after"]) == libs
        assert all(ms > 0 for a in (s["timing"]["after"], *s["timing"]["baselines_after"].values()) for ms in a.values())
        assert s["speedup_of_medians"] == s["baseline"]["time_ms"] / s["time_ms"]
        assert s["draws"] == 2 and s["error"]["draw"] in (0, 1)  # the last draw judged after timing, counted once
    assert r["geomean_speedup"] is not None and r["invalid"] == 0
    peaks = r["peaks"]
    assert peaks["copy_gbps"] > 500 and peaks["matmul_tflops"]["fp32"] > 10  # any Hopper part
    assert r["l2_persisting"].startswith("reset before each timed block"), r["l2_persisting"]
    clocks = r["clocks"]
    try:
        import pynvml  # noqa: F401
    except ImportError:
        assert clocks == {"recorded": False, "why": "clock not recorded (nvidia-ml-py not installed)"}
        return
    assert clocks["recorded"] is True, clocks
    assert clocks["max_mhz"] > 1000 and clocks["before"]["sm_mhz"] > 0 and clocks["after"]["sm_mhz"] > 0
    assert clocks["during"]["samples"] >= 1
    timed = [s for s in r["scenarios"] if s.get("clock_mhz")]
    assert all(lo <= hi <= clocks["max_mhz"] for s in timed for lo, hi in [s["clock_mhz"]])


def test_work_hidden_on_another_stream_is_caught_by_the_wall_clock(planted):
    task, kernels = planted
    code, r = bench(task, kernels["side_stream"], "n4096")
    assert r["status"] == "correct"  # the answer is right: the device-wide sync waits for it
    (s,) = r["scenarios"]
    assert s.get("invalid") and s["invalid"][0].startswith("work outside the timed stream"), s
    assert s["timing"]["hidden_ms"] > 0.1, s  # 1M SM cycles per launch: about half a millisecond at 2 GHz
    assert r["geomean_speedup"] is None and r["invalid"] == 1
    assert any(w.startswith("invalid timing on 1 scenario(s)") for w in r["warnings"])


def test_work_hidden_only_once_timing_starts_is_caught_by_the_kernel_s_last_block_alone(planted):
    # Taking turns with the library, the hidden work overlaps the library's calls; the kernel's block of its own
    # at the end leaves it running past its last event.
    task, kernels = planted
    code, r = bench(task, kernels["side_stream_late"], "n4096")
    assert r["status"] == "correct"
    (s,) = r["scenarios"]
    assert s.get("invalid") and s["invalid"][0].startswith("work outside the timed stream"), s
    assert s["timing"]["alone_ms"] is not None, s["timing"]
    assert r["geomean_speedup"] is None and r["invalid"] == 1


def test_ks_profile_summarises_one_flash_attention_launch():
    if find_tool("ncu", "nvcc") is None:
        pytest.skip("Nsight Compute (ncu) is not installed here")
    out = run_ks("profile", "flash_attn_fwd", "--scenario", "d128-h16-16-s1024", "--json", timeout=900)
    if out.returncode == 2 and "ERR_NVGPUCTRPERM" in out.stderr:
        pytest.skip("ncu may not read the performance counters here: " + out.stderr.splitlines()[0])
    assert out.returncode == 0, out.stderr[-3000:]
    r = json.loads(out.stdout)
    launches = r["profile"]["d128-h16-16-s1024"]["launches"]
    assert launches, r
    main = max(launches, key=lambda k: k.get("duration_us") or 0)
    for key in ("sm_throughput_pct", "achieved_occupancy_pct", "l2_hit_pct", "dram_throughput_pct"):
        assert 0 <= main[key] <= 100, (key, main)
    assert main["duration_us"] > 1 and main["top_stalls"], main
    text = run_ks("profile", "flash_attn_fwd", "--scenario", "d128-h16-16-s1024", timeout=900)
    assert text.returncode == 0 and text.stdout.startswith("profile of d128-h16-16-s1024")


@pytest.mark.parametrize("kind, tool, kernel", [("write_past", "memcheck", "write_past"),
                                                ("shared_race", "racecheck", "shared_race")])
def test_ks_check_sanitize_fails_on_a_planted_finding_and_names_it(planted, kind, tool, kernel):
    if find_tool("compute-sanitizer", "nvcc") is None:
        pytest.skip("compute-sanitizer is not installed here")
    task, kernels = planted
    out = run_ks("check", str(task), "--sanitize", "--source", str(kernels[kind]), "--scenarios", "n4096",
                 "--json", timeout=900)
    assert out.returncode == 1, out.stderr[-3000:]
    r = json.loads(out.stdout)
    rec = r["sanitizer"]["tools"][tool]
    assert rec["findings"] >= 1 and kernel in (rec["first"]["kernel"] or ""), r["sanitizer"]
    assert r["message"].startswith(f"compute-sanitizer {tool}: ")
    plain = run_ks("check", str(task), "--sanitize", "--source", str(kernels[kind]), "--scenarios", "n4096",
                   timeout=900)
    assert plain.returncode == 1 and f"{tool}: " in plain.stdout and "finding" in plain.stdout


def test_ks_check_sanitize_passes_an_honest_kernel(planted):
    if shutil.which("compute-sanitizer") is None and find_tool("compute-sanitizer", "nvcc") is None:
        pytest.skip("compute-sanitizer is not installed here")
    task, kernels = planted
    out = run_ks("check", str(task), "--sanitize", "--source", str(kernels["honest"]), "--scenarios", "n4096",
                 "--json", timeout=900)
    r = json.loads(out.stdout)
    assert out.returncode == 0, r.get("sanitizer")
    assert r["sanitizer"]["clean"] and set(r["sanitizer"]["tools"]) == {"memcheck", "racecheck", "initcheck",
                                                                        "synccheck"}
