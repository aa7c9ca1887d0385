"""Why does a baseline's time move between processes? Time it in several fresh processes.

Each child process builds a scenario's inputs the way the harness does, runs the baseline,
records which GPU kernels one call launches (torch profiler), then times 6 blocks of calls
with the harness's L2 flush and CUDA events. The parent prints per process: block medians,
the kernel names and the SM clock, so a plan change (other kernel names), a drift inside a
process (block medians moving) and a process-level offset (stable blocks, other level) can
be told apart.

Usage (repo root, GPU machine):
    python3 -m lab.flash_attn_fwd.scripts.cudnn_noise PROCESSES BASELINE ID [ID ...]
Writes $OUT/baseline_noise_<BASELINE>.json; prints a table.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def smi() -> str:
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,temperature.gpu,power.draw",
                               "--format=csv,noheader"], capture_output=True, text=True,
                              timeout=10).stdout.strip()
    except Exception as e:
        return f"n/a ({e})"


def child(baseline: str, ids: list[str]) -> None:
    import torch

    from ks_tui.harness.gpu_baselines import BASELINES
    from ks_tui.harness.attention import make_inputs
    from ks_tui.harness.timing import GpuTimer
    from ks_tui.task import load_task

    task = load_task("flash_attn_fwd", REPO)
    by_id = {s.id: s for s in task.scenarios}
    timer = GpuTimer(torch, torch.cuda.default_stream())
    out = {}
    for sid in ids:
        p = by_id[sid].params
        gen = torch.Generator(device="cuda").manual_seed(7)
        sets = [make_inputs(p, gen, "cuda") for _ in range(2)]
        calls = [BASELINES[baseline](s, p) for s in sets]
        for c in calls:
            c()
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            calls[0]()
            torch.cuda.synchronize()
        kernels = sorted({e.name[:90] for e in prof.events()
                          if getattr(e, "device_type", None) == torch.autograd.DeviceType.CUDA})
        blocks = []
        clock_before = smi()
        for _ in range(6):
            t = timer._timed(lambda i: calls[i % 2](), 20)
            blocks.append(statistics.median(t) * 1e3)
        out[sid] = {"block_median_ms": blocks, "kernels": kernels, "smi_before": clock_before,
                    "smi_after": smi()}
    print(json.dumps(out))


def main() -> None:
    n, baseline, ids = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    runs = []
    for i in range(n):
        proc = subprocess.run([sys.executable, "-m", __spec__.name, "--child", baseline, *ids], capture_output=True,
                              text=True, timeout=300, env=dict(os.environ, PYTHONPATH=str(REPO)))
        if proc.returncode != 0:
            print(f"process {i}: rc={proc.returncode}\n{proc.stderr[-2000:]}")
            continue
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    out = Path(os.environ.get("OUT", "/tmp")) / f"baseline_noise_{baseline}.json"
    out.write_text(json.dumps({"baseline": baseline, "processes": runs}, indent=1))
    print(f"{baseline}: block medians (ms) per process; kernels; sm clock/temp/power after")
    for sid in ids:
        print(sid)
        for i, r in enumerate(runs):
            e = r[sid]
            blocks = " ".join(f"{x:.4f}" for x in e["block_median_ms"])
            print(f"  p{i}: {blocks} | {';'.join(k[:60] for k in e['kernels'])} | {e['smi_after']}")


if __name__ == "__main__":
    if sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3:])
    else:
        main()
