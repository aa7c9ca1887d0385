"""Does a kernel run at the GPU's power cap? SM clock, power and temperature while it runs.

Usage (repo root, GPU machine):
    python3 -m lab.flash_attn_fwd.scripts.clock_log [--kernel [NAME=]FILE ...] [--seconds S]
        [--phases kernel,sdpa_cudnn,...] [--json OUT] SCENARIO

Each phase runs one function back to back for S seconds (default 8): a kernel file (built by the
harness, called through its ABI helpers) by its name (`kernel` unless `--kernel NAME=FILE` names it;
give --kernel again for more files), any other name a baseline of the harness (`sdpa_cudnn`,
`sdpa_flash`). The default phases are every kernel, then cuDNN, twice. Meanwhile `nvidia-smi`
samples the SM clock, power draw, temperature and the active clock-event (throttle) reasons every
100 ms. Per phase the table gives the median clock and power of the samples inside it (the first
second left out: the clock settles), the power limit, and the time per call. Session 9 found the
long shapes at the 700 W cap, where less energy per FLOP means a higher clock; several kernel files
in one log compare that energy (probes that skip loads, say) at the same temperature.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

from ks_tui.errors import KsError
from ks_tui.task import load_task
from lab.flash_attn_fwd.scripts import wait_profile  # its harness build of a kernel file

REPO = Path(__file__).resolve().parents[3]

KERNEL = REPO / "kernels" / "flash_attn_fwd" / "best" / "kernel.cu"
FIELDS = ["timestamp", "clocks.sm", "power.draw", "temperature.gpu"]
SETTLE_S = 1.0  # samples this soon after a phase starts are left out


class ClockLogError(Exception):
    pass


def reasons_field(smi: str) -> str:
    """The name this driver gives the active clock-event reasons (renamed from 'throttle' in 2023)."""
    help_text = subprocess.run([smi, "--help-query-gpu"], capture_output=True, text=True).stdout
    return "clocks_event_reasons.active" if "clocks_event_reasons.active" in help_text else "clocks_throttle_reasons.active"


def parse_samples(lines: list[str]) -> list[dict]:
    """nvidia-smi CSV rows (timestamp, clock MHz, power W, temperature C, reasons) -> dicts; rows
    that do not parse (a header, '[N/A]', a torn last line) are skipped."""
    out = []
    for line in lines:
        parts = [x.strip() for x in line.split(",")]
        if len(parts) < 4:
            continue
        try:
            t = datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            sample = {"t": t, "clock_mhz": float(parts[1]), "power_w": float(parts[2]), "temp_c": float(parts[3])}
        except ValueError:
            continue
        sample["reasons"] = parts[4] if len(parts) > 4 else ""
        out.append(sample)
    return out


def summarize(samples: list[dict], phases: list[dict]) -> list[dict]:
    """Per phase (name, start, end, calls, ms_per_call): the samples from start + SETTLE_S to end,
    their median clock and power, hottest temperature and the reasons seen."""
    rows = []
    for ph in phases:
        inside = [s for s in samples if ph["start"] + SETTLE_S <= s["t"] <= ph["end"]]
        row = dict(ph, samples=len(inside))
        if inside:
            row.update(clock_mhz=statistics.median(s["clock_mhz"] for s in inside),
                       clock_min_mhz=min(s["clock_mhz"] for s in inside),
                       power_w=statistics.median(s["power_w"] for s in inside),
                       power_max_w=max(s["power_w"] for s in inside),
                       temp_max_c=max(s["temp_c"] for s in inside),
                       reasons=sorted({s["reasons"] for s in inside if s["reasons"]}))
        rows.append(row)
    return rows


def render(scenario: str, limit_w: float | None, rows: list[dict]) -> str:
    lines = [f"== {scenario}  (power limit {limit_w if limit_w is not None else '?'} W; medians after the first "
             f"{SETTLE_S:.0f} s of each phase)",
             f"   {'phase':<12} {'ms/call':>8} {'calls':>6} {'clock MHz':>10} {'min':>6} {'power W':>8} {'max':>6} "
             f"{'temp C':>6}  reasons"]
    for r in rows:
        if not r["samples"]:
            lines.append(f"   {r['name']:<12} {r['ms_per_call']:>8.3f} {r['calls']:>6d}  no samples")
            continue
        lines.append(f"   {r['name']:<12} {r['ms_per_call']:>8.3f} {r['calls']:>6d} {r['clock_mhz']:>10.0f} "
                     f"{r['clock_min_mhz']:>6.0f} {r['power_w']:>8.0f} {r['power_max_w']:>6.0f} {r['temp_max_c']:>6.0f}"
                     f"  {' '.join(r['reasons'])}")
    return "\n".join(lines)


def parse_kernels(specs: list[str] | None) -> dict[str, Path]:
    """--kernel values ([NAME=]FILE) -> name -> file; none given: best/kernel.cu as `kernel`."""
    kernels: dict[str, Path] = {}
    for spec in specs or [str(KERNEL)]:
        name, sep, file = spec.partition("=")
        name, file = (name, file) if sep else ("kernel", spec)
        if not name or not file:
            raise ClockLogError(f"--kernel {spec!r}: give FILE or NAME=FILE")
        if name in kernels:
            raise ClockLogError(f"--kernel: the name {name!r} is given twice")
        kernels[name] = Path(file)
    return kernels


def callables(task, kernels: dict[str, Path], p: dict, names: list[str]) -> dict:
    """name -> a function that launches one call on the current stream."""
    import torch

    from ks_tui.harness import attention, gpu_baselines

    inputs = attention.make_inputs(p, torch.Generator(device="cuda").manual_seed(0), device="cuda")
    fns = {}
    for name in dict.fromkeys(names):
        if name in kernels:
            lib = wait_profile.build(task, kernels[name])
            out = attention.make_output(p, inputs)
            stream = torch.cuda.current_stream().cuda_stream

            def call(lib=lib, out=out, stream=stream):
                rc = attention.call_gpu(lib.flash_attn_fwd, inputs, out, p, stream)
                if rc != 0:
                    raise ClockLogError(f"the kernel returned {rc}")
            fns[name] = call
        elif name in gpu_baselines.BASELINES:
            try:
                fns[name] = gpu_baselines.BASELINES[name](inputs, p)
            except gpu_baselines.Unavailable as e:
                raise ClockLogError(f"{name} does not run here: {e}") from None
        else:
            known = ", ".join([*kernels, *gpu_baselines.BASELINES])
            raise ClockLogError(f"unknown phase {name!r} (one of {known})")
    return fns


def run_phase(name: str, fn, seconds: float) -> dict:
    import torch

    fn()
    torch.cuda.synchronize()
    start = time.time()
    begin, end_ev = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    begin.record()
    calls = 0
    while time.time() - start < seconds:
        for _ in range(10):
            fn()
        calls += 10
        torch.cuda.synchronize()  # keeps the launch queue short, so the phase ends on time
    end_ev.record()
    torch.cuda.synchronize()
    return {"name": name, "start": start, "end": time.time(), "calls": calls,
            "ms_per_call": begin.elapsed_time(end_ev) / calls}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenario")
    ap.add_argument("--kernel", action="append", metavar="[NAME=]FILE")
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--phases", help="comma-separated (default: every kernel, then sdpa_cudnn, twice)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    try:
        kernels = parse_kernels(args.kernel)
        task = load_task("flash_attn_fwd", REPO)
        scenario = task.select(ids=[args.scenario])[0]
        smi = shutil.which("nvidia-smi")
        import torch

        if smi is None or not torch.cuda.is_available():
            raise ClockLogError("needs an NVIDIA GPU: nvidia-smi and CUDA")
        names = ([n for n in args.phases.split(",") if n] if args.phases
                 else [*kernels, "sdpa_cudnn"] * 2)
        fns = callables(task, kernels, scenario.params, names)
        limit = subprocess.run([smi, "--query-gpu=power.limit", "--format=csv,noheader,nounits"],
                               capture_output=True, text=True).stdout.split("\n")[0].strip()
        query = ",".join(FIELDS + [reasons_field(smi)])
        log = Path(args.json.parent if args.json else "/tmp") / "clock_log_samples.csv"
        with log.open("w") as sink:
            sampler = subprocess.Popen([smi, f"--query-gpu={query}", "--format=csv,noheader,nounits", "-lms", "100"],
                                       stdout=sink, stderr=subprocess.DEVNULL)
            try:
                time.sleep(0.5)
                phases = [run_phase(n, fns[n], args.seconds) for n in names]
            finally:
                sampler.terminate()
                sampler.wait(timeout=10)
        rows = summarize(parse_samples(log.read_text().splitlines()), phases)
        try:
            limit_w = float(limit)
        except ValueError:
            limit_w = None
        print(render(scenario.id, limit_w, rows))
        if args.json:
            args.json.write_text(json.dumps({"scenario": scenario.id,
                                             "kernels": {n: str(f) for n, f in kernels.items()},
                                             "power_limit_w": limit_w, "phases": rows}, indent=1))
    except (ClockLogError, wait_profile.ProfileError, KsError, OSError, ImportError) as e:
        print(f"clock_log.py: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
