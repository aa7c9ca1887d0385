"""The Benchmark panel: headline numbers, a progress bar while the harness runs, the
per-scenario table and the speedup-over-attempts chart."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.containers import Horizontal, Vertical
from textual.widgets import Label, ProgressBar, Static

from ks_tui.app import formatting as fmt
from ks_tui.app.widgets.bench.bench_table import BenchTable
from ks_tui.app.widgets.bench.speedup_chart import SpeedupChart, points_from_attempts
from ks_tui.harness.result import baseline_caveat, baseline_order


def headline(result: dict[str, Any]) -> Text:
    """'correct 18/18 · geomean 1.234x vs best baseline · torch_sdpa 1.234x · bench'."""
    if not result:
        return Text("No benchmark yet.", style="dim")
    status = result.get("status", "?")
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(status, fmt.STATUS_STYLE.get(status, ""))
    if result.get("correct"):
        text.append(f" {result['correct']}")
    gm = result.get("geomean_speedup")
    if gm is not None:
        text.append(" · geomean ")
        text.append(fmt.speedup(gm), "bold green" if gm >= 1 else "bold red")
    caveat = baseline_caveat(result)
    if caveat:  # right beside the geomean: a figure against weaker libraries is not one against the anchor
        text.append(f" · {caveat}", "bold yellow")
    by = result.get("geomean_by_baseline") or {}
    for name in baseline_order(by):
        text.append(f" · vs {name} {fmt.speedup(by[name])}", "dim")
    mode = result.get("mode")
    if mode:
        scope = " quick" if result.get("quick") else " subset" if result.get("selection") else ""
        text.append(f" · {mode}{scope}", "dim")
    return text


def sol_summary(result: dict[str, Any]) -> Text:
    """'SoL by family: d128-h32-8 72% · d128-h32-8-causal 65% · ...' from the result's family summary
    (harness/sol.py); empty without one."""
    fams = (result.get("speed_of_light") or {}).get("families") or []
    text = Text(overflow="fold")
    if not fams:
        return text
    text.append("SoL by family: ", "bold")
    for i, f in enumerate(fams):
        if i:
            text.append(" · ", "dim")
        text.append(f"{f['family']} ")
        text.append(f"{f['geomean'] * 100:.0f}%", "bold")
    if result.get("invalid"):
        text.append(f"  {result['invalid']} invalid timing(s), not in the geomean", "bold yellow")
    return text


class BenchPanel(Vertical):
    DEFAULT_CSS = """
    BenchPanel { height: 1fr; }
    BenchPanel #bench-headline { height: 1; }
    BenchPanel #bench-progress-row { height: 1; display: none; }
    BenchPanel.-running #bench-progress-row { display: block; }
    BenchPanel #bench-progress-label { width: 1fr; padding-left: 1; }
    BenchPanel #bench-chart { height: auto; max-height: 5; }
    BenchPanel #bench-sol { height: auto; max-height: 4; display: none; }
    """

    def compose(self):
        yield Static(Text("No benchmark yet.", style="dim"), id="bench-headline")
        with Horizontal(id="bench-progress-row"):
            yield ProgressBar(total=None, show_eta=False, id="bench-progress")
            yield Label("", id="bench-progress-label")
        yield BenchTable(id="bench-table")
        yield Static("", id="bench-sol")
        yield Static("", id="bench-chart")

    def harness_started(self, mode: str, quick: bool, total: int) -> None:
        self.add_class("-running")
        self._workers: dict[str, tuple[int, int, str]] = {}
        bar = self.query_one(ProgressBar)
        bar.update(total=total or None, progress=0)
        self.query_one("#bench-progress-label", Label).update(f"{mode}{' quick' if quick else ''} 0/{total}")

    def harness_progress(self, done: int, total: int, scenario: str, phase: str, worker: str = "") -> None:
        self.add_class("-running")
        label = self.query_one("#bench-progress-label", Label)
        if not worker:
            self.query_one(ProgressBar).update(total=total or None, progress=done)
            label.update(f"{phase} {done}/{total} {scenario}")
            return
        # A run spread over a cluster: each worker's own shard, and the bar over all of them.
        workers = getattr(self, "_workers", {})
        workers[worker] = (done, total, phase)
        self._workers = workers
        self.query_one(ProgressBar).update(total=sum(t for _, t, _ in workers.values()) or None,
                                           progress=sum(d for d, _, _ in workers.values()))
        label.update(" · ".join(f"{w.rsplit('/', 1)[-1]} {ph} {d}/{t}"
                                for w, (d, t, ph) in sorted(workers.items())))

    def harness_finished(self) -> None:
        self.remove_class("-running")

    def show_result(self, result: dict[str, Any]) -> None:
        self.harness_finished()
        self.query_one("#bench-headline", Static).update(headline(result))
        self.query_one(BenchTable).show_scenarios(result.get("scenarios") or [])
        sol = sol_summary(result)
        box = self.query_one("#bench-sol", Static)
        box.update(sol)
        box.display = bool(sol.plain)

    def show_attempts(self, attempts: list[dict[str, Any]]) -> None:
        self.query_one("#bench-chart", Static).update(SpeedupChart(points_from_attempts(attempts), height=3))
