"""The GPU edge test's task (tests/flash/test_gpu_best_edges.py) loads on any machine: a task.yaml change that breaks
it shows here on CI, not first on a lent GPU (the grid's `family` field once made every edge run exit 2 there)."""

from __future__ import annotations

from ks_tui.task import load_task
from tests.flash.test_gpu_best_edges import EDGE_SHAPES, edge_task


def test_the_edge_task_loads_with_every_edge_shape(tmp_path):
    task = load_task(edge_task(tmp_path), tmp_path)
    ids = [s.id for s in task.scenarios]
    assert len(ids) == len(EDGE_SHAPES) == len(set(ids))
    assert "d64-h2-2-q300-k100-bf16-causal" in ids  # s_q > s_k: rows that see no key
