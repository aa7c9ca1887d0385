"""On a GPU: where FA3 imports (either module name), every bench times it on the bf16
scenarios; where it does not, the result says the speedup is against weaker libraries.

Skipped without CUDA (CI has no GPU); run with `python3 -m pytest -m gpu tests/harness`.
"""

from __future__ import annotations

import json

import pytest

from ks_tui.harness import gpu_baselines
from ks_tui.harness.reference_api import Unavailable
from tests.harness.conftest import REPO, run_ks

torch = pytest.importorskip("torch")

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]

TASK = REPO / "kernels" / "flash_attn_fwd"
# Short bf16 scenarios of both masks and an fp16 one (which the fa3-fwd wheel refuses).
SCENARIOS = "d128-h16-16-s512,d64-h32-8-s1024-causal,d128-h16-16-s1024-fp16"


def test_fa3_timed_where_importable():
    try:
        found, _ = gpu_baselines.fa3_module()
    except Unavailable:
        found = None
    out = run_ks("bench", str(TASK), "--scenarios", SCENARIOS, "--json", timeout=600)
    result = json.loads(out.stdout)
    assert result["status"] == "correct", result.get("message")
    # The libraries' first calls were made during the compile and the check (harness/warmup.py), none failed.
    t = result["timings"]
    assert t["warmup_calls"] >= 1 and t["warmup_failed"] == 0, t
    assert t["warmup_stop"] in ("all done", "bench started"), t["warmup_stop"]
    by_id = {s["id"]: s for s in result["scenarios"]}
    bf16 = [s for sid, s in by_id.items() if not sid.endswith("-fp16")]
    if found is None:
        assert result["baseline_caveat"].startswith("FA3"), result["baseline_caveat"]
        pytest.skip("FA3 is not installed here: the caveat is shown (checked); install fa3-fwd to time it")
    for s in bf16:
        assert "fa3" in s["baselines"], (f"{found} imports but FA3 was not timed on {s['id']}: "
                                         f"{s['skipped_baselines'].get('fa3')}")
    fp16 = by_id["d128-h16-16-s1024-fp16"]
    assert "fa3" in fp16["baselines"] or "FP16" in fp16["skipped_baselines"].get("fa3", "")
    assert "fa3" in result["geomean_by_baseline"] and result["baseline_caveat"] is None


def test_a_pre_started_child_warms_the_libraries_up_while_it_waits():
    """The engine's pre-started child makes the libraries' first calls on the quick scenarios while no job has
    come (harness/warm.py), on the thread that then runs the job; the run is as correct as a cold one."""
    import threading

    from ks_tui.harness.client import run_harness
    from ks_tui.harness.warm import WarmPool
    from ks_tui.task import load_task

    task = load_task(TASK, REPO)
    pool = WarmPool()
    try:
        pool.prime(task.dir)
        threading.Event().wait(20)  # the model's turn: torch is imported, then the first calls are made
        r = run_harness(task, None, mode="bench", quick=True, pool=pool, timeout=600)
    finally:
        pool.close()
    t = r["timings"]
    assert r["status"] == "correct", r.get("message")
    assert t.get("warm_start") is True, t
    assert t["warm_prewarm_calls"] >= 1 and t["warm_prewarm_stop"] in ("all done", "the job came"), t
