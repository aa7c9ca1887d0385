"""Nsight Compute on a library baseline's launch for one scenario (FA3 by default), to read beside `ks profile` of
ours: the same sections and the same summary (throughputs, tensor pipe, L2 hit rate, top stall reasons).

It runs itself under ncu (`--profile-from-start off`): the child makes the scenario's inputs, builds the baseline's
call as the harness does (`ks_tui.tasklib.attention.baselines`, the probe against the reference included), calls it
twice to warm up, then once between cudaProfilerStart and cudaProfilerStop, so only that call's launches are
profiled. Exit code 2, with one message, for an unknown scenario or baseline, no ncu, no CUDA device or a baseline
that cannot run here; 1 when ncu recorded no launch.

    python3 -m lab.flash_attn_fwd.scripts.profile_baseline d128-h16-16-s8192-causal
    python3 -m lab.flash_attn_fwd.scripts.profile_baseline d128-h16-16-q8192-k32768-causal --baseline fa3 --json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = "KS_PROFILE_BASELINE_CHILD"  # set in the child's environment: build and call, under ncu
BASELINES = ("fa3", "fa2", "fa4", "sdpa_cudnn", "sdpa_flash")
REPO = Path(__file__).resolve().parents[3]


def scenario_params(sid: str) -> dict:
    from lab.flash_attn_fwd.scripts import compare

    params = {s["id"]: s["params"] for s in compare.grid()}
    if sid not in params:
        raise ValueError(f"unknown scenario {sid!r} (the task's grid: kernels/flash_attn_fwd/task.yaml)")
    return params[sid]


def child(sid: str, baseline: str) -> int:
    """Under ncu: the baseline's call for the scenario, once between the profiler's start and stop."""
    import torch

    from ks_tui.harness.reference_api import Unavailable
    from ks_tui.tasklib.attention import baselines

    if not torch.cuda.is_available():
        print("profile_baseline: needs a CUDA device", file=sys.stderr)
        return 2
    p = scenario_params(sid)
    dtype = torch.bfloat16 if p["dtype"] == "bf16" else torch.float16
    gen = torch.Generator(device="cuda").manual_seed(0)
    q = torch.randn(p["b"], p["s_q"], p["h_q"], p["d"], generator=gen, device="cuda").to(dtype)
    k, v = (torch.randn(p["b"], p["s_k"], p["h_kv"], p["d"], generator=gen, device="cuda").to(dtype) for _ in "kv")
    try:
        call = getattr(baselines, baseline)({"q": q, "k": k, "v": v}, p)
    except Unavailable as e:
        print(f"profile_baseline: {baseline} cannot run {sid} here: {e}", file=sys.stderr)
        return 2
    for _ in range(2):
        call()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    call()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    return 0


def parent(sid: str, baseline: str, as_json: bool, timeout: float) -> int:
    from ks_tui.harness import profile as prof

    scenario_params(sid)  # an unknown id fails here, before ncu starts
    ncu = prof.find_tool("ncu", "nvcc")
    if ncu is None:
        print("profile_baseline: Nsight Compute (ncu) not found on PATH, beside nvcc or in /usr/local/cuda/bin",
              file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="ks-profile-baseline-") as tmp:
        report = Path(tmp) / "launch"
        cmd = [ncu, "--profile-from-start", "off", "-f", "-o", str(report)]
        for section in prof.SECTIONS:
            cmd += ["--section", section]
        cmd += [sys.executable, "-m", "lab.flash_attn_fwd.scripts.profile_baseline", sid, "--baseline", baseline]
        env = {**os.environ, CHILD: "1", "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO),
                                                                                      os.environ.get("PYTHONPATH")]))}
        try:
            run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            print(f"profile_baseline: ncu ran past {timeout:.0f} s", file=sys.stderr)
            return 2
        if prof.PERMISSION in run.stdout + run.stderr:
            print("profile_baseline: ncu may not read the GPU's performance counters here (ERR_NVGPUCTRPERM)",
                  file=sys.stderr)
            return 2
        if run.returncode:
            print(f"profile_baseline: the profiled child failed (exit {run.returncode}): "
                  f"{(run.stderr.strip().splitlines() or ['no output'])[-1][:300]}", file=sys.stderr)
            return 2
        rep = report.with_suffix(".ncu-rep")
        raw = subprocess.run([ncu, "--import", str(rep), "--csv", "--page", "raw"], capture_output=True, text=True,
                             timeout=300) if rep.is_file() else None
        launches = prof.parse_raw_csv(raw.stdout) if raw is not None else []
    if not launches:
        print(f"profile_baseline: ncu recorded no launch of {baseline} on {sid}", file=sys.stderr)
        return 1
    profile = {sid: {"launches": launches, "tool": "ncu", "sections": list(prof.SECTIONS), "baseline": baseline}}
    print(json.dumps(profile, indent=1) if as_json else "\n".join([f"{baseline}:", *prof.summary_lines(profile)]))
    return 0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenario")
    ap.add_argument("--baseline", default="fa3", choices=BASELINES)
    ap.add_argument("--json", action="store_true", help="the profile as JSON (ks profile's `profile` field)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds ncu may run")
    a = ap.parse_args(argv)
    try:
        if os.environ.get(CHILD):
            return child(a.scenario, a.baseline)
        return parent(a.scenario, a.baseline, a.json, a.timeout)
    except ValueError as e:
        print(f"profile_baseline: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
