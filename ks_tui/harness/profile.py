"""Nsight Compute on one scenario's kernel launch, boiled down to a short summary.

The harness child runs in mode "profile": it checks the scenario, then calls the kernel once between
cudaProfilerStart and cudaProfilerStop. ncu wraps the child with `--profile-from-start off`, so only
the kernel's own launches in that call are profiled (not torch's input generation nor the reference),
and writes a report that `ncu --import --csv --page raw` turns into one row of metrics per launch.

Kept per launch: SM, memory, DRAM and tensor-pipe throughput as % of peak, achieved occupancy, L2 hit
rate, the top warp stall reasons (cycles per issued instruction) and the duration. Parent side,
standard library only.
"""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from ks_tui.errors import KsError

SECTIONS = ("SpeedOfLight", "Occupancy", "WarpStateStats", "MemoryWorkloadAnalysis",
            "ComputeWorkloadAnalysis", "LaunchStats")
PERMISSION = "ERR_NVGPUCTRPERM"
TOP_STALLS = 3

# summary key -> metric names to try, first found wins
METRICS = {
    "sm_throughput_pct": ("sm__throughput.avg.pct_of_peak_sustained_elapsed",),
    "memory_throughput_pct": ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",),
    "dram_throughput_pct": ("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
                            "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
    "achieved_occupancy_pct": ("sm__warps_active.avg.pct_of_peak_sustained_active",),
    "theoretical_occupancy_pct": ("sm__maximum_warps_per_active_cycle_pct",),
    "l2_hit_pct": ("lts__t_sector_hit_rate.pct",),
    "registers": ("launch__registers_per_thread",),
}
TENSOR = re.compile(r"^sm__(inst_executed_)?pipe_tensor\w*\.avg\.pct_of_peak_sustained_(active|elapsed)$")
STALL = re.compile(r"^smsp__average_warps?_issue_stalled_(\w+?)_per_issue_active\.ratio$")
DURATION = "gpu__time_duration.sum"
TIME_UNITS = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3,
              "second": 1e6, "s": 1e6}


def find_tool(name: str, compiler: str | None = None) -> str | None:
    """A CUDA tool on PATH, else beside the task's nvcc, else in CUDA_HOME or /usr/local/cuda."""
    found = shutil.which(name)
    if found:
        return found
    dirs = []
    nvcc = shutil.which(compiler) if compiler else None
    if nvcc:
        dirs.append(Path(nvcc).resolve().parent)
    for env in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(env):
            dirs.append(Path(os.environ[env]) / "bin")
    dirs.append(Path("/usr/local/cuda/bin"))
    for d in dirs:
        for cand in (d / name, d.parent / "nsight-compute" / name):
            if cand.is_file() and os.access(cand, os.X_OK):
                return str(cand)
    return None


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except (ValueError, AttributeError):
        return None


def parse_raw_csv(text: str) -> list[dict]:
    """`ncu --import R --csv --page raw`: a header row of metric names, a row of units, a row per launch."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]  # drop ==PROF== and other tool lines
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    if len(rows) < 2:
        return []
    head, units = rows[0], rows[1]
    first_data = 2 if not any(_number(u) is not None for u in units[len(units) // 2:] if u) else 1
    unit_of = dict(zip(head, units)) if first_data == 2 else {}
    launches = []
    for row in rows[first_data:]:
        values = dict(zip(head, row))
        launches.append(summarize_launch(values, unit_of))
    return launches


def summarize_launch(values: dict[str, str], unit_of: dict[str, str] | None = None) -> dict:
    unit_of = unit_of or {}
    out: dict = {"kernel": values.get("Kernel Name") or values.get("Function Name") or "?",
                 "grid": values.get("Grid Size"), "block": values.get("Block Size")}
    duration = _number(values.get(DURATION, ""))
    if duration is not None:
        out["duration_us"] = duration * TIME_UNITS.get(unit_of.get(DURATION, "nsecond"), 1e-3)
    for key, names in METRICS.items():
        for name in names:
            v = _number(values.get(name, ""))
            if v is not None:
                out[key] = v
                break
    tensor = [v for k, x in values.items() if TENSOR.match(k) and (v := _number(x)) is not None]
    if tensor:
        out["tensor_pipe_pct"] = max(tensor)
    stalls = sorted(((m.group(1), v) for k, x in values.items()
                     if (m := STALL.match(k)) and (v := _number(x)) is not None and v > 0),
                    key=lambda kv: -kv[1])
    out["top_stalls"] = [[name, round(v, 3)] for name, v in stalls[:TOP_STALLS]]
    return out


def summary_lines(profile: dict) -> list[str]:
    """A few lines per profiled launch, for `ks profile`, `ks show` and the agent."""
    out = []
    for sid, entry in profile.items():
        launches = entry.get("launches") or []
        out.append(f"profile of {sid} ({len(launches)} launch{'es' if len(launches) != 1 else ''}, ncu):")
        for k in launches:
            def pct(key, label, k=k):
                return f"{label} {k[key]:.0f}%" if k.get(key) is not None else None
            parts = [p for p in (pct("sm_throughput_pct", "SM"), pct("tensor_pipe_pct", "tensor"),
                                 pct("memory_throughput_pct", "memory"), pct("dram_throughput_pct", "DRAM"),
                                 pct("achieved_occupancy_pct", "occupancy"), pct("l2_hit_pct", "L2 hit")) if p]
            name = str(k.get("kernel"))[:60]
            dur = f" {k['duration_us']:.1f} us" if k.get("duration_us") is not None else ""
            out.append(f"  {name}{dur}: " + (", ".join(parts) or "no metric read"))
            if k.get("top_stalls"):
                out.append("    top stalls (cycles per issue): "
                           + ", ".join(f"{n} {v:.2f}" for n, v in k["top_stalls"]))
    return out


def profile(task, source: Path | None, scenario: str, timeout: float | None = None, on_progress=None) -> dict:
    """Run ncu on the scenario's launch; the harness result with `profile: {scenario: {launches}}`.
    KsError (exit 2) when ncu is missing or may not read the counters; a kernel failure is the status."""
    from ks_tui.harness.client import run_harness

    if task.device != "cuda":
        raise KsError(f"ks profile runs Nsight Compute on CUDA kernels; {task.name} is a CPU task")
    task.scenario(scenario)  # KsError naming an unknown id
    ncu = find_tool("ncu", task.build.compiler)
    if ncu is None:
        raise KsError("Nsight Compute (ncu) not found on PATH, beside nvcc or in /usr/local/cuda/bin",
                      hint="install Nsight Compute, or put its folder on PATH")
    with tempfile.TemporaryDirectory(prefix="ks-profile-") as tmp:
        report = Path(tmp) / "launch"
        # application-only (the default): the harness child itself, not the compiler it may start
        wrapper = [ncu, "--profile-from-start", "off", "-f", "-o", str(report)]
        for section in SECTIONS:
            wrapper += ["--section", section]
        result = run_harness(task, source, mode="profile", scenarios=[scenario], timeout=timeout,
                             on_progress=on_progress, wrapper=wrapper)
        tail = result.get("stderr_tail") or ""
        if PERMISSION in tail:
            raise KsError("ncu may not read the GPU's performance counters here (ERR_NVGPUCTRPERM)",
                          hint="run as root, or set the nvidia module option NVreg_RestrictProfilingToAdminUsers=0")
        if result.get("status") != "correct":
            return result
        rep = report.with_suffix(".ncu-rep")
        if not rep.is_file():
            result["status"], result["message"] = "crashed", "ncu wrote no report: " + _last_error(tail)
            return result
        try:
            raw = subprocess.run([ncu, "--import", str(rep), "--csv", "--page", "raw"], capture_output=True,
                                 text=True, timeout=300)
        except (OSError, subprocess.SubprocessError) as e:
            raise KsError(f"ncu --import failed: {e}") from None
        launches = parse_raw_csv(raw.stdout)
        if not launches:
            result["status"] = "crashed"
            result["message"] = "ncu recorded no kernel launch in the profiled call: " + _last_error(raw.stderr + tail)
            return result
        result["profile"] = {scenario: {"launches": launches, "tool": "ncu", "sections": list(SECTIONS)}}
    return result


def _last_error(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if "ERROR" in ln or "error" in ln]
    return (lines[-1] if lines else (text.strip().splitlines() or ["no output"])[-1])[:300]


# ------------------------------------------------------------------ kept with the attempt

def profile_path(sessions_dir: Path, session: str, attempt: int) -> Path:
    return Path(sessions_dir) / session / "profiles" / f"attempt-{attempt}.json"


def keep(sessions_dir: Path, session: str, attempt: int, profile: dict) -> Path:
    """Add a scenario's profile to the attempt's file (sessions/<id>/profiles/attempt-N.json)."""
    import json

    path = profile_path(sessions_dir, session, attempt)
    stored = load(sessions_dir, session, attempt)
    stored.update(profile)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(stored, indent=1))
    os.replace(tmp, path)
    return path


def load(sessions_dir: Path, session: str, attempt: int) -> dict:
    import json

    try:
        data = json.loads(profile_path(sessions_dir, session, attempt).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
