"""Speed of light: the byte formulas, the limits and fractions, the peak cache, the invalid-above-light rule."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from ks_tui.errors import InputFileError
from ks_tui.harness import sol
from ks_tui.harness.report import render
from ks_tui.harness.result import summarize
from ks_tui.task import default_family, load_task
from tests.harness.conftest import CPU_TASK_DIR, REPO, run_ks

GPU_TASK_DIR = REPO / "kernels" / "flash_attn_fwd"


def attention_bytes(elem: int, p: dict) -> int:
    # q and o: b*s_q*h_q*d each; k and v: b*s_k*h_kv*d each
    return elem * (p["b"] * p["s_q"] * p["h_q"] * p["d"] * 2 + 2 * p["b"] * p["s_k"] * p["h_kv"] * p["d"])


# ------------------------------------------------------------------ byte formulas and families

def test_the_bundled_tasks_byte_formulas_count_q_k_v_read_once_and_o_written_once(cpu_task):
    gpu_task = load_task(GPU_TASK_DIR, REPO)
    for task, elem in ((cpu_task, 4), (gpu_task, 2)):
        for s in task.scenarios:
            assert task.bytes_of(s) == attention_bytes(elem, s.params), s.id
    one = gpu_task.scenario("d128-h32-8-s4096")  # b = 8: 2 B * (2 * 8*4096*32*128 + 2 * 8*4096*8*128)
    assert gpu_task.bytes_of(one) == 2 * (2 * 8 * 4096 * 32 * 128 + 2 * 8 * 4096 * 8 * 128) == 671088640  # 640 MiB


def test_families_group_a_head_configuration_and_mask_across_lengths(cpu_task):
    gpu_task = load_task(GPU_TASK_DIR, REPO)
    fams: dict[str, list[str]] = {}
    for s in gpu_task.scenarios:
        fams.setdefault(gpu_task.family_of(s), []).append(s.id)
    assert len(fams) == 26 and all(len(ids) == 7 for ids in fams.values())
    assert "d128-h16-16-q1024-k4096-causal" in fams["d128-h16-16-prefill-causal"]
    assert "d128-h16-16-s1024-fp16" in fams["d128-h16-16-fp16"]
    assert {cpu_task.family_of(s) for s in cpu_task.scenarios} == {"full", "causal"}
    # without a `family` key: the id less its length parts
    assert default_family("d128-h32-8-s4096-causal") == "d128-h32-8-causal"
    assert default_family("d128-h16-16-q1024-k4096") == "d128-h16-16"


@pytest.fixture()
def task_copy(tmp_path) -> Path:
    dst = tmp_path / "kernels" / "attention_cpu"
    shutil.copytree(CPU_TASK_DIR, dst, ignore=shutil.ignore_patterns("results", "__pycache__"))
    return dst


@pytest.mark.parametrize("new, words", [
    ('bytes: "4 * (2 * b * s_q * h_q * dd)"', "bytes: unknown name 'dd'"),
    ('bytes: "0 - b"', "bytes must be a positive number"),
    ("bytes: 12", "'bytes' must be a str"),
    ('bytes: "__import__(\'os\').getpid()"', "may be called"),
    ('family: "{causall}"', "family: unknown name 'causall'"),
])
def test_a_bad_bytes_or_family_names_the_file_and_line(task_copy, new, words):
    path = task_copy / "task.yaml"
    lines = path.read_text().splitlines()
    key = new.split(":")[0]
    at = next(i for i, ln in enumerate(lines) if ln.startswith(key + ":"))
    lines[at] = new
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputFileError) as info:
        load_task(task_copy, task_copy.parent.parent)
    assert words in str(info.value) and f"task.yaml:{at + 1}" in str(info.value)
    out = run_ks("scenarios", str(task_copy))
    assert out.returncode == 2 and words in out.stderr and "Traceback" not in out.stderr


# ------------------------------------------------------------------ limits and fractions

PEAKS = {"matmul_tflops": {"bf16": 800.0, "fp32": 50.0}, "copy_gbps": 3000.0}


def test_the_largest_limit_bounds_the_time_and_the_fraction_is_limit_over_time():
    # 8e12 FLOPs at 800 TFLOP/s: 10 ms; 3e9 bytes at 3000 GB/s: 1 ms -> compute-bound
    lim = sol.limits_ms(8e12, 3e9, PEAKS, "bf16")
    assert lim == pytest.approx({"compute": 10.0, "memory": 1.0})
    got = sol.speed_of_light(lim, 12.5)
    assert got["bound"] == "compute" and got["limit_ms"] == pytest.approx(10.0)
    assert got["fraction"] == pytest.approx(0.8)
    # the same bytes in fp32 data at 50 TFLOP/s: compute is 160 ms; few FLOPs make it memory-bound
    assert sol.speed_of_light(sol.limits_ms(1e9, 3e9, PEAKS, "fp32"), 2.0)["bound"] == "memory"
    assert sol.speed_of_light(sol.limits_ms(1e9, 3e9, PEAKS, "fp32"), 2.0)["fraction"] == pytest.approx(0.5)
    # a task's extra limit above both wins
    extra = sol.speed_of_light(sol.limits_ms(8e12, 3e9, PEAKS, "bf16", {"exp": 20.0, "bad": -1}), 40.0)
    assert extra["bound"] == "exp" and extra["fraction"] == pytest.approx(0.5) and "bad" not in extra["limits"]
    assert sol.speed_of_light({}, 1.0) is None
    assert sol.limits_ms(1e9, None, PEAKS, "fp16") == {}  # no peak for the dtype, no byte formula


def test_the_exponential_limit_uses_16_per_clock_per_sm_on_hopper():
    from ks_tui.harness.attention import extra_limits

    p = {"b": 1, "s_q": 4096, "s_k": 4096, "h_q": 32, "h_kv": 8, "d": 128, "causal": True}
    hopper = {"device": "cuda", "capability": [9, 0], "sm_count": 132, "max_clock_mhz": 1980}
    exps = 1 * 32 * 4096 * (4096 / 2)  # causal: half the scores are visible on average
    assert extra_limits(p, hopper)["exp"] == pytest.approx(exps / (16 * 132 * 1980e6) * 1e3)
    assert extra_limits(p, {**hopper, "capability": [12, 0]}) == {}  # another rate: no claim
    assert extra_limits(p, {**hopper, "max_clock_mhz": None}) == {}
    assert extra_limits(p, {"device": "cpu"}) == {}


def test_family_summary_takes_the_geomean_of_valid_fractions():
    def scen(sid, fam, frac, bound="compute", invalid=None):
        return {"id": sid, "family": fam, "speed_of_light": {"fraction": frac, "bound": bound}, "invalid": invalid}
    fams = sol.family_summary([scen("a", "x", 0.5), scen("b", "x", 0.8, "memory"), scen("c", "y", 0.9),
                               scen("d", "y", 1.5, invalid=["faster than the speed of light"]),
                               {"id": "e", "family": "z"}])
    assert [f["family"] for f in fams] == ["x", "y"]
    x = fams[0]
    assert x["n"] == 2 and x["geomean"] == pytest.approx(math.sqrt(0.4)) and (x["min"], x["max"]) == (0.5, 0.8)
    assert x["bounds"] == {"compute": 1, "memory": 1}
    assert fams[1]["n"] == 1 and fams[1]["geomean"] == pytest.approx(0.9)


# ------------------------------------------------------------------ invalid above light

def test_a_scenario_above_light_is_invalid_and_left_out_of_the_geomean():
    assert sol.above_light({"fraction": 1.04, "bound": "compute", "limit_ms": 1.0}) is None
    reason = sol.above_light({"fraction": 1.3, "bound": "memory", "limit_ms": 0.5})
    assert reason.startswith("faster than the speed of light") and "1.30x the memory limit" in reason
    fast = {"id": "fast", "ok": True, "time_ms": 1.0, "speedup": 4.0, "baselines": {"lib": 4.0},
            "speed_of_light": {"fraction": 1.3, "bound": "memory", "limit_ms": 1.3}, "invalid": [reason]}
    honest = {"id": "honest", "ok": True, "time_ms": 2.0, "speedup": 1.1, "baselines": {"lib": 2.2},
              "speed_of_light": {"fraction": 0.6, "bound": "compute", "limit_ms": 1.2}}
    result = summarize({"scenarios": [fast, honest], "warnings": [], "mode": "bench", "status": "correct"})
    assert result["geomean_speedup"] == pytest.approx(1.1) and result["invalid"] == 1
    assert result["geomean_by_baseline"] == {"lib": pytest.approx(1.1)}
    assert any(w.startswith("invalid timing on 1 scenario(s)") and "fast" in w for w in result["warnings"])
    again = summarize(result)  # the parent summarizes the child's result again: one warning, not two
    assert sum(w.startswith("invalid timing") for w in again["warnings"]) == 1
    text = render(result)
    assert "invalid" in text.splitlines()[2] and "130% memory" in text


@pytest.fixture()
def light(cpu_task, tmp_path):
    import torch

    from ks_tui.harness.runner import load_reference

    def make(peaks: dict | None):
        result = {"device": "test-cpu", "threads": 1, "warnings": []}
        if peaks is not None:
            cache = sol.PeakCache(tmp_path)
            cache.entries[sol.cache_key("test-cpu", torch.__version__, 1)] = dict(peaks, measured_at=1.0)
            cache.save()
        return sol.Light(torch, cpu_task, load_reference(cpu_task), result, tmp_path), result
    return make


def test_cached_peaks_are_used_and_missing_ones_measured_and_kept(light, tmp_path):
    lt, _ = light({"matmul_tflops": {"fp32": 1e-3}, "copy_gbps": 5.0})
    assert lt.ensure_peaks(["fp32"])["matmul_tflops"] == {"fp32": 1e-3}  # from the cache, not measured
    assert lt.cache.get(lt.key)["measured_at"] == 1.0
    lt.ensure_peaks(["fp64"])  # a dtype the cache lacks is measured and added beside the cached one
    kept = json.loads((tmp_path / "peaks.json").read_text())[lt.key]
    assert kept["matmul_tflops"]["fp32"] == 1e-3 and kept["matmul_tflops"]["fp64"] > 0
    assert kept["copy_gbps"] == 5.0 or kept["copy_gbps"] > 5.0


def test_the_cache_key_holds_the_device_torch_and_threads_and_merging_keeps_the_best(tmp_path):
    keys = {sol.cache_key("H100", "2.9", None), sol.cache_key("H200", "2.9", None),
            sol.cache_key("H100", "2.10", None), sol.cache_key("H100", "2.9", 4)}
    assert len(keys) == 4
    cache = sol.PeakCache(tmp_path)
    k = sol.cache_key("H100", "2.9", None)
    cache.merge(k, {"matmul_tflops": {"bf16": 700.0}, "copy_gbps": 3000.0})
    cache.merge(k, {"matmul_tflops": {"bf16": 650.0, "fp16": 690.0}, "copy_gbps": 3100.0})
    cache.save()
    back = sol.PeakCache(tmp_path).get(k)
    assert back["matmul_tflops"] == {"bf16": 700.0, "fp16": 690.0} and back["copy_gbps"] == 3100.0
    (tmp_path / "peaks.json").write_text("{not json")
    assert sol.PeakCache(tmp_path).get(k) == {}  # a broken cache is re-measured, not fatal


def test_a_low_cached_peak_is_measured_again_before_a_scenario_is_called_invalid(light, cpu_task):
    # A cached peak far below this machine's (as if measured while it was busy) makes an honest time
    # look faster than light; finish() measures again and the scenario is valid.
    lt, result = light({"matmul_tflops": {"fp32": 1e-9}, "copy_gbps": 1e-9})
    lt.ensure_peaks(["fp32"])
    sc = cpu_task.scenarios[0]
    honest = {"id": sc.id, "time_ms": 1000.0}  # 33 MFLOP in a second: slower than any CPU
    lt.judge(sc, honest)
    assert honest["invalid"] and honest["speed_of_light"]["fraction"] > 1.05
    lt.finish()
    assert "invalid" not in honest and honest["speed_of_light"]["fraction"] < 1.05
    assert result["peaks"]["remeasured"] is True and result["peaks"]["matmul_tflops"]["fp32"] > 1e-6


def test_an_impossible_time_stays_invalid_after_measuring_again(light, cpu_task):
    lt, result = light(None)
    lt.ensure_peaks(["fp32"])
    sc = cpu_task.scenarios[0]
    impossible = {"id": sc.id, "time_ms": 1e-7}
    lt.judge(sc, impossible)
    lt.finish()
    assert impossible["invalid"][0].startswith("faster than the speed of light")
    assert result["peaks"]["remeasured"] is True


# ------------------------------------------------------------------ end to end

@pytest.mark.slow
def test_bench_json_carries_speed_of_light_on_every_scenario_and_the_text_shows_families():
    out = run_ks("bench", "attention_cpu", "--json", "--scenarios", "d24-h2-1-q31-k45-b4",
                 "d16-h4-4-q200-k50-b1-causal")
    assert out.returncode == 0, out.stderr[-2000:]
    r = json.loads(out.stdout)
    assert len(r["scenarios"]) == 2
    for s in r["scenarios"]:
        got = s["speed_of_light"]
        assert got["bound"] in ("compute", "memory") and got["limit_ms"] > 0
        assert got["fraction"] == pytest.approx(got["limit_ms"] / s["time_ms"])
        assert s["family"] in ("full", "causal")
        assert not s.get("invalid")
    assert r["peaks"]["matmul_tflops"]["fp32"] > 0 and r["peaks"]["copy_gbps"] > 0
    assert {f["family"] for f in r["speed_of_light"]["families"]} == {"full", "causal"}
    text = render(r)
    assert "SoL" in text and "speed of light by family" in text and "peaks (measured)" in text


def test_compute_line_is_the_theoretical_rate_where_the_device_is_known():
    h100 = {"device": "cuda", "capability": [9, 0], "sm_count": 132, "max_clock_mhz": 1980}
    assert int(sol.ceiling_tflops(h100, "bf16")) == 1070  # 132 x 4096 x 1.98 GHz
    assert sol.ceiling_tflops({"device": "cpu"}, "fp32") is None
    # 1.2x torch.matmul's measured rate but under the tensor cores' ceiling: fast, not impossible
    fast = {"fraction": 1.2, "bound": "compute", "limit_ms": 1.0, "ceiling_ms": 0.75, "ceiling_fraction": 0.9}
    assert sol.above_light(fast) is None
    beyond = dict(fast, fraction=1.5, ceiling_fraction=1.1)
    assert "peak compute rate" in sol.above_light(beyond)
    # memory has no datasheet figure here: the measured copy rate with its tolerance
    assert sol.above_light({"fraction": 1.2, "bound": "memory", "limit_ms": 1.0, "ceiling_fraction": 0.2})


# ------------------------------------------------------------------ paired speedups

def test_the_geomean_by_baseline_takes_the_paired_ratio_where_the_calls_took_turns():
    # "a" took turns (paired ratios differ from the medians' ratio on purpose); "b" did not (CPU, cached).
    a = {"id": "a", "ok": True, "time_ms": 1.0, "baselines": {"lib": 1.2, "other": 2.0},
         "baseline": {"name": "lib", "time_ms": 1.2}, "speedup": 1.1, "speedup_of_medians": 1.2,
         "timing": {"median_ms": 1.0, "paired": {"lib": 1.1, "other": 1.9}}}
    b = {"id": "b", "ok": True, "time_ms": 2.0, "baselines": {"lib": 3.0, "other": 5.0},
         "baseline": {"name": "lib", "time_ms": 3.0}, "speedup": 1.5, "timing": {"median_ms": 2.0}}
    result = summarize({"scenarios": [a, b], "warnings": [], "mode": "bench", "status": "correct"})
    assert result["geomean_speedup"] == pytest.approx(math.sqrt(1.1 * 1.5))
    by = result["geomean_by_baseline"]
    assert by == {"lib": pytest.approx(math.sqrt(1.1 * 1.5)), "other": pytest.approx(math.sqrt(1.9 * 2.5))}
    assert by["lib"] == pytest.approx(result["geomean_speedup"])  # one library fastest everywhere: the same number
