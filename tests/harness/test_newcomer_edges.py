"""What a newcomer hits first: compile errors named by their real file, a misspelt baseline name, and `ks check`
outside any workspace."""

from __future__ import annotations

import shutil

import pytest

from ks_tui.harness.compiler_output import parse_errors
from tests.harness.conftest import CPU_TASK_DIR, run_ks

GCC_LOG = """\
In file included from /usr/include/c++/12/vector:66,
                 from kernel.cpp:1:
/usr/include/c++/12/bits/stl_vector.h:298:7: error: forming pointer to reference type 'int&'
kernel.cpp:3:5: error: 'y' was not declared in this scope
"""


def test_an_error_in_a_system_header_keeps_the_headers_name():
    errors = parse_errors(GCC_LOG, "kernel.cpp")
    assert [(e["file"], e["line"]) for e in errors] == [("/usr/include/c++/12/bits/stl_vector.h", 298),
                                                       ("kernel.cpp", 3)]


@pytest.mark.slow
def test_a_misspelt_baseline_name_is_bad_input_in_one_line(tmp_path):
    task = tmp_path / "ws" / "kernels" / "attention_cpu"
    shutil.copytree(CPU_TASK_DIR, task, ignore=shutil.ignore_patterns("results", "__pycache__"))
    yaml = task / "task.yaml"
    yaml.write_text(yaml.read_text().replace("baselines: [torch_sdpa]", "baselines: [torch_spda]"))
    assert "torch_spda" in yaml.read_text()
    out = run_ks("check", str(task), "--scenarios", "d24-h2-1-q31-k45-b4")
    assert out.returncode == 2, out.stdout
    last = out.stderr.strip().splitlines()[-1]
    assert last == (f"ks: error: {yaml}: baselines: unknown 'torch_spda' (the reference provides: torch_sdpa)")
    assert "Traceback" not in out.stderr


def test_outside_a_workspace_check_says_it_uses_the_bundled_tasks(tmp_path):
    out = run_ks("scenarios", "attention_cpu", cwd=tmp_path, env={"KS_WORKSPACE": ""})
    assert out.returncode == 0, out.stderr
    assert out.stderr.startswith(f"ks: note: no workspace at or above {tmp_path}; using the bundled tasks in ")
    inside = run_ks("scenarios", "attention_cpu")  # the checkout is a workspace: nothing to say
    assert "ks: note" not in inside.stderr
