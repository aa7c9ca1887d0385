"""FA3 is found under either module name, a build that refuses a dtype is skipped with its own
reason, and a bench where FA3 never ran says so beside the geomean."""

from __future__ import annotations

import json
import shutil
import sys

import pytest
import torch

from ks_tui.harness import gpu_baselines
from ks_tui.harness.reference_api import Unavailable
from tests.harness.conftest import CPU_TASK_DIR, run_ks

# A stand-in FA3 that computes the right answer on the CPU (bottom-right causal, GQA) and, like
# the fa3-fwd wheel, refuses fp16.
FAKE_FA3 = '''
import torch
from ks_tui.harness.attention import reference

__version__ = "{version}"


def flash_attn_func(q, k, v, softmax_scale=None, causal=False):
    if q.dtype == torch.float16:
        raise RuntimeError("This flash attention build does not support FP16")
    p = {{"b": q.shape[0], "s_q": q.shape[1], "s_k": k.shape[1], "h_q": q.shape[2],
          "h_kv": k.shape[2], "d": q.shape[3], "causal": causal, "scale": softmax_scale}}
    return reference({{"q": q, "k": k, "v": v}}, p).to(q.dtype), None
'''

MODULES = [name for name, _ in gpu_baselines.FA3_MODULES]


@pytest.fixture
def fake_fa3(tmp_path, monkeypatch):
    """fake_fa3(module_name, version) puts a stand-in FA3 on sys.path under that name."""
    for name in MODULES:
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.setattr(gpu_baselines, "_probe_cache", {})

    def plant(name: str, version: str = "9.9.9"):
        folder = tmp_path / f"site-{name}"
        folder.mkdir()
        (folder / f"{name}.py").write_text(FAKE_FA3.format(version=version))
        monkeypatch.syspath_prepend(str(folder))
        return folder

    return plant


def test_no_fa3_says_both_names(fake_fa3):
    with pytest.raises(Unavailable) as info:
        gpu_baselines.fa3_module()
    assert str(info.value).startswith("FA3 not installed")
    for name in MODULES:
        assert name in str(info.value)
    assert gpu_baselines.availability()["fa3"].startswith("FA3 not installed")


@pytest.mark.parametrize("name", MODULES)
def test_fa3_found_under_either_name(fake_fa3, name):
    fake_fa3(name, "1.2.3")
    found, _ = gpu_baselines.fa3_module()
    assert found == name
    line = gpu_baselines.availability()["fa3"]
    assert line.startswith(name) and "1.2.3" in line


def test_upstream_build_preferred_when_both_exist(fake_fa3):
    fake_fa3("fa3_fwd_interface")
    fake_fa3("flash_attn_interface")
    assert gpu_baselines.fa3_module()[0] == "flash_attn_interface"


def _inputs(dtype, causal):
    p = {"b": 1, "s_q": 64, "s_k": 96, "h_q": 4, "h_kv": 2, "d": 32, "causal": causal, "scale": 32 ** -0.5}
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(1, 64, 4, 32, generator=gen).to(dtype)
    k = torch.randn(1, 96, 2, 32, generator=gen).to(dtype)
    v = torch.randn(1, 96, 2, 32, generator=gen).to(dtype)
    return {"q": q, "k": k, "v": v}, p


def test_refused_dtype_is_skipped_with_the_library_reason(fake_fa3):
    fake_fa3("fa3_fwd_interface")
    inputs, p = _inputs(torch.float16, causal=True)
    with pytest.raises(Unavailable, match="does not support FP16"):
        gpu_baselines.fa3(inputs, p)
    inputs, p = _inputs(torch.bfloat16, causal=True)
    out = gpu_baselines.fa3(inputs, p)()
    assert out.shape == inputs["q"].shape and out.dtype == torch.bfloat16


# attention_cpu with FA3 listed beside torch's SDPA (the CPU stand-in needs fp32: cast around it).
FA3_LISTED_REFERENCE = '''
from ks_tui.harness.attention import CPU_BASELINES, make_inputs, make_output, reference, shape_of
from ks_tui.harness.attention import call_cpu as call_kernel
from ks_tui.harness.gpu_baselines import fa3_module


def fa3(inputs, p):
    _, mod = fa3_module()
    q, k, v = inputs["q"], inputs["k"], inputs["v"]
    return lambda: mod.flash_attn_func(q.bfloat16(), k.bfloat16(), v.bfloat16(),
                                       softmax_scale=p["scale"], causal=bool(p["causal"]))[0].float()


BASELINES = dict(CPU_BASELINES, fa3=fa3)
'''


@pytest.fixture
def fa3_task(tmp_path):
    task = tmp_path / "attention_cpu"
    shutil.copytree(CPU_TASK_DIR, task, ignore=shutil.ignore_patterns("results"))
    (task / "reference.py").write_text(FA3_LISTED_REFERENCE)
    yaml = (task / "task.yaml").read_text().replace("baselines: [torch_sdpa]", "baselines: [torch_sdpa, fa3]")
    (task / "task.yaml").write_text(yaml)
    first = json.loads(run_ks("scenarios", str(task), "--json").stdout)["scenarios"][0]["id"]
    return task, first


@pytest.mark.slow
def test_bench_without_fa3_says_so_beside_the_geomean(fa3_task, monkeypatch):
    task, first = fa3_task
    monkeypatch.delenv("PYTHONPATH", raising=False)
    result = json.loads(run_ks("bench", str(task), "--scenarios", first, "--json").stdout)
    assert result["status"] == "correct"
    assert list(result["geomean_by_baseline"]) == ["torch_sdpa"]
    assert result["missing_baselines"]["fa3"].startswith("FA3 not installed")
    assert result["baseline_caveat"] == "FA3 not installed: speedup is against torch_sdpa only"
    human = run_ks("bench", str(task), "--scenarios", first).stdout
    summary = human.strip().splitlines()[-1]
    assert "geomean" in summary and "FA3 not installed: speedup is against torch_sdpa only" in summary


@pytest.mark.slow
def test_bench_with_the_wheel_module_times_fa3(fa3_task, fake_fa3, monkeypatch):
    task, first = fa3_task
    folder = fake_fa3("fa3_fwd_interface")
    monkeypatch.setenv("PYTHONPATH", f"{folder}:{CPU_TASK_DIR.parents[1]}")
    result = json.loads(run_ks("bench", str(task), "--scenarios", first, "--json").stdout)
    assert result["status"] == "correct", result.get("message")
    assert result["missing_baselines"] == {} and result["baseline_caveat"] is None
    assert set(result["geomean_by_baseline"]) == {"fa3", "torch_sdpa"}
    assert "fa3" in result["scenarios"][0]["baselines"]


def test_caveat_only_for_the_anchor():
    from ks_tui.harness.result import baseline_caveat

    ran = {"geomean_by_baseline": {"sdpa_cudnn": 1.2, "fa3": 1.0}}
    assert baseline_caveat({**ran, "missing_baselines": {"fa2": "flash_attn (FA2) not importable (ImportError)"}}) is None
    assert baseline_caveat({"geomean_by_baseline": {"sdpa_cudnn": 1.2},
                            "missing_baselines": {"fa3": "RuntimeError: out of memory"}}) == \
        "FA3 did not run: speedup is against sdpa_cudnn only"


@pytest.mark.slow
def test_doctor_names_the_fa3_build(fake_fa3, monkeypatch):
    folder = fake_fa3("fa3_fwd_interface", "0.0.3")
    monkeypatch.setenv("PYTHONPATH", f"{folder}:{CPU_TASK_DIR.parents[1]}")
    report = json.loads(run_ks("doctor", "--json").stdout)
    assert report["baselines"]["fa3"].startswith("fa3_fwd_interface 0.0.3")
    text = run_ks("doctor").stdout
    assert "fa3_fwd_interface 0.0.3" in text
