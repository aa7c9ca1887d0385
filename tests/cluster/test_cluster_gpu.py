"""On a GPU box: `--workers gpus` pins one GPU per worker, each worker times its own baselines,
and the kernel is built once and shipped. Skipped without CUDA."""

from __future__ import annotations

import json
import shutil

import pytest

from ks_tui.cluster.connect import visible_gpus
from tests.cluster.test_cluster_runs import run_ks


def _gpus() -> list[str]:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or shutil.which("nvidia-smi") is None or shutil.which("nvcc") is None:
        pytest.skip("needs CUDA, nvidia-smi and nvcc")
    return visible_gpus()


@pytest.mark.gpu
def test_one_worker_per_gpu_checks_the_quick_subset():
    gpus = _gpus()
    out = run_ks("check", "flash_attn_fwd", "--quick", "--json", "--workers", "gpus", timeout=900)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert r["status"] == "correct"
    used = [w["gpu"] for w in r["workers"]]
    assert len(set(used)) == len(used) and set(used) <= set(gpus)  # each worker its own GPU
    assert len(r["cluster"]["compiled_on"]) == 1  # one nvcc build for all of them


@pytest.mark.gpu
def test_two_gpus_bench_each_worker_against_its_own_baselines():
    if len(_gpus()) < 2:
        pytest.skip("needs two GPUs")
    out = run_ks("bench", "flash_attn_fwd", "--quick", "--json", "--workers", "2", timeout=900)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert r["status"] == "correct" and len(r["workers"]) == 2
    for s in r["scenarios"]:
        assert s["worker"] in {w["address"] for w in r["workers"]}
        assert s["speedup"] == pytest.approx(s["baseline"]["time_ms"] / s["time_ms"])
