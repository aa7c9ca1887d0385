"""Filling a DataTable with columns sized to their contents.

Columns get explicit widths computed here rather than DataTable's auto widths, which are
measured later, on idle: a frame drawn in between shows stale widths that can stick, so
the same data sometimes drew differently.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import DataTable


def _width(cell) -> int:
    plain = cell.plain if isinstance(cell, Text) else str(cell)
    return max((cell_len(line) for line in plain.splitlines()), default=0)


def fill_table(table: DataTable, columns: Sequence[tuple[str, str]], rows: Sequence[tuple[str, list]]) -> None:
    """Replace the table's columns (key, label) and rows (key, cells)."""
    widths = [max([cell_len(label)] + [_width(cells[i]) for _, cells in rows]) for i, (_, label) in
              enumerate(columns)]
    cursor = table.cursor_row
    table.clear(columns=True)
    for (key, label), width in zip(columns, widths):
        table.add_column(label, key=key, width=width)
    for key, cells in rows:
        table.add_row(*cells, key=key)
    if rows:
        table.move_cursor(row=min(cursor, len(rows) - 1), animate=False)
