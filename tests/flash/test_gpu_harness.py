"""On a GPU: the harness passes the seed kernel and catches planted wrong kernels.

Each planted kernel is the seed with one realistic bug patched in; the harness must mark
exactly the scenarios that bug breaks as failed, and pass the ones it does not touch.
Skipped without CUDA (CI has no GPU); run on the H200 with
`python3 -m pytest -m gpu tests/flash`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

REPO = Path(__file__).resolve().parents[2]
TASK = REPO / "kernels" / "flash_attn_fwd"
SEED = TASK / "kernel.cu"

pytestmark = [pytest.mark.gpu, pytest.mark.slow,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


def run_harness(source: Path, tmp_path: Path, *extra: str) -> dict:
    out = tmp_path / f"result-{source.stem}-{len(list(tmp_path.iterdir()))}.json"
    env = dict(os.environ, KS_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [sys.executable, "-m", "ks_tui.harness", "run", "--task", str(TASK), "--source", str(source),
         "--mode", "check", "--out", str(out), *extra],
        capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text())


def planted(tmp_path: Path, name: str, old: str, new: str) -> Path:
    text = SEED.read_text()
    assert text.count(old) == 1, f"the seed changed: cannot plant {name!r}"
    path = tmp_path / f"{name}.cu"
    path.write_text(text.replace(old, new))
    return path


def verdicts(result: dict) -> dict[str, bool]:
    return {s["id"]: s["ok"] for s in result["scenarios"]}


def test_seed_passes_the_quick_subset(tmp_path):
    result = run_harness(SEED, tmp_path, "--quick")
    assert result["status"] == "correct", result["message"]
    assert result["correct"] == "13/13"
    assert result["compile"]["ok"]
    if result["compile"].get("sass"):
        assert result["compile"]["sass"].get("HMMA", 0) > 0  # tensor cores are in use


def test_kernel_ignoring_causal_is_caught(tmp_path):
    # The bug: compute full attention whatever `causal` says.
    src = planted(tmp_path, "ignores_causal",
                  "if (col >= s_k || (causal && col > row + diag)) s[i][j] = -INFINITY;",
                  "if (col >= s_k) s[i][j] = -INFINITY;")
    src = Path(src)
    text = src.read_text().replace("if (causal) n_end = min(s_k, m0 + kBlockM + diag);", "")
    src.write_text(text)
    ids = ["d128-h16-16-s512", "d128-h16-16-s512-causal", "d128-h16-16-q128-k512-causal"]
    result = run_harness(src, tmp_path, "--scenarios", ",".join(ids))
    assert result["status"] == "incorrect"
    assert verdicts(result) == {ids[0]: True, ids[1]: False, ids[2]: False}
    bad = next(s for s in result["scenarios"] if s["id"] == ids[1])
    assert bad["error"]["max_abs"] > bad["error"]["bound"]


def test_kernel_skipping_the_ragged_tail_is_caught(tmp_path):
    # The bug: only whole key tiles are visited, so the last s_k % kBlockN keys are dropped.
    src = planted(tmp_path, "skips_tail",
                  "const int n_tiles = n_end > 0 ? (n_end + kBlockN - 1) / kBlockN : 0;",
                  "const int n_tiles = n_end > 0 ? n_end / kBlockN : 0;")
    ids = ["d128-h16-16-s512", "d128-h16-16-s495", "d256-h8-8-s495-causal"]
    result = run_harness(src, tmp_path, "--scenarios", ",".join(ids))
    assert result["status"] == "incorrect"
    assert verdicts(result) == {ids[0]: True, ids[1]: False, ids[2]: False}


def test_kernel_leaving_rows_unwritten_is_caught(tmp_path):
    # The bug: the last partial block of query rows is never stored (output stays NaN).
    src = planted(tmp_path, "drops_rows", "if (row < s_q) {", "if (row < (s_q / 64) * 64) {")
    ids = ["d128-h16-16-s512", "d128-h16-16-s495"]
    result = run_harness(src, tmp_path, "--scenarios", ",".join(ids))
    assert verdicts(result) == {ids[0]: True, ids[1]: False}
    bad = next(s for s in result["scenarios"] if s["id"] == ids[1])
    assert bad["error"].get("nonfinite", 0) > 0


def test_bench_times_baselines_alongside_unless_cached_ones_are_asked_for(tmp_path):
    sid = "d128-h16-16-s512-causal"
    first = run_harness(SEED, tmp_path, "--mode", "bench", "--scenarios", sid)
    again = run_harness(SEED, tmp_path, "--mode", "bench", "--scenarios", sid)
    cached = run_harness(SEED, tmp_path, "--mode", "bench", "--scenarios", sid, "--cached-baselines")
    for r in (first, again):
        (entry,) = r["scenarios"]
        assert entry["baselines"] and not entry.get("cached_baselines")
        assert entry["timing"]["rounds"] == 5
    (entry,) = cached["scenarios"]
    assert sorted(entry["cached_baselines"]) == sorted(entry["baselines"])
    # The cache holds the second run's timings (each fresh run refreshes it).
    (second,) = again["scenarios"]
    assert entry["baselines"] == second["baselines"]


def test_a_kernel_faulting_on_the_gpu_is_a_crash_not_bad_task_input(tmp_path):
    # The bug: a store through a wild device pointer on one shape. The CUDA error may surface in
    # the reference's next allocation; it must still read as the kernel's crash, not as a broken task.
    src = planted(tmp_path, "wild_store", "if (row < s_q) {", "if (s_q == 495) *(volatile float*)0x8 = 1.f;\n if (row < s_q) {")
    ids = ["d128-h16-16-s512", "d128-h16-16-s495", "d128-h16-16-s1024"]
    env = dict(os.environ, KS_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-m", "ks_tui", "check", str(TASK), "--source", str(src),
                           "--scenarios", ",".join(ids), "--json"], capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 1, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["status"] == "crashed" and "s495" in result["message"], result["message"]
