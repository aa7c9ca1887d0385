"""scripts/wait_profile.py: the instrumented copy of a kernel, its refusals, and (GPU) a real profile.

The instrumented copy is compiled with the real nvcc for sm_90a (skipped where nvcc is absent); the
profile itself runs only where CUDA is available (marked gpu).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lab.flash_attn_fwd.scripts import families
from lab.flash_attn_fwd.scripts import wait_profile as wp

REPO = Path(__file__).resolve().parents[3]
RUN = [sys.executable, "-m", "lab.flash_attn_fwd.scripts.wait_profile"]  # from the repository root (cwd or PYTHONPATH)
BEST = REPO / "kernels/flash_attn_fwd/best/kernel.cu"



def run_script(*args: str, env_out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*RUN, *args], capture_output=True, text=True,
                          env=dict(os.environ, OUT=str(env_out)), timeout=900)


def test_every_wait_of_the_best_kernel_is_wrapped_with_its_own_line_and_role():
    src = BEST.read_text()
    text, sites = wp.instrument(src)
    lines = src.splitlines()
    waits = [i for i, ln in enumerate(lines, 1)
             if (wp.WAIT_RE.search(ln) or wp.TEST_RE.search(ln)) and "__device__" not in ln
             and not ln.lstrip().startswith("//")]
    assert sorted(sites) == waits and len(waits) >= 15
    for no, (_, code) in sites.items():
        assert code == lines[no - 1].strip()
        assert f"KS_TIMED({no}, " in text or f"ks_timed_test({no}, " in text
    # The producer's waits come before the consumers' section, the consumers' after it; the producer's second
    # thread (v35: V in the d96 128-row functions) has its own role from the line that opens its branch.
    consumers = next(i for i, ln in enumerate(lines, 1) if "--- consumers ---" in ln)
    v_thread = next(i for i, ln in enumerate(lines, 1) if wp.V_THREAD_BRANCH in ln)
    assert all((role != "consumer") == (no < consumers) for no, (role, _) in sites.items())
    assert all((role == "producer-v") == (v_thread < no < consumers) for no, (role, _) in sites.items())
    assert {"producer", "producer-v", "consumer"} == {role for role, _ in sites.values()}
    # No bare wait or test is left in the kernel's body.
    body = text[text.index("__global__"):text.index("// ---- host side")]
    assert len(re.findall(r"KS_TIMED\(\d+, mbar_wait\(", body)) == len(re.findall(r"\bmbar_wait\(", body))
    assert len(re.findall(r"return mbar_try\(", body)) == len(re.findall(r"\bmbar_try\(", body)) >= 2
    assert "ks_wait_profile" in text and text.count("clock64()") >= 5


def test_a_kernel_without_the_anchors_is_refused_with_one_clear_message(tmp_path):
    bad = tmp_path / "bad.cu"
    bad.write_text(BEST.read_text().replace("__device__ unsigned int g_tile_counter;\n", ""))
    r = run_script("--kernel", str(bad), "--emit", str(tmp_path / "x.cu"), "d128-h16-16-s512", env_out=tmp_path)
    assert r.returncode == 2
    assert r.stderr.startswith("wait_profile.py: anchor not found exactly once") and "Traceback" not in r.stderr
    assert not (tmp_path / "x.cu").exists()


def test_a_wait_on_a_line_that_counts_a_total_is_refused():
    src = BEST.read_text()
    with pytest.raises(wp.ProfileError, match="line 2 holds a wait"):
        wp.instrument("// header\nmbar_wait(x);\n" + src)


def test_a_kernel_without_a_second_producer_thread_has_no_producer_v_role():
    _, sites = wp.instrument(BEST.read_text().replace(wp.V_THREAD_BRANCH, "false"))
    assert {"producer", "consumer"} == {role for role, _ in sites.values()}


def test_two_waits_on_one_line_are_refused():
    src = BEST.read_text().replace("          mbar_wait(full_k(s), parity);\n          mbar_wait(full_v(prev), prev_parity);\n",
                                   "          mbar_wait(full_k(s), parity); mbar_wait(full_v(prev), prev_parity);\n")
    with pytest.raises(wp.ProfileError, match="holds 2 waits"):
        wp.instrument(src)


@pytest.mark.parametrize("sid", ["d128-h16-s512", "d128-h16-16-s512-causal-fp16", "x"])
def test_ids_outside_the_task_grid_are_refused(sid, tmp_path):
    r = run_script("--emit", str(tmp_path / "x.cu"), sid, env_out=tmp_path)
    assert r.returncode == 2 and f"no scenario {sid!r}" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "x.cu").exists()


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_the_instrumented_best_kernel_builds_through_the_harness(tmp_path, monkeypatch):
    out = tmp_path / "stamped.cu"
    r = run_script("--emit", str(out), "d128-h16-16-s512", env_out=tmp_path)
    assert r.returncode == 0, r.stderr
    monkeypatch.setenv("KS_CACHE_DIR", str(tmp_path / "cache"))  # a cold build, not a cached one
    lib = wp.build(wp.load_task("flash_attn_fwd", REPO), out)
    assert hasattr(lib, "ks_wait_profile") and hasattr(lib, "flash_attn_fwd")


def test_a_kernel_that_does_not_compile_is_one_clear_error(tmp_path, monkeypatch):
    bad = tmp_path / "bad.cu"
    bad.write_text("this is not CUDA\n")
    monkeypatch.setenv("KS_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(wp.ProfileError, match="does not compile"):
        wp.build(wp.load_task("flash_attn_fwd", REPO), bad)


def _cuda() -> bool:
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda(), reason="needs CUDA")
def test_a_profile_on_the_gpu_accounts_for_every_tile(tmp_path):
    # Every consumer warpgroup counts every work item it is handed, once per launch. The items and tile heights come
    # from families.py's model of best/kernel.cu's dispatch (work_items, rows_of): one item a tile in the causal
    # launches; the unmasked d128 s512 launch hands its last wave out as 64-row pieces (v46), 3132 items, not 3072.
    heights = {"d128-h16-16-s512": 192, "d128-h16-16-s512-causal": 128, "d64-h32-8-s1024-causal": 192,
               "d96-h16-16-s512-causal": 128}
    js = tmp_path / "p.json"
    r = run_script("--launches", "3", "--json", str(js), *heights, env_out=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(js.read_text())
    assert sorted(res["scenario"] for res in doc["results"]) == sorted(heights)
    for res in doc["results"]:
        p = res["params"]
        rows = families.rows_of(p)
        assert rows == heights[res["scenario"]]  # the model's answer, checked too
        warpgroups = rows // 64
        assert res["tiles"] == 3 * families.work_items(p) * warpgroups
        consumer = sum(s["cycles"] for s in res["sites"] if s["role"] == "consumer")
        assert 0 < consumer < res["consumer_total"]
        # d96 on 128-row tiles loads V from the producer's second thread (v35): it waits once per key block of
        # every tile, the blocks each consumer warpgroup counted; d64 and d128 have no such thread
        v_calls = sum(s["calls"] for s in res["sites"] if s["role"] == "producer-v" and "empty" in s["code"])
        if p["d"] == 96:
            assert v_calls * warpgroups == res["blocks"] > 0
            assert 0 < sum(s["cycles"] for s in res["sites"] if s["role"] == "producer-v") < res["producer_v_total"]
        else:
            assert v_calls == 0
        assert all(t > 0 for t in res["us"].values())
