"""`ks profile` and `ks check --sanitize` without a GPU: what the NVIDIA tools print, read back; the one-line
refusals when a tool or a GPU task is missing; the summaries kept with an attempt."""

from __future__ import annotations

import os

import pytest

from ks_tui.harness import profile as prof
from ks_tui.harness import sanitize as san
from ks_tui.task import load_task
from tests.harness.conftest import REPO, run_ks

GPU_TASK = REPO / "kernels" / "flash_attn_fwd"

# The shape of `ncu --import R --csv --page raw`: tool lines, a header of metric names, a units row,
# a row per launch (numbers as ncu prints them, thousands separators included).
NCU_RAW = '''==PROF== Connected to process 4242
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","gpu__time_duration.sum","sm__throughput.avg.pct_of_peak_sustained_elapsed","gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed","gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed","sm__warps_active.avg.pct_of_peak_sustained_active","lts__t_sector_hit_rate.pct","sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active","sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active","smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio","smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio","smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio","smsp__average_warps_issue_stalled_wait_per_issue_active.ratio","launch__registers_per_thread"
"","","","","","","","","","","","nsecond","%","%","%","%","%","%","%","ratio","ratio","ratio","ratio","register/thread"
"0","4242","python3","gpu1","flash_fwd_kernel<bf16, 128>","1","7","(384, 1, 1)","(8, 32, 8)","0","9.0","1,234,567","71.5","40.2","22.3","18.7","65.1","68.9","12.0","1.25","0.40","2.5","0.9","168"
'''


def test_ncus_raw_csv_becomes_a_short_summary_per_launch():
    (k,) = prof.parse_raw_csv(NCU_RAW)
    assert k["kernel"] == "flash_fwd_kernel<bf16, 128>" and k["grid"] == "(8, 32, 8)"
    assert k["duration_us"] == pytest.approx(1234.567)
    assert (k["sm_throughput_pct"], k["memory_throughput_pct"], k["dram_throughput_pct"]) == (71.5, 40.2, 22.3)
    assert (k["achieved_occupancy_pct"], k["l2_hit_pct"], k["tensor_pipe_pct"]) == (18.7, 65.1, 68.9)
    assert k["top_stalls"] == [["math_pipe_throttle", 2.5], ["barrier", 1.25], ["wait", 0.9]]
    lines = prof.summary_lines({"d128-h16-16-s4096": {"launches": [k]}})
    assert lines[0] == "profile of d128-h16-16-s4096 (1 launch, ncu):"
    assert "SM 72%" in lines[1] and "tensor 69%" in lines[1] and "L2 hit 65%" in lines[1]
    assert lines[2].endswith("math_pipe_throttle 2.50, barrier 1.25, wait 0.90")
    assert prof.parse_raw_csv("==ERROR== no kernels were profiled\n") == []


def test_a_profile_is_kept_beside_the_attempts_session_and_read_back(tmp_path):
    one = {"s512": {"launches": [{"kernel": "k", "sm_throughput_pct": 10.0}]}}
    two = {"s4096": {"launches": [{"kernel": "k", "sm_throughput_pct": 90.0}]}}
    path = prof.keep(tmp_path, "sess", 3, one)
    prof.keep(tmp_path, "sess", 3, two)
    assert path == tmp_path / "sess" / "profiles" / "attempt-3.json"
    assert set(prof.load(tmp_path, "sess", 3)) == {"s512", "s4096"}
    assert prof.load(tmp_path, "sess", 4) == {}


MEMCHECK_LOG = """========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at void write_past<float>(float *, int)+0x70 in /tmp/k.cu:7
=========     by thread (31,0,0) in block (3,0,0)
=========     Address 0x7f2a4c000400 is out of bounds
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: [0x2dfb4f] in /lib/x86_64-linux-gnu/libcuda.so.1
=========
========= Uninitialized __global__ memory read of size 4 bytes
=========     at at::native::vectorized_elementwise_kernel<4, float>(int, float *)+0x1b0
=========     by thread (0,0,0) in block (0,0,0)
=========
========= ERROR SUMMARY: 2 errors
"""
RACECHECK_LOG = """========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at reduce_shared(const float *, float *, int)+0x120 in /tmp/r.cu:9
=========     and Read access at reduce_shared(const float *, float *, int)+0x150 in /tmp/r.cu:11 [992 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
"""


HAZARD_LOG = """========= ERROR: Potential RAW hazard detected at __shared__ 0x80 in block (0,0,0) :
=========     Write Thread (32,0,0) at shared_race(const float *, float *, int)+0xd0 in /tmp/r.cu:5
=========     Read Thread (0,0,0) at shared_race(const float *, float *, int)+0xf0 in /tmp/r.cu:6
=========     Current Value : 0
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
"""


def test_a_hazard_report_takes_its_kernel_from_the_thread_lines():
    (found,), count = san.parse_log(HAZARD_LOG)
    assert count == 1 and found["kernel"] == "shared_race(const float *, float *, int)"
    assert san.own_findings([found], ["shared_race(const float*, float*, int)"]) == [found]


def test_sanitizer_logs_give_each_finding_and_the_kernel_it_names():
    found, count = san.parse_log(MEMCHECK_LOG)
    assert count == 2 and [f["what"] for f in found] == ["Invalid __global__ write of size 4 bytes",
                                                         "Uninitialized __global__ memory read of size 4 bytes"]
    assert found[0]["kernel"] == "void write_past<float>(float *, int)"
    # only the candidate's kernels count: torch's own kernel is not the kernel's fault
    mine = san.own_findings(found, ["_Z10write_pastIfEvPfi", "void write_past<float>(float*, int)"])
    assert [f["kernel"] for f in mine] == ["void write_past<float>(float *, int)"]
    race, count = san.parse_log(RACECHECK_LOG)
    assert count == 1 and race[0]["kernel"] == "reduce_shared(const float *, float *, int)"
    assert race[0]["what"].startswith("Error: Race reported between Write access")
    assert san.parse_log("========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n") == ([], 0)
    report = {"scenarios": ["a"], "clean": False,
              "tools": {"memcheck": {"findings": 0}, "racecheck": {"findings": 1, "first": race[0]}}}
    assert san.first_finding(report).startswith("racecheck: Error: Race reported")
    assert "in reduce_shared(" in san.first_finding(report)
    assert san.sanitizer_lines(report)[1] == "  memcheck: clean"


def test_the_smallest_scenario_of_each_family_is_sanitized():
    task = load_task(GPU_TASK, REPO)
    ids = san.smallest_per_family(task)
    assert len(ids) == 26
    assert "d128-h32-8-s512" in ids and "d256-h8-8-s495-causal" in ids and "d128-h16-16-q128-k512" in ids
    assert not any("s4096" in i for i in ids)


@pytest.mark.parametrize("has_padding", [True, False])
def test_memcheck_gets_red_zones_where_the_tool_offers_them(tmp_path, has_padding):
    # A stand-in executable answering --help as a newer (or older) compute-sanitizer does.
    exe = tmp_path / "compute-sanitizer"
    option = "  --padding arg    bytes of padding after every allocation\n" if has_padding else ""
    exe.write_text(f"#!/bin/sh\nprintf 'Usage: compute-sanitizer [options]\\n{option}'\n")
    exe.chmod(0o755)
    # The answer is cached per executable path, and this test's other case may have had the same path (a passing
    # test's tmp_path is removed, and its name given again).
    san.supports_padding.cache_clear()
    mem = san.tool_command(str(exe), "memcheck", tmp_path / "m.log")
    race = san.tool_command(str(exe), "racecheck", tmp_path / "r.log")
    assert mem[:3] == [str(exe), "--tool", "memcheck"] and race[2] == "racecheck"
    assert ("--padding" in mem) is has_padding and "--padding" not in race
    if has_padding:
        assert int(mem[mem.index("--padding") + 1]) >= 4096


def _without_cuda_tools() -> dict:
    """PATH and CUDA_HOME with no ncu or compute-sanitizer (nvcc's own folder may hold them)."""
    keep = [d for d in os.environ.get("PATH", "").split(os.pathsep)
            if not any(os.path.exists(os.path.join(d, t)) for t in ("ncu", "compute-sanitizer"))]
    return {"PATH": os.pathsep.join(keep), "CUDA_HOME": "/nonexistent", "CUDA_PATH": "/nonexistent"}


@pytest.mark.skipif(os.path.exists("/usr/local/cuda/bin/ncu") or os.path.exists("/usr/local/cuda/bin/compute-sanitizer"),
                    reason="the CUDA toolkit here has the tools")
def test_missing_tools_and_cpu_tasks_get_one_line_and_exit_2():
    env = _without_cuda_tools()
    cases = [
        (("profile", "flash_attn_fwd", "--scenario", "d64-h32-32-s512"), "Nsight Compute (ncu) not found"),
        (("check", "flash_attn_fwd", "--sanitize"), "compute-sanitizer not found"),
        (("profile", "attention_cpu", "--scenario", "d24-h2-1-q31-k45-b4"), "attention_cpu is a CPU task"),
        # -s names the session as in every other attempt command (it was refused: "unrecognized arguments")
        (("profile", "attention_cpu", "-s", "any", "--scenario", "d24-h2-1-q31-k45-b4"), "goes with an ATTEMPT"),
        (("check", "attention_cpu", "--sanitize"), "attention_cpu is a CPU task"),
        (("profile", "flash_attn_fwd", "--scenario", "nope"), "has no scenario 'nope'"),
    ]
    for args, words in cases:
        out = run_ks(*args, env=env)
        assert out.returncode == 2, (args, out.stderr)
        assert out.stderr.startswith("ks: error: ") and words in out.stderr.splitlines()[0], out.stderr
        assert "Traceback" not in out.stderr and out.stdout == ""
