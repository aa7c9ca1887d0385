"""A compact text summary of a harness result, small enough to hand back to the model."""

from __future__ import annotations

from ks_tui.harness.report import family_lines, kernel_lines, measurement_lines, sol_cell, warning_lines
from ks_tui.harness.result import baseline_caveat, by_baseline_text

MAX_LOG_LINES = 25


def _fmt(x, spec=".3f", none="-") -> str:
    return none if x is None else format(x, spec)


def _scenario_line(s: dict) -> str:
    base = s.get("baseline") or {}
    parts = [s.get("id", "?"), "ok" if s.get("ok") else "FAIL"]
    if s.get("time_ms") is not None:
        parts.append(f"{_fmt(s['time_ms'])} ms")
    if base.get("time_ms") is not None:
        parts.append(f"{base.get('name', 'baseline')} {_fmt(base['time_ms'])} ms")
    if s.get("speedup") is not None:
        parts.append(f"{_fmt(s['speedup'], '.2f')}x")
    if (s.get("speed_of_light") or {}).get("fraction") is not None:
        parts.append(f"{sol_cell(s)}-bound speed of light")
    if s.get("invalid"):
        parts.append("INVALID: " + "; ".join(s["invalid"]))
    err = s.get("error") or {}
    if not s.get("ok") and err:
        parts.append(f"error {_fmt(err.get('max_abs'), '.3g')} > bound {_fmt(err.get('bound'), '.3g')}"
                     + (f" at {err['where']}" if err.get("where") else ""))
    return "  " + ", ".join(parts)


def summarize_result(result: dict, attempt: dict | None = None, note: str = "") -> str:
    lines = []
    head = f"status: {result.get('status', '?')}"
    if result.get("correct"):
        head += f", correct {result['correct']}"
    if result.get("geomean_speedup") is not None:
        head += f", geomean speedup {result['geomean_speedup']:.3f}x vs best baseline"
        by = by_baseline_text(result)
        head += f" ({by})" if by else ""
    lines.append(head)
    caveat = baseline_caveat(result)
    if caveat:
        lines.append(caveat)
    if attempt:
        lines.append(f"recorded as attempt {attempt.get('number')} ({str(attempt.get('sha', ''))[:10]})")
    if note:
        lines.append(note)
    if result.get("message") and result.get("status") != "correct":
        lines.append(f"why: {result['message']}")

    comp = result.get("compile") or {}
    errors = comp.get("errors") or []
    for e in errors[:10]:
        lines.append(f"  {e.get('file', '')}:{e.get('line', '?')}:{e.get('column', '')}: {e.get('message', '')}")
    if comp and not comp.get("ok", True) and not errors and comp.get("log"):
        log = comp["log"].strip().splitlines()
        lines += ["compile log (last lines):", *log[-MAX_LOG_LINES:]]
    lines += kernel_lines(result, every=False)  # a flash kernel has 44 functions: the ranges and the odd ones

    scen = result.get("scenarios") or []
    failed = [s for s in scen if not s.get("ok")]
    if failed:
        lines.append(f"failing scenarios ({len(failed)}):")
        lines += [_scenario_line(s) for s in failed[:5]]
    timed = sorted((s for s in scen if s.get("speedup") is not None), key=lambda s: s["speedup"])
    if timed:
        lines.append("slowest vs baseline:")
        lines += [_scenario_line(s) for s in timed[:3]]
        fastest = timed[max(3, len(timed) - 3):][::-1]  # never repeat a scenario listed above
        if fastest:
            lines.append("fastest vs baseline:")
            lines += [_scenario_line(s) for s in fastest]
    invalid = [s for s in scen if s.get("invalid")]
    if invalid:
        lines.append(f"invalid timings ({len(invalid)}, not in the geomean):")
        lines += [_scenario_line(s) for s in invalid[:5]]
    lines += family_lines(result)
    lines += measurement_lines(result)
    lines += warning_lines(result)
    if result.get("stderr_tail") and result.get("status") in ("crashed", "timeout"):
        lines += ["stderr (last lines):", *result["stderr_tail"].strip().splitlines()[-MAX_LOG_LINES:]]
    return "\n".join(lines)
