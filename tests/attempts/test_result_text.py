"""`ks show`'s text of a harness result: resources per kernel, and ptxas's performance notes when there are any."""

from __future__ import annotations

import json
from pathlib import Path

from ks_tui.attempts.render import result_text
from ks_tui.harness.report import kernel_label

SEED = Path(__file__).resolve().parents[1] / "app" / "data" / "h200_seed_bench_first6.json"


def test_kernels_show_resources_and_only_their_own_ptxas_notes():
    result = json.loads(SEED.read_text())  # the H200 run of the flash_attn_fwd seed
    text = result_text(result)
    assert "registers" in text and "B spills" in text and "ptxas:" not in text
    kernels = result["compile"]["kernels"]
    kernels[-1]["perf_warnings"] = ["C7511: wgmma.mma_async instructions are serialized due to insufficient "
                                    "register resources for the wgmma pipeline"]
    lines = result_text(result).splitlines()
    note = next(i for i, line in enumerate(lines) if "ptxas: C7511" in line)
    assert f"kernel {kernel_label(kernels[-1])}:" in lines[note - 1]  # right under its kernel's line
    assert "flash_fwd_kernel<fp16, 256>" in text
    assert sum("ptxas:" in line for line in lines) == 1


def test_the_results_warnings_are_shown():
    result = json.loads(SEED.read_text())
    assert "warnings:" not in result_text(result)
    result["warnings"] = ["other processes kept 1.8 of 2 CPU cores busy while the kernel was timed: ..."]
    lines = result_text(result).splitlines()
    assert lines[-2:] == ["warnings:", "  other processes kept 1.8 of 2 CPU cores busy while the kernel was timed: ..."]
