"""Every bundled task (kernels/*) is a working plugin: it loads, its reference.py meets the
TaskReference contract, its seed kernel compiles, and the CPU ones pass a quick check."""

from __future__ import annotations

import json
import shutil
import types

import pytest

from ks_tui.harness.reference_api import REQUIRED, TaskReference, check_reference
from tests.conftest import run_wide_lock
from tests.harness.conftest import REPO, run_ks

TASK_DIRS = sorted(p.parent for p in (REPO / "kernels").glob("*/task.yaml"))


def test_there_are_bundled_tasks():
    assert {"attention_cpu", "flash_attn_fwd"} <= {d.name for d in TASK_DIRS}


@pytest.mark.parametrize("task_dir", TASK_DIRS, ids=lambda d: d.name)
def test_bundled_task(task_dir, tmp_path_factory):
    from ks_tui.harness import build as build_mod
    from ks_tui.harness.runner import load_reference
    from ks_tui.task import load_task

    task = load_task(task_dir, REPO)
    assert task.name == task_dir.name and task.scenarios

    ref = load_reference(task)
    assert check_reference(ref) == []
    assert isinstance(ref, TaskReference)
    for name in task.baselines:
        assert name in getattr(ref, "BASELINES", {}), f"{task.name} lists baseline {name} its reference lacks"
    if task.tolerance.get("rule") == "lowp_relative":
        assert callable(getattr(ref, "reference_lowp", None))

    if task.language == "cuda" and shutil.which(task.build.compiler) is None:
        pytest.skip(f"{task.build.compiler} not installed: seed compile and check need it")
    # The run-wide build cache (tests/harness/conftest.py): tests/flash/test_kernel_build.py builds flash_attn_fwd's
    # seed the same way; the lock makes that one nvcc build per run, whichever test comes first.
    with run_wide_lock(tmp_path_factory, f"build-{task.name}-{task.kernel.name}"):
        record, lib = build_mod.build(task.kernel, language=task.language, compiler=task.build.compiler,
                                      flags=task.build.flags, arch=task.build.arch,
                                      shown_name=task.kernel.name, timeout=task.timeout_s)
    assert record["ok"] and lib is not None, record["log"][-2000:]

    if task.device == "cpu":
        out = run_ks("check", str(task_dir), "--quick", "--json")
        assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
        result = json.loads(out.stdout)
        assert result["scenarios"] and all(s["ok"] for s in result["scenarios"])


def test_contract_names_what_is_missing_or_wrong():
    mod = types.SimpleNamespace(make_inputs=lambda p, g, d: {}, reference=lambda i, p: None,
                                BASELINES={"ok": lambda i, p: None, "bad": 3}, shape_of="no",
                                BASELINE_GROUPS=["ok"])
    problems = check_reference(mod, "ref.py")
    assert problems == ["ref.py: missing make_output, call_kernel (see docs/task-format.md)",
                        "ref.py: shape_of must be a function",
                        "ref.py: BASELINES[bad] must be callable",
                        "ref.py: BASELINE_GROUPS must be a list of lists of baseline names"]
    assert not isinstance(mod, TaskReference)
    assert REQUIRED == ("make_inputs", "make_output", "call_kernel", "reference")
