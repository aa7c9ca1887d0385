"""On a GPU: the inner loop's shortcuts judge as before (pre-started child, SASS beside the check, references
made during the compile). Skipped without CUDA; run with `python3 -m pytest -m gpu tests/flash/test_gpu_loop.py`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from ks_tui.harness.client import run_harness  # noqa: E402
from ks_tui.harness.warm import WarmPool  # noqa: E402
from ks_tui.task import load_task  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SEED = REPO / "kernels" / "flash_attn_fwd" / "kernel.cu"

pytestmark = [pytest.mark.gpu, pytest.mark.slow,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


@pytest.fixture(scope="module")
def task():
    return load_task("flash_attn_fwd", REPO)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("ks-cache")


def test_a_cold_build_carries_its_sass_summary_and_caches_it(task, tmp_path, monkeypatch):
    monkeypatch.setenv("KS_CACHE_DIR", str(tmp_path / "fresh"))
    r = run_harness(task, SEED, scenarios=task.quick[:1])
    assert r["status"] == "correct", r["message"]
    comp = r["compile"]
    assert not comp["cached"] and comp["sass_reason"] != "pending"
    assert "sass_s" in r["timings"]
    if shutil.which("cuobjdump"):
        assert comp["sass"] and comp["sass"].get("HMMA", 0) + comp["sass"].get("HGMMA", 0) > 0
    (cached,) = (tmp_path / "fresh" / "build").glob("??/*/compile.json")
    assert json.loads(cached.read_text())["sass"] == comp["sass"]


def test_prefetched_references_judge_the_bf16_check_as_computed_ones(task, cache, monkeypatch):
    monkeypatch.setenv("KS_CACHE_DIR", str(cache))
    runs = {}
    for how in ("all", "0"):
        monkeypatch.setenv("KS_REF_PREFETCH", how)
        runs[how] = run_harness(task, SEED, quick=True, seed=2024)
    pre, plain = runs["all"], runs["0"]
    assert pre["timings"]["ref_prefetch_used"] > 0 and pre["timings"]["ref_prefetch_missed"] == 0
    assert [s["ok"] for s in pre["scenarios"]] == [s["ok"] for s in plain["scenarios"]]
    for a, b in zip(pre["scenarios"], plain["scenarios"]):
        assert a["error"]["max_abs"] == pytest.approx(b["error"]["max_abs"], rel=1e-6)
        assert a["error"]["bound"] == pytest.approx(b["error"]["bound"], rel=1e-6)


def test_two_checks_through_the_pool_the_second_warm(task, cache, monkeypatch):
    monkeypatch.setenv("KS_CACHE_DIR", str(cache))
    pool = WarmPool()
    try:
        first = run_harness(task, SEED, quick=True, pool=pool)
        second = run_harness(task, SEED, quick=True, pool=pool)
    finally:
        pool.close()
    assert first["status"] == second["status"] == "correct", (first["message"], second["message"])
    assert second["timings"]["warm_start"] is True and "warm_start" not in first["timings"]
