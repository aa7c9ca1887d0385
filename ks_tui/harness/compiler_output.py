"""Reading what compilers print: diagnostics, ptxas resource usage, SASS opcode counts.

Pure text parsing (standard library), so it is tested on real compiler output without a GPU.
"""

from __future__ import annotations

import re
from collections import Counter

# g++/clang:  kernel.cpp:12:5: error: 'x' was not declared in this scope
_GCC = re.compile(r"^(?P<file>[^:\n]+?):(?P<line>\d+):(?:(?P<column>\d+):)?\s*(?:fatal )?error:\s*(?P<message>.*)$")
# nvcc front end:  kernel.cu(12): error: identifier "x" is undefined
_NVCC = re.compile(r"^(?P<file>[^()\n]+?)\((?P<line>\d+)\):\s*(?:catastrophic )?error:\s*(?P<message>.*)$")
# ptxas:  ptxas fatal   : ... / ptxas error   : ...
_PTXAS_ERR = re.compile(r"^ptxas (?:fatal|error)\s*:\s*(?P<message>.*)$")
# docs/design.md: one self-contained file; no library kernels smuggled in through headers.
FORBIDDEN_HEADERS = ("cutlass/", "cute/", "cublas", "cublasLt", "cudnn", "torch/", "ATen/", "c10/",
                     "flash_attn", "thunderkittens", "kittens.cuh")
_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"](?P<header>[^>"]+)[>"]')
_LINK_ERR = re.compile(r"(undefined reference to .*|ld returned \d+ exit status|cannot find -l\S+)")


def forbidden_includes(source: str, shown_name: str) -> list[dict]:
    """Errors for #include lines that pull in libraries the kernel ABI rules out."""
    errors = []
    for n, line in enumerate(source.splitlines(), 1):
        m = _INCLUDE.match(line)
        if m and any(m.group("header").startswith(f) or f"/{f}" in m.group("header") for f in FORBIDDEN_HEADERS):
            errors.append({"file": shown_name, "line": n, "column": None,
                           "message": f"#include <{m.group('header')}> is not allowed: the kernel must be "
                                      "self-contained (no CUTLASS/CuTe/cuBLAS/cuDNN/torch/FlashAttention headers)"})
    return errors


def parse_errors(log: str, shown_name: str | None = None) -> list[dict]:
    """Compiler errors as {file, line, column, message}. `shown_name` replaces the path of the kernel file (it
    was compiled under that name in a scratch folder); an error in another file (a system header) keeps its own
    path, so that `/usr/include/.../vector:298` is not read as line 298 of the kernel."""
    errors = []
    for raw in log.splitlines():
        line = raw.rstrip()
        m = _GCC.match(line) or _NVCC.match(line)
        if m:
            gd = m.groupdict()
            ours = shown_name is None or gd["file"].rsplit("/", 1)[-1] == shown_name.rsplit("/", 1)[-1]
            errors.append({"file": (shown_name or gd["file"]) if ours else gd["file"], "line": int(gd["line"]),
                           "column": int(gd["column"]) if gd.get("column") else None,
                           "message": gd["message"].strip()})
            continue
        m = _PTXAS_ERR.match(line) or _LINK_ERR.search(line)
        if m:
            msg = m.groupdict().get("message") or m.group(0)
            errors.append({"file": shown_name, "line": None, "column": None, "message": msg.strip()})
    return errors


_ENTRY = re.compile(r"ptxas info\s*: (?:Compiling entry function|Function properties for) '?(?P<name>[\w$.]+)'?")
_FRAME = re.compile(r"(?P<stack>\d+) bytes stack frame, (?P<stores>\d+) bytes spill stores, (?P<loads>\d+) bytes spill loads")
_USED = re.compile(r"ptxas info\s*: Used (?P<regs>\d+) registers(?P<rest>.*)")
_SMEM = re.compile(r"(\d+) bytes smem")
# ptxas for sm_90a, when it had to give up the asynchronous wgmma pipeline (C7510-C7515 and kin):
#   ptxas info    : (C7511) Potential Performance Loss: wgmma.mma_async instructions are serialized due to
#   insufficient register resources for the wgmma pipeline in the function '_Z1kPfmmi'
# Printed as "info", so a list of warnings never shows it, though every wgmma then waits for the last.
_PERF = re.compile(r"ptxas info\s*: \((?P<code>C\d+)\) Potential Performance Loss: (?P<what>.*?)"
                   r"(?: in the function '(?P<name>[^']+)')?\s*$")


def parse_ptxas(log: str) -> list[dict]:
    """Per-kernel registers, spills, shared memory, stack and ptxas's performance-loss notes (`perf_warnings`,
    e.g. serialised wgmma) from `-Xptxas -v` output."""
    kernels: dict[str, dict] = {}
    perf: dict[str | None, list[str]] = {}
    current = None
    for line in log.splitlines():
        m = _PERF.search(line)
        if m:
            perf.setdefault(m.group("name"), []).append(f"{m.group('code')}: {m.group('what').strip()}")
            continue
        m = _ENTRY.search(line)
        if m:
            current = m.group("name")
            kernels.setdefault(current, {"name": current, "registers": None, "spills_bytes": 0,
                                         "smem_bytes": 0, "stack_bytes": 0, "perf_warnings": []})
            continue
        if current is None:
            continue
        k = kernels[current]
        m = _FRAME.search(line)
        if m:
            k["stack_bytes"] = int(m.group("stack"))
            k["spills_bytes"] = int(m.group("stores")) + int(m.group("loads"))
        m = _USED.search(line)
        if m:
            k["registers"] = int(m.group("regs"))
            s = _SMEM.search(m.group("rest"))
            k["smem_bytes"] = int(s.group(1)) if s else 0
    found = [k for k in kernels.values() if k["registers"] is not None]
    for k in found:
        k["perf_warnings"] = perf.pop(k["name"], [])
    if found:  # a note naming no kernel of the report (or none at all) is not dropped: it goes with the first
        found[0]["perf_warnings"] = [n for notes in perf.values() for n in notes] + found[0]["perf_warnings"]
    return found


# Opcodes worth a headline: tensor cores, local memory (spills), barriers, memory traffic.
SASS_HEADLINE = ("HGMMA", "HMMA", "IMMA", "LDL", "STL", "BAR", "LDS", "STS", "LDG", "STG",
                 "LDGSTS", "UTMALDG", "UTMASTG", "SYNCS", "WARPGROUP", "MUFU", "FFMA")
_SASS_LINE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?(?P<op>[A-Z][A-Z0-9_]*)")


def summarize_sass(dump: str) -> dict:
    """Counts of headline opcodes (and the total) in `cuobjdump --dump-sass` output."""
    counts: Counter = Counter()
    for line in dump.splitlines():
        m = _SASS_LINE.search(line)
        if m:
            counts[m.group("op")] += 1
    summary = {op: counts.get(op, 0) for op in SASS_HEADLINE}
    summary["total"] = sum(counts.values())
    return summary
