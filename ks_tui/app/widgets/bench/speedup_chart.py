"""A small block chart of speedup over attempts, drawn with Unicode blocks.

One column per attempt (the newest that fit): a bar for that attempt's speedup, a line for
the best correct speedup so far (by the attempt log's rule: whole-grid runs over quick and
subset ones, and runs on the device of the latest measurement), a dotted rule at 1.0x, and a
cross for attempts that did not produce a correct timing. Rendered by Rich at whatever width
the panel gives it.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text

from ks_tui import best_rule

EIGHTHS = " ▁▂▃▄▅▆▇█"
LABEL_WIDTH = 7


@dataclass(frozen=True)
class ChartPoint:
    number: int
    speedup: float | None  # None: not timed (a check-only run, or a failure)
    correct: bool
    full_grid: bool = True   # False for a quick or --scenarios subset run: its geomean covers other scenarios
    device: str = ""         # where it was measured ("" unknown)
    rollback: bool = False   # a rollback copies its target's figures: no measurement of its own

    @property
    def failed(self) -> bool:
        return not self.correct

    @property
    def timed(self) -> bool:
        return self.correct and self.speedup is not None


def points_from_attempts(attempts: list[dict]) -> list[ChartPoint]:
    return [ChartPoint(int(a.get("number", i + 1)), a.get("speedup"), a.get("status") == "correct",
                       full_grid=not (a.get("mode") or "").endswith(("quick", "subset")),
                       device=a.get("device") or "", rollback=a.get("rollback_of") is not None)
            for i, a in enumerate(attempts)]


def best_so_far(points: list[ChartPoint]) -> list[float | None]:
    """At each attempt, the best as the attempt log would have marked it then (store.mark_best): the
    fastest whole-grid run, or while there is none the fastest other run, among those measured on the
    device of the latest measurement (or naming none)."""
    out: list[float | None] = []
    for i in range(len(points)):
        seen = points[: i + 1]
        here = best_rule.latest_device((p.device, not p.rollback) for p in seen)
        best = best_rule.fastest([q for q in seen if q.timed and best_rule.comparable(q.device, here)],
                                 lambda q: q.speedup, lambda q: q.full_grid)
        out.append(best.speedup if best else None)
    return out


class SpeedupChart:
    def __init__(self, points: list[ChartPoint], height: int = 4):
        self.points = points
        self.height = max(2, height)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in self.lines(options.max_width):
            yield line

    def lines(self, width: int) -> list[Text]:
        if not self.points:
            return [Text("no attempts yet", style="dim")]
        cols = max(1, width - LABEL_WIDTH)
        shown = self.points[-cols:]
        best = best_so_far(self.points)[-cols:]
        values = [p.speedup for p in shown if p.speedup is not None] + [1.0]
        top = max(values) * 1.1
        rows = self.height
        cells = rows * 8  # vertical resolution in eighths of a row

        def level(x: float) -> int:
            return max(0, min(cells, round(x / top * cells)))

        one = level(1.0)
        grid: list[Text] = []
        for r in range(rows):
            row_floor = (rows - 1 - r) * 8  # eighths below this row
            text = Text(no_wrap=True)
            text.append(_label(r, rows, top, one), "dim")
            for p, b in zip(shown, best):
                text.append(*_cell(p, b, row_floor, level, one, r == rows - 1))
            grid.append(text)
        legend = Text(no_wrap=True, overflow="ellipsis")
        legend.append(" " * LABEL_WIDTH)
        legend.append(f"#{shown[0].number}", "dim")
        legend.append("  █ attempt ", "green")
        legend.append("━ best ", "magenta")
        legend.append("┈ 1.0x ", "dim")
        legend.append("× failed ", "red")
        legend.append("· not timed", "dim")
        grid.append(legend)
        return grid


def _label(r: int, rows: int, top: float, one: int) -> str:
    """The 1.0x row is labelled; the top row carries the scale unless 1.0x sits there."""
    one_row = rows - 1 - min(one, rows * 8 - 1) // 8
    if r == one_row:
        return " 1.00x "
    if r == 0:
        return f"{top:5.2f}x ".rjust(LABEL_WIDTH)
    return " " * LABEL_WIDTH


def _cell(p: ChartPoint, best: float | None, row_floor: int, level, one: int, bottom: bool):
    if not p.timed and bottom:
        # A correct check-only run is no failure: it just has no speedup to draw.
        return ("×", "bold red") if p.failed else ("·", "dim")
    bar = level(p.speedup) - row_floor if p.timed else 0
    best_level = level(best) if best is not None else -1
    if 0 <= best_level - row_floor < 8 and (not p.timed or best_level > level(p.speedup)):
        return ("━", "magenta")  # the best so far sits above this bar, in this row
    if bar >= 8:
        return ("█", "green" if p.speedup >= 1.0 else "yellow")
    if bar > 0:
        return (EIGHTHS[bar], "green" if p.speedup >= 1.0 else "yellow")
    if 0 <= one - row_floor < 8:
        return ("┈", "dim")
    return (" ", "")
