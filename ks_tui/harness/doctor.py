"""`ks doctor`: what this machine offers the harness (GPU, compilers, baselines, API key, the kernels' sandbox).

Looks, never changes anything; library availability is found without importing them.
"""

from __future__ import annotations

import os
import shutil

from ks_tui.harness.build import cache_root, compiler_version


def _tool(name: str) -> str:
    v = compiler_version(name)
    if not v:
        return "not found"
    path, first, last = (v.split(" | ") + ["", ""])[:3]
    return f"{path} ({last if name == 'nvcc' else first})"


def _nvml_version() -> str:
    """The GPU clock record's library (nvidia-ml-py), found without importing it."""
    from importlib import metadata

    try:
        return f"nvidia-ml-py {metadata.version('nvidia-ml-py')} (records the GPU clock in benches)"
    except metadata.PackageNotFoundError:
        return "nvidia-ml-py not installed (GPU clock not recorded)"


def diagnose() -> dict:
    report: dict = {}
    try:
        import torch

        report["torch"] = f"{torch.__version__} (CUDA build: {torch.version.cuda or 'no'})"
        if torch.cuda.is_available():
            names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
            report["gpu"] = ", ".join(names)
            report["cudnn"] = str(torch.backends.cudnn.version())
        else:
            report["gpu"] = "none visible (CPU tasks only)"
    except ImportError:
        report["torch"] = "not installed"
        report["gpu"] = "unknown (no torch)"
    report["g++"] = _tool("g++")
    report["nvcc"] = _tool("nvcc")
    report["cuobjdump"] = shutil.which("cuobjdump") or "not found (no SASS summary)"
    from ks_tui.harness.profile import find_tool

    report["ncu"] = find_tool("ncu", "nvcc") or "not found (no ks profile)"
    report["compute-sanitizer"] = find_tool("compute-sanitizer", "nvcc") or "not found (no ks check --sanitize)"
    report["nvml"] = _nvml_version()
    report["baselines"] = {"torch_sdpa (CPU)": "yes" if report["torch"] != "not installed" else "no"}
    try:  # the GPU task's own list (sdpa_cudnn, sdpa_flash, fa2, fa3, fa4), with versions
        from ks_tui.tasklib.attention.baselines import availability

        report["baselines"].update(availability())
    except ImportError:
        pass
    report["anthropic api key"] = "set" if os.environ.get("ANTHROPIC_API_KEY") else "not set (ANTHROPIC_API_KEY)"
    report["cache"] = str(cache_root())
    from ks_tui.harness.sandbox import doctor_report

    report["sandbox"] = doctor_report()  # whether kernels run confined, how, and the switch
    report["standby"] = _standby_report()
    return report


def _standby_report() -> str:
    """Whether one-shot commands leave a harness child waiting (harness/standby.py), and how many wait now."""
    from ks_tui.harness import standby

    if not standby.enabled():
        return "off (KS_STANDBY=0, or inside a KernelSeek run)"
    if standby.folder() is None:
        return "off: no private folder for its sockets (KS_STANDBY_DIR)"
    live = standby.servers()
    return (f"on: a child waits {standby.idle_seconds():g} s after `ks check` / `ks bench` / `ks try` "
            f"(KS_STANDBY=0 turns it off); {len(live)} waiting now (`ks standby`)")
