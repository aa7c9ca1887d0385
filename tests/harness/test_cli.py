"""`ks check`, `ks bench`, `ks scenarios`, `ks doctor` as real child processes."""

from __future__ import annotations

import json
import re

import pytest

from tests.harness.conftest import run_ks

TWO = ["d24-h2-1-q31-k45-b4", "d16-h4-4-q200-k50-b1-causal"]


def test_check_quick_prints_a_table_and_a_summary():
    out = run_ks("check", "attention_cpu", "--quick")
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[0].split()[:3] == ["scenario", "status", "err/bound"]
    assert sum(1 for ln in lines if ln.split() and ln.split()[1:2] == ["ok"]) == 4
    assert lines[-1].startswith("status correct | correct 4/4")
    assert "[4/4] check" in out.stderr  # plain progress lines when stderr is not a terminal


@pytest.mark.slow
def test_bench_prints_speedups_and_the_geomean():
    out = run_ks("bench", "attention_cpu", "--scenarios", *TWO)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "speedup" in out.stdout.splitlines()[0]
    rows = [ln for ln in out.stdout.splitlines() if ln.startswith(tuple(TWO))]
    # the speedup, then the speed-of-light fraction and its bound
    assert len(rows) == 2 and all("torch_sdpa" in r and re.search(r"\d\.\d\dx +\d+% (compute|memory)$", r.rstrip())
                                  for r in rows)
    assert "geomean" in out.stdout.splitlines()[-1]


def test_json_prints_only_the_result():
    out = run_ks("bench", "attention_cpu", "--json", "--scenarios", TWO[0])
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert r["status"] == "correct" and r["correct"] == "1/1" and r["mode"] == "bench"
    s = r["scenarios"][0]
    assert s["time_ms"] > 0 and s["tflops"] > 0 and s["baseline"]["name"] == "torch_sdpa"
    assert s["speedup"] == s["baselines"]["torch_sdpa"] / s["time_ms"]
    assert r["geomean_speedup"] == r["geomean_by_baseline"]["torch_sdpa"]
    assert r["threads"] >= 1 and r["device"]
    t = r["timings"]
    assert set(t) >= {"compile_s", "import_s", "check_s", "bench_s", "total_s", "startup_s", "wall_s"}
    # Where the check and the bench spent their time: each part within its phase.
    check_parts = ("check_inputs_s", "check_kernel_s", "check_reference_s")
    bench_parts = ("bench_inputs_s", "bench_baseline_setup_s", "bench_timed_s", "recheck_kernel_s", "recheck_reference_s")
    assert all(t[k] >= 0 for k in check_parts + bench_parts)
    assert sum(t[k] for k in check_parts) <= t["check_s"] + 1e-3 and t["check_kernel_s"] > 0
    assert sum(t[k] for k in bench_parts) <= t["bench_s"] + 1e-3
    from ks_tui.harness.report import phase_line
    assert phase_line(r).startswith("time went to: check ") and "library setup" in phase_line(r)
    assert len(r["kernel_sha256"]) == 64
    assert out.stderr == ""  # no progress chatter with --json when stderr is not a terminal


def test_incorrect_kernel_exits_1(planted_dir):
    out = run_ks("check", "attention_cpu", "--source", str(planted_dir / "zeros.cpp"), "--scenarios", TWO[0])
    assert out.returncode == 1
    assert "FAIL" in out.stdout and "status incorrect" in out.stdout


def test_scenarios_json_and_table():
    out = run_ks("scenarios", "attention_cpu", "--json")
    doc = json.loads(out.stdout)
    assert doc["task"] == "attention_cpu" and 12 <= len(doc["scenarios"]) <= 30
    assert sum(s["quick"] for s in doc["scenarios"]) == 4
    table = run_ks("scenarios", "attention_cpu")
    assert table.returncode == 0 and "GFLOP" in table.stdout


def test_doctor_reports_the_machine():
    out = run_ks("doctor", "--json")
    assert out.returncode == 0
    doc = json.loads(out.stdout)
    assert set(doc) >= {"torch", "gpu", "g++", "nvcc", "baselines", "anthropic api key", "ncu", "compute-sanitizer",
                        "nvml"}
    assert doc["nvml"].startswith("nvidia-ml-py ")
    assert doc["anthropic api key"] in ("set", "not set (ANTHROPIC_API_KEY)")
    assert "sk-" not in out.stdout  # never prints the key itself
    assert doc["standby"].startswith("off (KS_STANDBY=0")  # the suite turns it off (tests/conftest.py)


def test_a_missing_baseline_is_reported_not_hidden(tmp_path):
    import shutil

    from tests.harness.conftest import CPU_TASK_DIR

    task = tmp_path / "kernels" / "attention_cpu"
    shutil.copytree(CPU_TASK_DIR, task)
    yaml_path = task / "task.yaml"
    yaml_path.write_text(yaml_path.read_text().replace("baselines: [torch_sdpa]", "baselines: [no_such_lib]"))
    out = run_ks("bench", str(task), "--json", "--scenarios", TWO[0])
    # a name the task's reference does not provide is a misspelling: bad input, not a run without a geomean
    assert out.returncode == 2
    assert json.loads(out.stdout)["error"] == (f"{yaml_path}: baselines: unknown 'no_such_lib' "
                                               "(the reference provides: torch_sdpa)")


def test_missing_source_file_is_bad_input(tmp_path):
    out = run_ks("check", "attention_cpu", "--source", str(tmp_path / "nope.cpp"))
    assert out.returncode == 2 and "kernel source not found" in out.stderr
    assert "Traceback" not in out.stderr


def test_a_usage_error_under_json_still_prints_one_json_document():
    """A script reading `ks ... --json` gets the error on stdout as JSON, whichever parser refused the line."""
    for args, needle in ((("bench", "attention_cpu", "--json", "--rounds", "3"), "unrecognized arguments: --rounds 3"),
                         (("scenarios", "--json"), "the following arguments are required: TASK"),
                         (("compare", "attention_cpu", "a=x.cpp", "--rounds", "many", "--json"), "invalid int value")):
        out = run_ks(*args)
        assert out.returncode == 2 and needle in out.stderr
        doc = json.loads(out.stdout)
        assert needle in doc["error"] and doc["exit_code"] == 2 and doc["hint"].endswith("--help")
    plain = run_ks("bench", "attention_cpu", "--rounds", "3")
    assert plain.returncode == 2 and plain.stdout == ""  # without --json stdout stays empty


@pytest.mark.slow
def test_doctor_names_the_config_files_it_read_and_what_overrides_them(tmp_path):
    user = tmp_path / "xdg" / "ks" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text('model = "claude-from-user-file"\n')
    ws = tmp_path / "ws"
    (ws / "kernels").mkdir(parents=True)
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    doc = json.loads(run_ks("-w", str(ws), "doctor", "--json", env=env).stdout)["config"]
    assert doc == {str(user): "read", str(ws / ".ks" / "config.toml"): "absent",
                   "environment": "no KS_* setting", "model": "claude-from-user-file"}

    (ws / ".ks").mkdir()
    (ws / ".ks" / "config.toml").write_text("max_tokens = 1.5\n")  # the workspace file is broken
    out = run_ks("-w", str(ws), "doctor", env={**env, "KS_MODEL": "claude-from-env"})
    assert out.returncode == 0  # doctor reports a bad setting; it does not stop on it
    line = next(x for x in out.stdout.splitlines() if x.startswith("config"))
    assert f"{ws / '.ks' / 'config.toml'}: broken" in line and "environment: KS_MODEL" in line
    assert "model: none: " in line and "max_tokens" in line
