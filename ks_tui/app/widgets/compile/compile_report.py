"""Turns a harness result's `compile` section into text: errors first, then resources.

Pure function of the result JSON (docs/internal-apis.md), kept apart from the widget so it
can be read and tested without a screen.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from ks_tui.harness.report import kernel_label

# Instructions worth a glance on Hopper, always shown: tensor-core MMAs and local-memory
# spills (a zero there is news too); other non-zero counts follow.
SASS_ALWAYS = ("HGMMA", "HMMA", "LDL", "STL")


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
    elif not comp.get("ok") and comp.get("log", "").strip():
        parts.append(Text(_tail(comp["log"], 12), "red"))  # no parsed errors: the raw tail says why
    warnings = [line for line in (comp.get("log") or "").splitlines() if "warning" in line.lower()]
    if comp.get("ok") and warnings:
        parts.append(Text("\n".join(warnings[-6:]), "yellow"))

    kernels = comp.get("kernels") or []
    if kernels:
        table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
        table.add_column("kernel", no_wrap=True, overflow="ellipsis")
        for col in ("regs", "spills", "smem", "stack"):
            table.add_column(col, justify="right", no_wrap=True, min_width=len(col))
        for k in kernels:
            spills = k.get("spills_bytes") or 0
            table.add_row(
                kernel_label(k),
                str(k.get("registers", "—")),
                Text(f"{spills} B", "bold red" if spills else ""),
                _kib(k.get("smem_bytes")),
                f"{k.get('stack_bytes', 0)} B",
            )
        parts.append(table)
        # ptxas's "Potential Performance Loss" notes (serialised wgmma): printed as info, so easy to miss
        notes = [f"{kernel_label(k)}: {note}" for k in kernels for note in k.get("perf_warnings") or []]
        if notes:
            parts.append(Text("\n".join(notes[:6] + ([f"... {len(notes) - 6} more"] if len(notes) > 6 else [])),
                              "bold red"))

    sass = {k: v for k, v in (comp.get("sass") or {}).items() if isinstance(v, int)}
    if sass:
        total = sass.pop("total", None)
        keys = [k for k in SASS_ALWAYS if k in sass]
        keys += sorted((k for k in sass if k not in SASS_ALWAYS and sass[k]), key=lambda k: -sass[k])
        line = Text("SASS ", "bold")
        for key in keys:
            style = "bold red" if key in ("LDL", "STL") and sass[key] else ""
            line.append(f"{key} {sass[key]}  ", style)
        if total is not None:
            line.append(f"of {total}", "dim")
        parts.append(line)

    if result.get("status") not in (None, "correct", "compile_error") and result.get("message"):
        parts.append(Text(f"{result['status']}: {result['message']}", "yellow"))
    if comp.get("command"):
        parts.append(Text(f"$ {comp['command']}", "dim"))
    return Group(*parts)


def _basename(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _kib(n: int | None) -> str:
    if n is None:
        return "—"
    return f"{n / 1024:.1f} KiB" if n >= 1024 else f"{n} B"


def _tail(log: str, n: int) -> str:
    return "\n".join(log.rstrip().splitlines()[-n:])
