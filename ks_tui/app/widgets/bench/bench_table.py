"""Per-scenario results of one harness run as a sortable table.

Losing scenarios (speedup below 1) and failing ones are coloured so they stand out; `s`
cycles the sort column and clicking a header sorts by it. SoL is the speed-of-light fraction with its
bound (C compute, M memory, or the task's own limit, e.g. exp); an invalid timing says so in status.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.binding import Binding
from textual.widgets import DataTable

from ks_tui.app import formatting as fmt
from ks_tui.app.widgets.tables import fill_table

COLUMNS = (  # key, label; the wide columns last so a narrow panel still shows the numbers
    ("scenario", "scenario"),
    ("status", "status"),
    ("speedup", "speedup"),
    ("sol", "SoL"),
    ("time", "ms"),
    ("tflops", "TFLOP/s"),
    ("baseline", "baseline ms"),
    ("error", "error ≤ bound"),
)


SOL_BOUND = {"compute": "C", "memory": "M"}  # short bound names; a task's own limit keeps its name


def _sort_value(row: dict[str, Any], key: str):
    """Sort key per column; missing numbers sort last."""
    big = float("inf")
    if key == "scenario":
        return row.get("id", "")
    if key == "status":
        return (row.get("ok") is True, row.get("id", ""))
    if key == "error":
        return (row.get("error") or {}).get("max_abs") or big
    if key == "time":
        return row.get("time_ms") if row.get("time_ms") is not None else big
    if key == "tflops":
        return -(row.get("tflops") or 0.0)
    if key == "baseline":
        return (row.get("baseline") or {}).get("time_ms") or big
    if key == "sol":  # the farthest from the machine's limit first: the most left to gain
        fraction = (row.get("speed_of_light") or {}).get("fraction")
        return fraction if fraction is not None else big
    return row.get("speedup") if row.get("speedup") is not None else big


class BenchTable(DataTable):
    BINDINGS = [Binding("s", "cycle_sort", "Sort", show=True)]

    DEFAULT_CSS = """
    BenchTable { height: 1fr; }
    """

    def __init__(self, **kwargs):
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self._rows: list[dict[str, Any]] = []
        self.sort_key = "speedup"  # the losing scenarios first: what to work on next

    def on_mount(self) -> None:
        self._refill()

    def show_scenarios(self, scenarios: list[dict[str, Any]]) -> None:
        self._rows = list(scenarios)
        self._refill()

    def action_cycle_sort(self) -> None:
        keys = [k for k, _ in COLUMNS]
        self.sort_key = keys[(keys.index(self.sort_key) + 1) % len(keys)]
        self._refill()
        self.notify(f"sorted by {dict(COLUMNS)[self.sort_key]}", timeout=2)

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        self.sort_key = str(event.column_key.value)
        self._refill()

    def _refill(self) -> None:
        rows = sorted(self._rows, key=lambda r: _sort_value(r, self.sort_key))
        fill_table(self, COLUMNS, [(row.get("id"), _cells(row)) for row in rows])


def _cells(row: dict[str, Any]) -> list[Text]:
    ok = row.get("ok")
    sp = row.get("speedup")
    losing = sp is not None and sp < 1.0
    base = row.get("baseline") or {}
    base_txt = "—" if not base else f"{fmt.millis(base.get('time_ms'))} {base.get('name', '')}"
    invalid = bool(ok and row.get("invalid"))
    sol = row.get("speed_of_light") or {}
    fraction = sol.get("fraction")
    sol_txt = "—" if fraction is None else f"{fraction * 100:.0f}% {SOL_BOUND.get(sol.get('bound'), sol.get('bound', ''))}"
    cells = {
        "scenario": Text(row.get("id", "?"), style="bold red" if not ok else ("yellow" if losing else "")),
        "status": Text("invalid" if invalid else "ok" if ok else "FAIL",
                       style="bold yellow" if invalid else "green" if ok else "bold red"),
        "sol": Text(sol_txt, justify="right", style="bold yellow" if invalid else "" if fraction is not None else "dim"),
        "speedup": Text(fmt.speedup(sp), justify="right",
                        style="bold red" if losing else ("bold green" if sp is not None else "dim")),
        "time": Text(fmt.millis(row.get("time_ms")), justify="right"),
        "tflops": Text(fmt.tflops(row.get("tflops")), justify="right"),
        "baseline": Text(base_txt),
        "error": Text(fmt.error_measure(row.get("error")), style="" if ok else "red"),
    }
    return [cells[key] for key, _ in COLUMNS]
