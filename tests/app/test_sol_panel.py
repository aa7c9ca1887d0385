"""The Benchmark panel's speed of light: a SoL column per scenario, a line per family, invalid timings marked."""

from __future__ import annotations

import json

from ks_tui import events as ev
from ks_tui.app.app import KernelSeekApp
from ks_tui.harness import sol
from ks_tui.harness.result import summarize
from ks_tui.task import load_task
from tests.app.conftest import DATA, shown, wait_for
from tests.harness.conftest import REPO

PEAKS = {"matmul_tflops": {"bf16": 800.0}, "copy_gbps": 3300.0}  # H200-like, for this recorded run


def with_light(result: dict) -> dict:
    """The recorded H200 seed run judged as the harness judges it now (harness/sol.py), its last
    scenario's time cut to an impossible one."""
    task = load_task(REPO / "kernels" / "flash_attn_fwd", REPO)
    result["scenarios"][-1]["time_ms"] = 0.01
    for s in result["scenarios"]:
        sc = task.scenario(s["id"])
        s["family"] = task.family_of(sc)
        lim = sol.limits_ms(task.flops_of(sc), task.bytes_of(sc), PEAKS, "bf16")
        s["speed_of_light"] = sol.speed_of_light(lim, s["time_ms"])
        if sol.above_light(s["speed_of_light"]):
            s["invalid"] = [sol.above_light(s["speed_of_light"])]
    return summarize(result)


async def test_the_bench_panel_shows_the_fraction_the_families_and_an_invalid_timing():
    result = with_light(json.loads((DATA / "h200_seed_bench_first6.json").read_text()))
    assert result["invalid"] == 1
    app = KernelSeekApp()
    async with app.run_test(size=(120, 36)) as pilot:
        app.post_engine_event(ev.AttemptRecorded({"number": 1, "status": "correct", "correct": result["correct"],
                                                  "speedup": None, "best": False, "author": "agent"}, result))
        await wait_for(pilot, lambda: "SoL by family" in shown(app, "#bench-sol"), "the family line")
        line = shown(app, "#bench-sol")
        assert "d64-h32-32 " in line and "d64-h32-32-causal " in line and "1 invalid timing" in line
        table = app.main_screen.query_one("#bench-table")
        cells = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        assert sum(r[1] == "invalid" for r in cells) == 1
        assert all(r[3].endswith(("% C", "% M")) for r in cells)
