"""Turns a harness result's `compile` section into text: errors first, then resources.

Pure function of the result JSON (docs/internal-apis.md), kept apart from the widget so it
can be read and tested without a screen.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

# Instructions worth a glance on Hopper: tensor-core MMAs, local-memory spills, barriers.
SASS_ORDER = ("HGMMA", "HMMA", "LDL", "STL", "LDGSTS", "UTMALDG", "BAR", "SHFL")


def compile_report(result: dict[str, Any]):
    if not result:
        return Text("Nothing built yet.", style="dim")
    comp = result.get("compile") or {}
    parts: list = []
    head = Text()
    if not comp:
        head.append("No compile information in this result.", "dim")
        return head
    if comp.get("ok"):
        head.append("compiled ", "green")
        head.append("(cached)" if comp.get("cached") else f"in {comp.get('seconds', 0):.1f}s", "dim")
    else:
        head.append("compile failed", "bold red")
    parts.append(head)

    errors = comp.get("errors") or []
    if errors:
        lines = Text()
        for err in errors:
            where = f"{_basename(err.get('file', ''))}:{err.get('line', '?')}"
            if err.get("column"):
                where += f":{err['column']}"
            lines.append(where, "bold red")
            lines.append(f"  {err.get('message', '')}\n")
        lines.rstrip()
        parts.append(lines)
    elif comp.get("log", "").strip():
        # No parsed errors: the raw tail says why it failed, or which warnings it gave.
        parts.append(Text(_tail(comp["log"], 12), "red" if not comp.get("ok") else "yellow"))

    kernels = comp.get("kernels") or []
    if kernels:
        table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
        for col in ("kernel", "regs", "spills", "smem", "stack"):
            table.add_column(col, justify="left" if col == "kernel" else "right")
        for k in kernels:
            spills = k.get("spills_bytes") or 0
            table.add_row(
                _short(k.get("name", "?"), 28),
                str(k.get("registers", "—")),
                Text(f"{spills} B", "bold red" if spills else ""),
                _kib(k.get("smem_bytes")),
                f"{k.get('stack_bytes', 0)} B",
            )
        parts.append(table)

    sass = comp.get("sass") or {}
    if sass:
        keys = [k for k in SASS_ORDER if k in sass] + sorted(k for k in sass if k not in SASS_ORDER)
        line = Text("SASS ", "bold")
        for key in keys:
            style = "bold red" if key in ("LDL", "STL") and sass[key] else ""
            line.append(f"{key} {sass[key]}  ", style)
        parts.append(line)

    if result.get("status") not in (None, "correct", "compile_error") and result.get("message"):
        parts.append(Text(f"{result['status']}: {result['message']}", "yellow"))
    if comp.get("command"):
        parts.append(Text(f"$ {comp['command']}", "dim"))
    return Group(*parts)


def _basename(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _short(name: str, width: int) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def _kib(n: int | None) -> str:
    if n is None:
        return "—"
    return f"{n / 1024:.1f} KiB" if n >= 1024 else f"{n} B"


def _tail(log: str, n: int) -> str:
    return "\n".join(log.rstrip().splitlines()[-n:])
