"""benchmarks/sol_table.py on a recorded H200 run: the per-family table of the kernel and FA3."""

from __future__ import annotations

import json
import sys

import pytest

from tests.app.conftest import DATA
from tests.app.test_sol_panel import with_light
from tests.harness.conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import sol_table  # noqa: E402


def recorded_with_fa3() -> dict:
    result = with_light(json.loads((DATA / "h200_seed_bench_first6.json").read_text()))
    for s in result["scenarios"]:
        s["baselines"]["fa3"] = s["time_ms"] * 0.5  # FA3 twice as fast in this made-up pairing
    return result


def test_the_table_gives_each_familys_fraction_for_the_kernel_and_fa3(tmp_path):
    result = recorded_with_fa3()
    t = sol_table.table(result)
    fams = {r["family"]: r for r in t["families"]}
    assert set(fams) == {"d64-h32-32", "d64-h32-32-causal"}
    full = fams["d64-h32-32"]
    assert full["n"] == 3 and full["library"] == pytest.approx(2 * full["kernel"])
    assert full["speed"] == pytest.approx(0.5)
    assert fams["d64-h32-32-causal"]["n"] == 2  # the invalid timing is left out
    assert t["all"]["n"] == 5 and t["invalid"] == 1
    src = tmp_path / "r.json"
    src.write_text(json.dumps(result))
    assert sol_table.main(["--from-json", str(src), "--out", str(tmp_path / "t")]) == 0
    md = (tmp_path / "t.md").read_text()
    assert "| d64-h32-32 | 3 | compute |" in md and "0.500x |" in md and "| **all** | 5 |" in md
    assert json.loads((tmp_path / "t.json").read_text())["all"]["n"] == 5


def test_a_result_without_scenarios_gives_no_table(tmp_path):
    src = tmp_path / "r.json"
    src.write_text(json.dumps({"error": "this task needs a CUDA device and none is visible"}))
    assert sol_table.main(["--from-json", str(src), "--out", str(tmp_path / "t")]) == 2
    assert not (tmp_path / "t.md").exists()
