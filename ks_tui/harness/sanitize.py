"""compute-sanitizer over the smallest scenarios: memcheck, racecheck, initcheck, synccheck.

`ks check --sanitize` picks the smallest scenario (fewest FLOPs) of each family, or the scenarios
given with --scenarios, and runs one harness check child per tool under compute-sanitizer, with
torch's caching allocator off (PYTORCH_NO_CUDA_MEMORY_CACHING=1) so that every tensor is its own
allocation, and with red zones after every allocation (memcheck's `--padding`): without them a write just
past one tensor lands in the next allocation the driver handed out and is no error to memcheck. Findings
are read from the tool's log; only those in the candidate's own kernels (the compiled file's kernel names)
count, so torch's and the libraries' kernels cannot fail the check. Parent side, standard library only.
"""

from __future__ import annotations

import functools
import re
import subprocess
import tempfile
from pathlib import Path

from ks_tui.errors import KsError
from ks_tui.harness.profile import find_tool

TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")
PREFIX = "========="
_NOT_A_FINDING = ("ERROR SUMMARY", "RACECHECK SUMMARY", "COMPUTE-SANITIZER", "LEAK SUMMARY", "Target application",
                  "Saved host backtrace", "This can happen", "Note:", "Warning:", "Tool")
_SUMMARY = re.compile(r"(ERROR SUMMARY: (\d+) error|RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?)")


# Bytes of red zone after every allocation under memcheck: a write up to this far past a tensor is caught.
PADDING_BYTES = 4096


@functools.lru_cache(maxsize=4)
def supports_padding(exe: str) -> bool:
    """Whether this compute-sanitizer has `--padding` (newer releases do; older ones reject the option)."""
    try:
        out = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return False
    return "--padding" in (out.stdout + out.stderr)


def tool_command(exe: str, tool: str, log: Path) -> list[str]:
    """The wrapper one tool's check child runs under."""
    cmd = [exe, "--tool", tool, "--log-file", str(log), "--report-api-errors", "no", "--print-limit", "20"]
    if tool == "memcheck" and supports_padding(exe):
        cmd += ["--padding", str(PADDING_BYTES)]
    return cmd


def smallest_per_family(task) -> list[str]:
    """The fewest-FLOPs scenario of each family, in the grid's order."""
    best: dict[str, tuple[float, str]] = {}
    for s in task.scenarios:
        fam, f = task.family_of(s), task.flops_of(s)
        if fam not in best or f < best[fam][0]:
            best[fam] = (f, s.id)
    chosen = {sid for _, sid in best.values()}
    return [s.id for s in task.scenarios if s.id in chosen]


def _unmangle_last(name: str) -> str:
    """`_Z9oob_writePfi` -> `oob_write`, `_ZN2ns5innerEv` -> `inner`: the last name of an Itanium symbol."""
    rest, last = name[3:] if name.startswith("_ZN") else name[2:], ""
    while (m := re.match(r"(\d+)", rest)):
        n = int(m.group(1))
        last, rest = rest[len(m.group(1)):len(m.group(1)) + n], rest[len(m.group(1)) + n:]
        if not name.startswith("_ZN"):
            break
    return last or name


def _base_name(name: str) -> str:
    """`void ns::flash_fwd<bf16, 128>(const bf16*, ...)` -> `flash_fwd`: the identifier before '(' and '<'."""
    if name.startswith("_Z"):
        return _unmangle_last(name)
    head = name.split("(", 1)[0].split("<", 1)[0].strip()
    return re.split(r"[\s:]+", head)[-1] if head else ""


def _kernel_in(line: str) -> str | None:
    """The function an ' at ...' line names: `at k(float *)+0x70 in f.cu:7`, or the older
    `at 0x70 in f.cu:7:k(float *)`."""
    m = re.search(r"(?:^|\s)at\s+(.*)$", line.strip())
    if not m:
        return None
    after = m.group(1)
    if after.startswith("0x"):
        tail = after.split(" in ", 1)[-1]
        name = tail.split(":", 2)[-1].strip()
    else:
        name = after.split("+0x", 1)[0].strip()
    # a function has a parameter list; "at __shared__ 0x10 in block (0,0,0)" names a place, not one
    if "(" not in name or name.startswith(("__shared__", "__global__", "__local__")) or " in block" in name:
        return None
    return name


def parse_log(text: str) -> tuple[list[dict], int | None]:
    """Findings of a compute-sanitizer log (each with `what` and the kernel it names) and the tools'
    own error count (None when the log has no summary)."""
    findings: list[dict] = []
    current: dict | None = None
    count = None
    for raw in text.splitlines():
        if not raw.startswith(PREFIX):
            continue
        body = raw[len(PREFIX):]
        m = _SUMMARY.search(body)
        if m:
            count = (count or 0) + int(m.group(2) or m.group(3))
            current = None
        elif body.startswith(" ") and body[1:2].strip() and not body.strip().startswith(_NOT_A_FINDING):
            current = {"what": body.strip(), "kernel": _kernel_in(body)}
            findings.append(current)
        elif current is not None and current["kernel"] is None and body.strip():
            current["kernel"] = _kernel_in(body)
        elif not body.strip():
            current = None
    return findings, count


def own_findings(findings: list[dict], kernel_names: list[str]) -> list[dict]:
    """The findings in the candidate's kernels; when no finding names any kernel, all of them."""
    bases = {_base_name(n) for n in kernel_names if n}
    bases.discard("")
    if not bases:
        return findings
    named = [f for f in findings if f.get("kernel")]
    return [f for f in findings if not f.get("kernel") or _base_name(f["kernel"]) in bases] if named else findings


def kernel_names(result: dict) -> list[str]:
    comp = result.get("compile") or {}
    return [k.get("demangled") or k.get("name") or "" for k in comp.get("kernels") or [] if isinstance(k, dict)]


def sanitize(task, source: Path | None, scenarios: list[str] | None = None, timeout: float | None = None,
             tools=TOOLS, on_progress=None, on_tool=None) -> dict:
    """One check child per tool under compute-sanitizer; the first tool's harness result with a
    `sanitizer` record: {scenarios, tools: {tool: {findings, first, errors_reported}}, clean}."""
    from ks_tui.harness.client import run_harness

    if task.device != "cuda":
        raise KsError(f"--sanitize runs compute-sanitizer on CUDA kernels; {task.name} is a CPU task",
                      hint="for a CPU kernel, run its checks under valgrind or build it with -fsanitize=address")
    exe = find_tool("compute-sanitizer", task.build.compiler)
    if exe is None:
        raise KsError("compute-sanitizer not found on PATH, beside nvcc or in /usr/local/cuda/bin",
                      hint="it ships with the CUDA toolkit")
    ids = scenarios or smallest_per_family(task)
    report: dict = {"scenarios": ids, "tools": {}, "clean": True}
    first_result = None
    with tempfile.TemporaryDirectory(prefix="ks-sanitize-") as tmp:
        for tool in tools:
            if on_tool:
                on_tool(tool)
            log = Path(tmp) / f"{tool}.log"
            wrapper = tool_command(exe, tool, log)
            result = run_harness(task, source, mode="check", scenarios=ids, timeout=timeout,
                                 on_progress=on_progress, wrapper=wrapper,
                                 env={"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"})
            text = log.read_text(errors="replace") if log.is_file() else ""
            findings, count = parse_log(text)
            mine = own_findings(findings, kernel_names(result))
            record = {"findings": len(mine), "errors_reported": count, "first": mine[0] if mine else None,
                      "status": result.get("status"), "other_findings": len(findings) - len(mine)}
            if not text.strip():
                record["note"] = "the tool wrote no log"
            report["tools"][tool] = record
            if mine:
                report["clean"] = False
            if first_result is None:
                first_result = result
            if result.get("status") == "compile_error":
                break
    first_result["sanitizer"] = report
    return first_result


def sanitizer_lines(report: dict) -> list[str]:
    if not report:
        return []
    out = [f"compute-sanitizer on {len(report.get('scenarios') or [])} scenario(s): "
           + ("no finding" if report.get("clean") else "FINDINGS")]
    for tool, rec in (report.get("tools") or {}).items():
        if rec.get("findings"):
            first = rec["first"] or {}
            where = f" in {first['kernel']}" if first.get("kernel") else ""
            out.append(f"  {tool}: {rec['findings']} finding(s); first: {first.get('what')}{where}")
        else:
            extra = f" ({rec['other_findings']} outside the kernel's code, not counted)" if rec.get("other_findings") else ""
            out.append(f"  {tool}: clean{extra}" + (f" [{rec['note']}]" if rec.get("note") else ""))
    return out


def first_finding(report: dict) -> str:
    for tool, rec in (report.get("tools") or {}).items():
        if rec.get("findings"):
            first = rec["first"] or {}
            where = f" in {first['kernel']}" if first.get("kernel") else ""
            return f"{tool}: {first.get('what')}{where}"
    return ""
