"""Plain-text views of sessions and attempts for the CLI (the TUI draws its own)."""

from __future__ import annotations

from ks_tui.attempts.model import Attempt, SessionSummary, current_device, fastest_on, short_device, since_best
from ks_tui.attempts.remarks import remark_text
from ks_tui.harness.report import family_lines, kernel_lines, measurement_lines, sol_cell, warning_lines
from ks_tui.harness.result import baseline_caveat, by_baseline_text


def _speed(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}x"


def _when(a_time) -> str:
    return a_time.astimezone().strftime("%Y-%m-%d %H:%M:%S")


def attempt_line(a: Attempt, here: str = "", devices: tuple[str, ...] = ()) -> str:
    """One row of `ks log`; `here`: the session's current device (an attempt measured elsewhere says where,
    shortened against the session's `devices`: short_device)."""
    mark = "*" if a.best else " "
    # before the summary, not in the tail: a terminal-wide `ks log` cuts the line's end
    where = f"[on {short_device(a.device, devices)}] " if here and a.device and a.device != here else ""
    extra = []
    if a.question:
        declared = any(r.get("question") for r in a.remarks)
        extra.append(f"q:{a.question}{' (declared by a remark)' if declared else ''}")
    if a.rollback_of is not None:
        extra.append(f"rollback of {a.rollback_of}")
    if a.remarks:
        extra.append(f"{len(a.remarks)} remark{'' if len(a.remarks) == 1 else 's'}")
    tail = f" [{', '.join(extra)}]" if extra else ""
    when = a.time.astimezone().strftime("%m-%d %H:%M")
    return (f"{mark}{a.number:>4}  {a.short}  {when}  {a.author:<5}  {a.status:<13}  "
            f"{a.correct or '-':>7}  {_speed(a.speedup):>8}  {a.mode or '-':<11}  {where}{a.summary}{tail}")


def device_change_note(attempts: list[Attempt], new: Attempt) -> str:
    """A line for `ks try` when `new` was measured on another device than the measurement before it
    ("" otherwise): from here on the best is chosen among this device's attempts (store.mark_best)."""
    measured = [a for a in attempts if a.number < new.number and a.device and a.rollback_of is None]
    if not new.device or new.rollback_of is not None or not measured or measured[-1].device == new.device:
        return ""
    old = measured[-1].device
    return (f"note: measured on {new.device}; attempt {measured[-1].number} ran on {old} "
            f"({_fastest_on(attempts, old)}). Speedups from different devices are not compared: the best is now "
            "chosen among this device's runs. To carry a kernel over, measure it here: `ks rollback N`, then "
            "`ks try --again`.")


def remarks_text(a: Attempt) -> str:
    """An attempt's remarks, a line each ("" when it has none)."""
    return "\n".join(f"remark {remark_text(r)}" for r in a.remarks)


def _fit(line: str, width: int | None) -> str:
    return line if width is None or len(line) <= width else line[: max(width - 1, 0)] + "…"


def log_table(attempts: list[Attempt], width: int | None = None) -> str:
    """One line per attempt; with `width` (a terminal's), long summaries are cut to fit."""
    head = (f" {'#':>4}  {'commit':<8}  {'time':<11}  {'by':<5}  {'status':<13}  {'correct':>7}  {'speedup':>8}"
            f"  {'scope':<11}  summary")
    here = current_device(attempts)
    devices = tuple(sorted({a.device for a in attempts if a.device}))
    lines = [_fit(head, width)] + [_fit(attempt_line(a, here, devices), width) for a in attempts]
    best, after = since_best(attempts)
    if best is not None:
        # A later run that equals the best (as recorded, 4 decimals) is no new best: say so, or the
        # count since the best reads as a mistake beside two equal speedups.
        top = next(a for a in attempts if a.number == best)
        ties = [a.number for a in attempts if a.number > best and a.status == "correct"
                and a.speedup == top.speedup and a.mode == top.mode]
        tie = f"; {', '.join(f'#{n}' for n in ties)} tie{'s' if len(ties) == 1 else ''} it" if ties else ""
        lines.append(f"(* best correct attempt: #{best}{tie}; {after} attempt{'' if after == 1 else 's'} since)")
    others = sorted({a.device for a in attempts if a.device and a.device != here})
    if others:
        elsewhere = [_fastest_on(attempts, d) for d in others]
        lines.append(f"(the best is chosen among runs on {here}, the latest measurement's device; "
                     + "; ".join(e for e in elsewhere if e) + ")")
    if any(a.remarks for a in attempts):
        lines.append("(an attempt's remarks: ks show N)")
    return "\n".join(lines)


def _fastest_on(attempts: list[Attempt], device: str) -> str:
    """"fastest on DEVICE: #N, S.SSSx" for a device other than the session's current one."""
    top = fastest_on(attempts, device)
    return f"fastest on {device}: #{top.number}, {_speed(top.speedup)}" if top else f"none timed on {device}"


def sessions_table(sessions: list[SessionSummary]) -> str:
    head = f"{'session':<22}  {'task':<18}  {'attempts':>8}  {'best':>12}  last activity"
    lines = [head]
    for s in sessions:
        best = "-" if s.best_speedup is None else f"{s.best_speedup:.3f}x (#{s.best_attempt})"
        note = "" if s.worktree_ok else "  (worktree missing)"
        lines.append(f"{s.id:<22}  {s.task:<18}  {s.attempts:>8}  {best:>12}  {_when(s.last_activity)}{note}")
    return "\n".join(lines)


def _num(x, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def result_text(result: dict) -> str:
    """Per-scenario results and compile problems of a harness result."""
    if not result:
        return "no harness result stored for this attempt"
    lines = [f"status {result.get('status')}  correct {result.get('correct', '-')}  "
             f"geomean {_speed(result.get('geomean_speedup'))}  mode {result.get('mode', '-')}"
             f"{' quick' if result.get('quick') else ' subset' if result.get('selection') else ''}"
             f"  device {result.get('device', '-')}"]
    by = by_baseline_text(result)
    if by:
        lines.append(f"geomean by baseline: {by}")
    caveat = baseline_caveat(result)
    if caveat:
        lines.append(caveat)
    if result.get("message"):
        lines.append(f"message: {result['message']}")
    comp = result.get("compile") or {}
    for err in (comp.get("errors") or [])[:10]:
        lines.append(f"  {err.get('file', '?')}:{err.get('line', '?')}: {err.get('message', '')}")
    lines += kernel_lines(result)
    scen = result.get("scenarios") or []
    if scen:
        lines.append(f"{'scenario':<36} {'ok':<4} {'max err':>10} {'bound':>10} {'ms':>10} {'TFLOP/s':>8} "
                     f"{'baseline':<14} {'base ms':>10} {'speedup':>8} {'SoL':>12}")
        for s in scen:
            err = s.get("error") or {}
            base = s.get("baseline") or {}
            ok = ("inv" if s.get("invalid") else "yes") if s.get("ok") else "NO"
            lines.append(f"{str(s.get('id'))[:36]:<36} {ok:<4} "
                         f"{_num(err.get('max_abs'), '.2e'):>10} {_num(err.get('bound'), '.2e'):>10} "
                         f"{_num(s.get('time_ms'), '.4f'):>10} {_num(s.get('tflops'), '.2f'):>8} "
                         f"{str(base.get('name') or '-')[:14]:<14} {_num(base.get('time_ms'), '.4f'):>10} "
                         f"{_speed(s.get('speedup')):>8} {sol_cell(s):>12}")
    lines += family_lines(result)
    lines += measurement_lines(result)
    lines += warning_lines(result)
    return "\n".join(lines)
