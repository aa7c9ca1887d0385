"""Short, stable renderings of numbers and results, shared by the panels and screens."""

from __future__ import annotations

from datetime import datetime
from typing import Any

STATUS_STYLE = {
    "correct": "green",
    "incorrect": "bold red",
    "compile_error": "bold red",
    "crashed": "bold red",
    "timeout": "bold red",
    "cancelled": "yellow",
    "unchecked": "yellow",
}


def speedup(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}x"


def millis(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x:.3f}" if x < 100 else f"{x:.1f}"


def tflops(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x:.2f}" if x < 10 else f"{x:.1f}"


def error_measure(err: dict[str, Any] | None) -> str:
    """The scenario's measured error against its bound, e.g. '3.1e-06 ≤ 1.2e-04'."""
    if not err:
        return "—"
    got, bound = err.get("max_abs"), err.get("bound")
    if got is None:
        return "—"
    if bound is None:
        return f"{got:.1e}"
    sign = "≤" if got <= bound else ">"
    return f"{got:.1e}{sign}{bound:.1e}"


def clock(value: Any) -> str:
    """Attempt time as 'MM-DD HH:MM' from a datetime or an ISO string."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return value[:16]
    if isinstance(value, datetime):
        return value.strftime("%m-%d %H:%M")
    return "—"


def one_line(text: str, width: int) -> str:
    """First line of `text`, cut to `width` characters with an ellipsis."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= width else line[: max(0, width - 1)] + "…"
