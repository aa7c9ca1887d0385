"""`ks doctor`: what this machine offers the harness (GPU, compilers, baselines, API key).

Looks, never changes anything; library availability is found without importing them.
"""

from __future__ import annotations

import importlib.util
import os
import shutil

from ks_tui.harness.build import cache_root, compiler_version


def _tool(name: str) -> str:
    v = compiler_version(name)
    if not v:
        return "not found"
    path, first, last = (v.split(" | ") + ["", ""])[:3]
    return f"{path} ({last if name == 'nvcc' else first})"


def _module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


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
    report["baselines"] = {
        "torch_sdpa": "yes" if report["torch"] != "not installed" else "no",
        "flash_attn (FA2)": "yes" if _module("flash_attn") else "no",
        "flash_attn_interface (FA3)": "yes" if _module("flash_attn_interface") else "no",
        "flash_attn.cute (FA4)": "yes" if _module("flash_attn") and _module("flash_attn.cute") else "no",
    }
    report["anthropic api key"] = "set" if os.environ.get("ANTHROPIC_API_KEY") else "not set (ANTHROPIC_API_KEY)"
    report["cache"] = str(cache_root())
    return report
