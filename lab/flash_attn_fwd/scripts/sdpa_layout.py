"""Is SDPA on [b, h, s, d] views of [b, s, h, d] tensors timed fairly? (device only)

For a few scenarios, time each SDPA baseline as the harness does (transposed views, made
once) and on tensors that are contiguous in [b, h, s, d]; and list the CUDA kernels one
call of the view version launches: a copy/transpose kernel there would be time a user of
[b, s, h, d] tensors pays, but that we should know about.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from ks_tui.harness.gpu_baselines import BASELINES, Unavailable
from ks_tui.harness.timing import GpuTimer
from ks_tui.task import Timing

SCENARIOS = [dict(b=8, s_q=4096, s_k=4096, h_q=32, h_kv=8, d=128, causal=False),
             dict(b=8, s_q=4096, s_k=4096, h_q=32, h_kv=8, d=128, causal=True),
             dict(b=32, s_q=1024, s_k=1024, h_q=32, h_kv=32, d=64, causal=False)]


def main() -> None:
    stream = torch.cuda.Stream()
    timer = GpuTimer(torch, stream)
    timing = Timing(warmup=3, min_reps=10, max_reps=50, budget_s=0.1)
    for p in SCENARIOS:
        p["scale"] = p["d"] ** -0.5
        gen = torch.Generator(device="cuda").manual_seed(0)
        bshd = {n: torch.randn((p["b"], s, h, p["d"]), generator=gen, device="cuda").bfloat16()
                for n, s, h in (("q", p["s_q"], p["h_q"]), ("k", p["s_k"], p["h_kv"]), ("v", p["s_k"], p["h_kv"]))}
        # Same values, stored [b, h, s, d]; handed over as [b, s, h, d] views of that storage.
        bhsd = {n: t.transpose(1, 2).contiguous().transpose(1, 2) for n, t in bshd.items()}
        name = f"d{p['d']}-h{p['h_q']}-{p['h_kv']}-s{p['s_q']}{'-causal' if p['causal'] else ''}"
        for base in ("sdpa_cudnn", "sdpa_flash"):
            try:
                with torch.cuda.stream(stream):
                    f_view = BASELINES[base](bshd, p)
                    f_cont = BASELINES[base](bhsd, p)
                    t_view = timer.time([f_view], timing)["median_ms"]
                    t_cont = timer.time([f_cont], timing)["median_ms"]
                    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                        f_view()
                        torch.cuda.synchronize()
                kernels = sorted({e.name[:60] for e in prof.events() if e.device_type.name == "CUDA"})
                print(f"{name:28s} {base:11s} views {t_view:8.3f} ms  bhsd-contiguous {t_cont:8.3f} ms  "
                      f"ratio {t_view / t_cont:5.3f}  kernels: {kernels}")
            except Unavailable as e:
                print(f"{name:28s} {base:11s} unavailable: {e}")


if __name__ == "__main__":
    main()
