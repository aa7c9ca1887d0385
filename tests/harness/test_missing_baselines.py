"""A bench whose baselines cannot run says so instead of reporting a silent null geomean."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.harness.conftest import CPU_TASK_DIR, run_ks

NO_BASELINE_REFERENCE = '''
from ks_tui.tasklib.attention.helpers import make_inputs, make_output, reference, shape_of
from ks_tui.tasklib.attention.helpers import call_cpu as call_kernel
from ks_tui.harness.reference_api import Unavailable


def _never(inputs, p):
    raise Unavailable("not installed on this box")


BASELINES = {"torch_sdpa": _never}
'''


@pytest.mark.slow
def test_bench_with_no_baseline_warns_and_names_the_reason(tmp_path):
    task = tmp_path / "attention_cpu"
    shutil.copytree(CPU_TASK_DIR, task, ignore=shutil.ignore_patterns("results"))
    (task / "reference.py").write_text(NO_BASELINE_REFERENCE)
    first = json.loads(run_ks("scenarios", str(task), "--json").stdout)["scenarios"][0]["id"]
    out = run_ks("bench", str(task), "--scenarios", first, "--json")
    result = json.loads(out.stdout)
    assert result["status"] == "correct"
    assert result["geomean_speedup"] is None and result["geomean_scenarios"] == 0
    assert any(w.startswith("geomean over 0 of 1 timed scenarios") for w in result["warnings"])
    assert result["scenarios"][0]["skipped_baselines"]["torch_sdpa"] == "not installed on this box"
    human = run_ks("bench", str(task), "--scenarios", first)
    assert "geomean over 0 of 1 timed scenarios" in human.stdout
