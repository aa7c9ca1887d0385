"""Human-readable rendering of a result dict: the scenario table and one summary line.

Standard library only; used by `ks check`/`ks bench` and reusable by the TUI and the agent's
tool result.
"""

from __future__ import annotations

from ks_tui.harness.result import baseline_caveat, by_baseline_text


def _num(x, fmt: str, missing: str = "-") -> str:
    return missing if x is None else format(x, fmt)


def _error_cell(s: dict) -> str:
    e = s.get("error") or {}
    if e.get("nonfinite"):
        return f"{e['nonfinite']} NaN/Inf"
    if e.get("max_abs") is None:
        return "-" if s.get("ok") or not e else "see below"
    return f"{e['max_abs']:.1e}/{e['bound']:.0e}"


def _status_cell(s: dict) -> str:
    if s.get("ok") and s.get("invalid"):
        return "invalid"
    return "ok" if s.get("ok") else "FAIL"


def sol_cell(s: dict) -> str:
    """'72% compute': the scenario's speed-of-light fraction and what bounds it ('-' when unknown)."""
    sol = s.get("speed_of_light") or {}
    if sol.get("fraction") is None:
        return "-"
    return f"{sol['fraction'] * 100:.0f}% {sol.get('bound', '?')}"


def scenario_table(result: dict) -> str:
    header = ["scenario", "status", "err/bound", "time ms", "TFLOP/s", "baseline", "base ms", "speedup", "SoL"]
    rows = []
    for s in result.get("scenarios") or []:
        base = s.get("baseline") or {}
        rows.append([s["id"], _status_cell(s), _error_cell(s), _num(s.get("time_ms"), ".3f"),
                     _num(s.get("tflops"), ".4f" if (s.get("tflops") or 0) < 1 else ".1f"),
                     base.get("name", "-"), _num(base.get("time_ms"), ".3f"),
                     _num(s.get("speedup"), ".2f") + ("x" if s.get("speedup") is not None else ""),
                     sol_cell(s)])
    if not rows:
        return ""
    if result.get("mode") == "check":  # no timing columns in a check
        header, rows = header[:3], [r[:3] for r in rows]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    right = {3, 4, 6, 7, 8}

    def fmt(r):
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths)))

    lines = [fmt(header), "  ".join("-" * w for w in widths), *(fmt(r) for r in rows)]
    return "\n".join(line.rstrip() for line in lines)


def failures(result: dict) -> list[str]:
    out = []
    for s in result.get("scenarios") or []:
        if not s.get("ok") and s.get("error"):
            out.append(f"  {s['id']}: {s['error'].get('what') or 'incorrect'}")
    return out


def compile_errors(result: dict) -> list[str]:
    comp = result.get("compile") or {}
    out = []
    for e in comp.get("errors") or []:
        where = e.get("file") or "?"
        if e.get("line"):
            where += f":{e['line']}" + (f":{e['column']}" if e.get("column") else "")
        out.append(f"  {where}: {e.get('message')}")
    return out


TYPE_NAMES = {"__nv_bfloat16": "bf16", "__half": "fp16"}  # CUDA's spellings, shortened


def kernel_label(k: dict) -> str:
    """`flash_fwd_kernel<fp16, 256>` from ptxas's demangled name, else the raw symbol."""
    name = (k.get("demangled") or k.get("name") or "?").replace("(anonymous namespace)::", "")
    name = name.split("(", 1)[0].strip()  # drop the parameter list
    for long, short in TYPE_NAMES.items():
        name = name.replace(long, short)
    return name.removeprefix("void ").strip() or "?"


MAX_WARNINGS = 10


def warning_lines(result: dict) -> list[str]:
    """The result's warnings under a heading (none, no lines): what disturbed or is missing from its numbers."""
    warnings = result.get("warnings") or []
    return ["warnings:", *(f"  {w}" for w in warnings[:MAX_WARNINGS])] if warnings else []


def kernel_lines(result: dict, *, every: bool = True) -> list[str]:
    """ptxas's numbers per kernel function, each with its performance notes right under it, then
    the SASS instruction counts. With every=False and more than 3 functions: one line of ranges
    over all of them, then only the functions that spill or have notes (a flash kernel has 44)."""
    comp = result.get("compile") or {}
    kernels = [k for k in comp.get("kernels") or [] if isinstance(k, dict)]
    out: list[str] = []
    shown = kernels
    if not every and len(kernels) > 3:
        def span(key: str) -> str:
            values = [k[key] for k in kernels if isinstance(k.get(key), int)]
            lo, hi = (min(values), max(values)) if values else (None, None)
            return "-" if lo is None else str(lo) if lo == hi else f"{lo}-{hi}"
        out.append(f"  {len(kernels)} kernel functions: {span('registers')} registers, {span('spills_bytes')} B spills, "
                   f"{span('smem_bytes')} B shared")
        shown = [k for k in kernels if k.get("spills_bytes") or k.get("perf_warnings")]
    for k in shown:
        out.append(f"  kernel {kernel_label(k)}: {k.get('registers')} registers, {k.get('spills_bytes', 0)} B spills, "
                   f"{k.get('smem_bytes', 0)} B shared")
        out += [f"    ptxas: {note}" for note in k.get("perf_warnings") or []]
    if comp.get("sass"):
        out.append("  SASS: " + ", ".join(f"{name} {count}" for name, count in comp["sass"].items()))
    return out


def _overlapped(t: dict) -> list[str]:
    """Work done beside the phases above (a pre-started child, the SASS summary, prefetched references)."""
    out = ["warm start"] if t.get("warm_start") else []
    if t.get("warm_prewarm_calls"):
        out.append(f"libraries' first calls {t['warm_prewarm_calls']} made while the child waited")
    if "sass_s" in t:
        out.append(f"sass {t['sass_s']:.2f}s beside the check (waited {t.get('sass_wait_s', 0):.2f}s)")
    if t.get("ref_prefetched"):
        out.append(f"references {t.get('ref_prefetch_used', 0)}/{t['ref_prefetched']} made during the compile")
    if t.get("warmup_calls"):
        out.append(f"libraries' first calls {t['warmup_calls']} made during the compile and check "
                   f"(waited {t.get('warmup_wait_s', 0):.2f}s)")
    return out


# Inside the check and the bench: (timings key, label), in the order the work happens.
PHASES = {"check": [("check_inputs_s", "inputs"), ("check_kernel_s", "kernel"), ("check_reference_s", "references")],
          "bench": [("bench_inputs_s", "inputs"), ("bench_baseline_setup_s", "library setup"),
                    ("bench_timed_s", "timed"), ("recheck_kernel_s", "re-check kernel"),
                    ("recheck_reference_s", "re-check references")]}


def phase_line(result: dict) -> str | None:
    """Where the check's and the bench's seconds went, e.g. `check 41.2s: inputs 1.1s, kernel 0.9s, ...`."""
    t = result.get("timings") or {}
    parts = []
    for phase, keys in PHASES.items():
        got = [f"{label} {t[k]:.1f}s" for k, label in keys if isinstance(t.get(k), (int, float))]
        if got and isinstance(t.get(f"{phase}_s"), (int, float)):
            parts.append(f"{phase} {t[f'{phase}_s']:.1f}s: " + ", ".join(got))
    return "time went to: " + "; ".join(parts) if parts else None


def family_lines(result: dict) -> list[str]:
    """Speed of light per family: geomean fraction, range, bounds; and the peaks it used."""
    sol = result.get("speed_of_light") or {}
    fams = sol.get("families") or []
    if not fams:
        return []
    width = max(len(f["family"]) for f in fams)
    out = ["speed of light by family (time at the limit / measured time):"]
    for f in fams:
        bounds = ", ".join(f"{b} {n}" if len(f["bounds"]) > 1 else b for b, n in f["bounds"].items())
        out.append(f"  {f['family'].ljust(width)}  {f['geomean'] * 100:5.1f}%  ({f['min'] * 100:.0f}-"
                   f"{f['max'] * 100:.0f}%, {f['n']} scenario{'s' if f['n'] != 1 else ''}, {bounds})")
    out += [f"  {line}" for line in peaks_lines(result)]
    return out


def peaks_lines(result: dict) -> list[str]:
    peaks = result.get("peaks") or {}
    if not peaks:
        return []
    tf = ", ".join(f"{dt} {v:.4g} TFLOP/s" for dt, v in (peaks.get("matmul_tflops") or {}).items())
    bw = peaks.get("copy_gbps")
    info = peaks.get("device_info") or {}
    clock = f", max SM clock {info['max_clock_mhz']} MHz" if info.get("max_clock_mhz") else ""
    return [f"peaks (measured): matmul {tf or '-'}; copy {bw:.4g} GB/s{clock}" if bw else
            f"peaks (measured): matmul {tf or '-'}{clock}"]


def measurement_lines(result: dict) -> list[str]:
    """The clock record and the persisting-L2 reset of a GPU bench (nothing for a CPU one)."""
    from ks_tui.harness.clocks import text as clock_text

    out = []
    if result.get("clocks"):
        out.append(clock_text(result["clocks"]))
    if result.get("l2_persisting"):
        out.append(f"persisting L2 lines: {result['l2_persisting']}")
    return out


def summary_line(result: dict) -> str:
    t = result.get("timings") or {}
    comp = result.get("compile") or {}
    parts = [f"status {result.get('status')}", f"correct {result.get('correct') or '-'}"]
    g = result.get("geomean_speedup")
    if g is not None:
        by = by_baseline_text(result)
        parts.append(f"geomean {g:.3f}x vs best baseline" + (f" ({by})" if by else ""))
        caveat = baseline_caveat(result)
        if caveat:
            parts.append(caveat)
    split = [f"compile {t['compile_s']:.2f}s{' cached' if comp.get('cached') else ''}"] if "compile_s" in t else []
    split += [f"{k[:-2]} {t[k]:.2f}s" for k in ("startup_s", "import_s", "check_s", "bench_s", "sharing_s") if k in t]
    split += _overlapped(t)
    wall = t.get("wall_s", t.get("total_s"))
    if wall is not None:
        parts.append(f"{wall:.1f}s" + (f" ({', '.join(split)})" if split else ""))
    line = " | ".join(parts)
    if result.get("message") and result.get("status") != "correct":
        line += f"\n{result['message']}"
    return line


def render(result: dict) -> str:
    blocks = []
    table = scenario_table(result)
    if table:
        blocks.append(table)
    errs = compile_errors(result) if result.get("status") == "compile_error" else []
    if errs:
        blocks.append("compile errors:\n" + "\n".join(errs[:20]))
    fails = failures(result)
    if fails:
        blocks.append("failures:\n" + "\n".join(fails[:20]))
    kernels = kernel_lines(result, every=False)
    if kernels:
        blocks.append("compiled:\n" + "\n".join(kernels))
    fams = family_lines(result)
    if fams:
        blocks.append("\n".join(fams))
    measured = measurement_lines(result)
    if measured:
        blocks.append("\n".join(measured))
    warned = warning_lines(result)
    if warned:
        blocks.append("\n".join(warned))
    if result.get("status") in ("crashed", "timeout") and result.get("stderr_tail"):
        tail = result["stderr_tail"].strip().splitlines()[-15:]
        blocks.append("stderr (last lines):\n" + "\n".join("  " + ln for ln in tail))
    phases = phase_line(result)
    if phases:
        blocks.append(phases)
    blocks.append(summary_line(result))
    return "\n\n".join(blocks)
