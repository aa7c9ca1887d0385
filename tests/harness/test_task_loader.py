"""Malformed task.yaml files: one message naming the file and the line, exit code 2, no traceback."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ks_tui.errors import InputFileError, KsError
from ks_tui.task import load_task
from tests.harness.conftest import CPU_TASK_DIR, REPO, run_ks


@pytest.fixture()
def task_copy(tmp_path) -> Path:
    dst = tmp_path / "kernels" / "attention_cpu"
    shutil.copytree(CPU_TASK_DIR, dst, ignore=shutil.ignore_patterns("results", "__pycache__"))
    return dst


def edit(task_dir: Path, old: str, new: str) -> int:
    """Replace `old` in task.yaml; return the 1-based line of the last line of `new`."""
    path = task_dir / "task.yaml"
    text = path.read_text()
    assert old in text, old
    text = text.replace(old, new, 1)
    path.write_text(text)
    return text[: text.index(new) + len(new.rstrip("\n"))].count("\n") + 1


# (old text, new text, expected words in the message); the line is where the new text lands.
CASES = {
    "yaml_syntax": ("description: Attention", "description: Attention: forward", "YAML syntax error"),
    "unknown_key": ("entry: attention_forward", "entry: attention_forward\nkernal: kernel.cpp", "unknown key 'kernal'"),
    "missing_file": ("kernel: kernel.cpp", "kernel: nope.cpp", "file not found: nope.cpp"),
    "grid_axis_not_list": ("causal: [false, true]", "causal: true", "must be a non-empty list"),
    "grid_axis_empty": ("causal: [false, true]", "causal: []", "must be a non-empty list"),
    "bad_expression": ("scale: \"1 / d ** 0.5\"", "scale: \"1 / dd ** 0.5\"", "unknown name 'dd'"),
    "unsafe_expression": ("flops: \"4 *", "flops: \"__import__('os').getpid() + 4 *", "may be called"),
    "text_times_a_big_number": ("scale: \"1 / d ** 0.5\"", "scale: \"'x' * 10 ** 10\"", "numbers only, not text"),
    "attribute_access": ("flops: \"4 *", "flops: \"b.__class__ * 4 *", "Attribute is not allowed"),
    "quick_unknown_id": ("  - d24-h2-1-q31-k45-b4\n", "  - d24-h2-1-q31-k45-b99\n", "quick id 'd24-h2-1-q31-k45-b99'"),
    "duplicate_ids": ("{'-causal' if causal else ''}", "", "duplicate scenario id"),
    "duplicate_key": ("timeout_s: 180", "timeout_s: 180\ntimeout_s: 90", "duplicate key 'timeout_s'"),
    "bad_rule": ("rule: fp32_relative", "rule: close_enough", "unknown tolerance rule"),
    "constraint": ("h_kv: 2, d: 48}", "h_kv: 3, d: 48}", "breaks the constraint"),
    "wrong_type": ("timeout_s: 180", "timeout_s: soon", "timeout_s must be a positive number"),
    "unsafe_tag": ("timeout_s: 180", "timeout_s: !!python/name:os.system 180", "YAML syntax error"),
    "rule_not_a_name": ("rule: fp32_relative", "rule: [fp32_relative]", "unknown tolerance rule"),
    "quick_not_an_id": ("  - d24-h2-1-q31-k45-b4\n", "  - {id: d24-h2-1-q31-k45-b4}\n", "is not a scenario"),
    "fractional_count": ("warmup: 2", "warmup: 2.5", "timing.warmup must be a positive whole number"),
    "alternate_not_a_flag": ("warmup: 2", "warmup: 2\n  alternate: 1", "timing.alternate must be true or false"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_malformed_task_names_file_and_line(task_copy, case):
    old, new, words = CASES[case]
    line = edit(task_copy, old, new)
    with pytest.raises(InputFileError) as info:
        load_task("attention_cpu", task_copy.parent.parent)
    msg = str(info.value)
    assert words in msg
    assert msg.startswith(f"{task_copy / 'task.yaml'}:")
    if case == "duplicate_ids":
        assert info.value.line is not None  # the grid item that repeats an id
    elif case == "constraint":
        assert info.value.line == (task_copy / "task.yaml").read_text().splitlines().index(
            'constraints: ["h_q % h_kv == 0"]') + 1
    else:
        assert info.value.line == line, msg


@pytest.mark.parametrize("case", ["yaml_syntax", "unknown_key", "missing_file", "quick_unknown_id",
                                  "unsafe_tag", "rule_not_a_name"])
def test_cli_exits_2_with_one_line_and_no_traceback(task_copy, case):
    old, new, words = CASES[case]
    line = edit(task_copy, old, new)
    for cmd in (["scenarios", str(task_copy)], ["check", str(task_copy), "--quick"]):
        out = run_ks(*cmd)
        assert out.returncode == 2, out.stderr
        assert "Traceback" not in out.stderr
        assert f"task.yaml:{line}: " in out.stderr and words in out.stderr
        assert out.stdout == ""


def test_unknown_task_name_lists_the_tasks():
    out = run_ks("-w", str(REPO), "scenarios", "no_such_task")
    assert out.returncode == 2
    assert "attention_cpu" in out.stderr and "Traceback" not in out.stderr


def test_unknown_scenario_id_is_bad_input(cpu_task):
    out = run_ks("check", "attention_cpu", "--scenarios", "d1-nope")
    assert out.returncode == 2 and "no scenario 'd1-nope'" in out.stderr


def test_grid_expands_with_derived_params_and_quick_subset(cpu_task):
    assert 12 <= len(cpu_task.scenarios) <= 30
    ids = [s.id for s in cpu_task.scenarios]
    assert len(set(ids)) == len(ids)
    s = cpu_task.scenario("d48-h8-2-q77-k301-b1-causal")
    assert s.params["causal"] is True and s.params["scale"] == pytest.approx(48 ** -0.5)
    assert cpu_task.flops_of(s) == pytest.approx(4 * 8 * 77 * 48 * ((301 - 77) + 301) / 2)
    assert [x.id for x in cpu_task.select(quick=True)] == [i for i in ids if i in cpu_task.quick]
    with pytest.raises(KsError):
        cpu_task.scenario("nope")


def test_list_form_and_every_n_quick(task_copy):
    text = (task_copy / "task.yaml").read_text()
    start, end = text.index("  grid:"), text.index("  id:")
    text = text[:start] + (
        "  list:\n"
        "    - {b: 1, s_q: 5, s_k: 9, h_q: 2, h_kv: 1, d: 8, causal: true}\n"
        "    - {b: 2, s_q: 7, s_k: 7, h_q: 2, h_kv: 2, d: 8, causal: false}\n"
        "    - {b: 1, s_q: 3, s_k: 3, h_q: 4, h_kv: 2, d: 16, causal: false}\n") + text[end:]
    start, end = text.index("quick:"), text.index("tolerance:")
    text = text[:start] + "quick: {every: 2}\n" + text[end:]
    (task_copy / "task.yaml").write_text(text)
    task = load_task(task_copy, REPO)
    assert [s.id for s in task.scenarios] == ["d8-h2-1-q5-k9-b1-causal", "d8-h2-2-q7-k7-b2", "d16-h4-2-q3-k3-b1"]
    assert task.quick == ["d8-h2-1-q5-k9-b1-causal", "d16-h4-2-q3-k3-b1"]


def test_broken_reference_module_is_bad_input(task_copy):
    (task_copy / "reference.py").write_text("from ks_tui.harness.attention import make_inputs\n")
    out = run_ks("check", str(task_copy), "--quick")
    assert out.returncode == 2, out.stdout + out.stderr
    assert "reference.py: missing make_output, call_kernel, reference" in out.stderr
    assert "Traceback" not in out.stderr and out.stdout == ""


def test_the_example_in_task_format_doc_loads(tmp_path):
    doc = (REPO / "docs" / "task-format.md").read_text()
    example = doc.split("```yaml\n", 1)[1].split("```", 1)[0]
    task_dir = tmp_path / "kernels" / "attention_cpu"
    shutil.copytree(CPU_TASK_DIR, task_dir)
    (task_dir / "task.yaml").write_text(example)
    (task_dir / "notes.md").write_text("read-only notes\n")
    task = load_task("attention_cpu", tmp_path)
    assert len(task.scenarios) == 4 and task.timing.threads == 4
    assert task.scenarios[0].params["dtype"] == "fp32"
    assert task_dir / "notes.md" in task.readonly


def test_a_selection_of_every_scenario_is_recorded_as_the_grid(cpu_task):
    from ks_tui.harness.result import grid_selection, skeleton

    every = [s.id for s in reversed(cpu_task.scenarios)]
    assert grid_selection(cpu_task, every) is None
    assert grid_selection(cpu_task, every[:1]) == every[:1]
    assert grid_selection(cpu_task, None) is None
    kernel = cpu_task.kernel
    assert skeleton(cpu_task, kernel, "bench", False, 1, every)["selection"] is None
    assert skeleton(cpu_task, kernel, "bench", False, 1, every[1:])["selection"] == every[1:]
