"""Per-scenario results of one harness run as a sortable table.

Losing scenarios (speedup below 1) and failing ones are coloured so they stand out; `s`
cycles the sort column and clicking a header sorts by it.
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
    ("time", "ms"),
    ("tflops", "TFLOP/s"),
    ("baseline", "baseline ms"),
    ("error", "error ≤ bound"),
)


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
    cells = {
        "scenario": Text(row.get("id", "?"), style="bold red" if not ok else ("yellow" if losing else "")),
        "status": Text("ok" if ok else "FAIL", style="green" if ok else "bold red"),
        "speedup": Text(fmt.speedup(sp), justify="right",
                        style="bold red" if losing else ("bold green" if sp is not None else "dim")),
        "time": Text(fmt.millis(row.get("time_ms")), justify="right"),
        "tflops": Text(fmt.tflops(row.get("tflops")), justify="right"),
        "baseline": Text(base_txt),
        "error": Text(fmt.error_measure(row.get("error")), style="" if ok else "red"),
    }
    return [cells[key] for key, _ in COLUMNS]
