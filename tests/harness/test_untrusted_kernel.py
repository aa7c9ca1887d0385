"""Kernels are untrusted code: planted kernels that read the environment, write outside, edit their task files or
leave a daemon holding the output pipe, each contained or refused (harness/sandbox.py, secret_env.py, taskguard.py).

Each runs the real harness child with g++. Containment of writes and daemons needs a sandbox; the environment
scrub, the redaction and the task-file guard hold in every mode, and are checked with the sandbox off as well.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from pathlib import Path

import pytest

from ks_tui.harness import sandbox, taskguard
from ks_tui.harness.client import run_harness
from tests.harness import planted
from tests.harness.conftest import CPU_TASK_DIR, run_ks

SCENARIO = ["d24-h2-1-q31-k45-b4"]
KEY = "sk-ant-planted-" + "7" * 24
SECRETS = {"ANTHROPIC_API_KEY": KEY, "AWS_SECRET_ACCESS_KEY": "aws-secret-planted-0123456789",
           "MY_SERVICE_TOKEN": "token-planted-abcdefgh"}

# Load-time constructors: they run when the harness loads the library, before any check.
PRINTS_ENV = r"""
extern char** environ;
__attribute__((constructor)) static void planted_env() {
    for (char** e = environ; *e; ++e) std::printf("ENV %s\n", *e);
    // and every ancestor's environment it can read: the ks process that started the run holds the key
    for (pid_t pid = getppid(); pid > 1;) {
        char path[64]; std::snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
        if (FILE* f = std::fopen(path, "rb")) {
            std::vector<char> buf(1 << 20); size_t n = std::fread(buf.data(), 1, buf.size() - 1, f); std::fclose(f);
            for (size_t i = 0; i < n; i += std::strlen(buf.data() + i) + 1)
                if (std::strstr(buf.data() + i, "ANTHROPIC") || std::strstr(buf.data() + i, "SECRET"))
                    std::printf("ANCESTOR %s\n", buf.data() + i);
        }
        std::snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
        FILE* s = std::fopen(path, "r"); if (!s) break;
        char line[1024] = {0}; size_t m = std::fread(line, 1, sizeof line - 1, s); std::fclose(s); line[m] = 0;
        const char* close = std::strrchr(line, ')'); int ppid = 0;
        if (!close || std::sscanf(close + 2, "%*c %d", &ppid) != 1) break;
        pid = ppid;
    }
    std::fflush(stdout);
}
"""
WRITES_TO = r"""
__attribute__((constructor)) static void planted_write() {
    for (const char* var : {"KS_TEST_OUTSIDE", "KS_TEST_INSIDE"})
        if (const char* path = std::getenv(var)) {
            FILE* f = std::fopen(path, "w");
            std::printf("%s %s\n", var, f ? "written" : "refused");
            if (f) { std::fputs("planted\n", f); std::fclose(f); }
        }
    std::fflush(stdout);
}
"""
EDITS_TASK = r"""
__attribute__((constructor)) static void planted_edit() {
    if (const char* path = std::getenv("KS_TEST_TASK_YAML"))
        if (FILE* f = std::fopen(path, "a")) { std::fputs("\n# tolerance loosened by the kernel\n", f); std::fclose(f); }
}
"""
# A daemon: forks, leaves the session, names itself (its comm) and holds the output pipe; SCRUB drops its
# environment (and the run's mark with it) first.
DAEMON = r"""
#include <sys/prctl.h>
__attribute__((constructor)) static void planted_daemon() {
    const char* name = std::getenv("KS_TEST_DAEMON_NAME");
    if (!name) return;
    std::string keep(name);
    if (fork() == 0) { setsid(); SCRUB prctl(PR_SET_NAME, keep.c_str()); for (;;) pause(); }
}
"""


def kernel(tmp_path: Path, name: str, prelude: str) -> Path:
    path = tmp_path / f"{name}.cpp"
    path.write_text(planted.TEMPLATE.replace("PRELUDE", prelude + "\nPRELUDE").replace("#include <vector>",
                                             "#include <vector>\n#include <string>")
                    .replace("PRELUDE", "").replace("ROUND", "keep").replace("ENTRY", "").replace("SKIP_ROW", "")
                    .replace("CAUSAL_FLAG", "causal").replace("EXIT", ""))
    return path


@pytest.fixture()
def task_copy(tmp_path):
    from ks_tui.task import load_task

    dst = tmp_path / "ws" / "kernels" / "attention_cpu"
    shutil.copytree(CPU_TASK_DIR, dst, ignore=shutil.ignore_patterns("results", "__pycache__"))
    return load_task(dst, dst.parent.parent)


def box_mode() -> str:
    return sandbox.current().mode


def test_the_sandbox_mode_is_reported_in_the_result(cpu_task, tmp_path):
    r = run_harness(cpu_task, kernel(tmp_path, "plain", ""), scenarios=SCENARIO)
    assert r["status"] == "correct", r["message"]
    assert r["sandbox"] == box_mode()


@pytest.mark.parametrize("setting", ["auto", "off"])
def test_a_constructor_printing_the_environment_sees_no_secret_and_none_is_recorded(tmp_path, setting):
    """Through `ks check --json` as a real process, so that the ks process's own environment (the ancestor the
    kernel reads through /proc) holds the key as a user's would."""
    src = kernel(tmp_path, "prints_env", PRINTS_ENV)
    p = run_ks("check", "attention_cpu", "--source", str(src), "--scenarios", SCENARIO[0], "--json",
               env={**SECRETS, "KS_SANDBOX": setting, "KS_CACHE_DIR": os.environ["KS_CACHE_DIR"]})
    result = json.loads(p.stdout)
    tail = result["stderr_tail"]
    assert "ENV PATH=" in tail  # the constructor ran and printed its environment
    child_env = [ln for ln in tail.splitlines() if ln.startswith("ENV ")]
    assert not any(name in ln for ln in child_env for name in SECRETS), child_env
    for value in SECRETS.values():
        assert value not in p.stdout and value not in p.stderr
    if setting == "off":  # no pid namespace: it read the key from the ks process, and the record has it redacted
        assert "ANCESTOR ANTHROPIC_API_KEY=[redacted ANTHROPIC_API_KEY]" in tail
    if setting == "auto" and box_mode() != "none":  # in its own pid namespace the ks process is out of sight
        assert "ANCESTOR ANTHROPIC_API_KEY" not in tail


@pytest.mark.slow
def test_a_kernel_writing_outside_its_scratch_folder_is_refused_in_the_sandbox(task_copy, tmp_path, monkeypatch):
    if box_mode() != "bwrap":
        pytest.skip(f"the file system is confined by bubblewrap only; here: {sandbox.current().describe()}")
    outside, inside = tmp_path / "outside.txt", task_copy.dir / "planted.txt"
    monkeypatch.setenv("KS_TEST_OUTSIDE", str(outside))
    monkeypatch.setenv("KS_TEST_INSIDE", str(inside))
    r = run_harness(task_copy, kernel(tmp_path, "writes", WRITES_TO), scenarios=SCENARIO)
    assert "KS_TEST_OUTSIDE refused" in r["stderr_tail"] and "KS_TEST_INSIDE refused" in r["stderr_tail"]
    assert not outside.exists() and not inside.exists()
    assert r["status"] == "correct", r["message"]


@pytest.mark.slow
def test_a_kernel_editing_its_task_yaml_fails_the_run_and_the_file_comes_back(task_copy, tmp_path, monkeypatch):
    """With the sandbox off the edit lands; the guard finds it, fails the run and restores the file."""
    monkeypatch.setenv("KS_SANDBOX", "off")
    monkeypatch.setenv("KS_TEST_TASK_YAML", str(task_copy.yaml_path))
    before = task_copy.yaml_path.read_bytes()
    r = run_harness(task_copy, kernel(tmp_path, "edits", EDITS_TASK), scenarios=SCENARIO)
    assert r["status"] == "crashed"
    assert r["message"] == f"{taskguard.MESSAGE} (task.yaml); restored"
    assert task_copy.yaml_path.read_bytes() == before
    again = run_harness(task_copy, kernel(tmp_path, "plain", ""), scenarios=SCENARIO)
    assert again["status"] == "correct", again["message"]


def test_in_the_sandbox_the_task_yaml_cannot_be_edited_at_all(task_copy, tmp_path, monkeypatch):
    monkeypatch.setenv("KS_TEST_TASK_YAML", str(task_copy.yaml_path))
    before = task_copy.yaml_path.read_bytes()
    r = run_harness(task_copy, kernel(tmp_path, "edits", EDITS_TASK), scenarios=SCENARIO)
    assert task_copy.yaml_path.read_bytes() == before
    if box_mode() == "bwrap":
        assert r["status"] == "correct", r["message"]
    else:  # the edit landed and the guard caught it
        assert r["message"].startswith(taskguard.MESSAGE)


def test_a_replaced_reference_is_caught_and_put_back(task_copy):
    guard = taskguard.TaskGuard(taskguard.protected_files(task_copy))
    original = task_copy.reference.read_bytes()
    task_copy.reference.unlink()
    task_copy.reference.symlink_to("/etc/hostname")
    changed, failed = guard.restore()
    assert changed == [task_copy.reference] and not failed
    assert not task_copy.reference.is_symlink() and task_copy.reference.read_bytes() == original
    assert task_copy.kernel not in guard.kept  # a person may edit the kernel while it runs


def _named(name: str) -> list[int]:
    out = []
    for e in Path("/proc").iterdir():
        try:
            if e.name.isdigit() and (e / "comm").read_text().strip() == name:
                out.append(int(e.name))
        except OSError:
            pass
    return out


def _gone(name: str, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while _named(name):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.slow
@pytest.mark.parametrize("scrub", [False, True], ids=["marked", "scrubbed-env"])
def test_a_daemon_holding_the_output_pipe_does_not_outlive_the_run(cpu_task, tmp_path, monkeypatch, scrub):
    if scrub and box_mode() == "none":
        pytest.skip("a daemon that drops its environment and leaves the session is caught by a pid namespace only; "
                    f"here: {sandbox.current().describe()}")
    name = "ksd" + uuid.uuid4().hex[:10]
    monkeypatch.setenv("KS_TEST_DAEMON_NAME", name)
    src = kernel(tmp_path, "daemon", DAEMON.replace("SCRUB", "clearenv();" if scrub else ""))
    r = run_harness(cpu_task, src, scenarios=SCENARIO, timeout=120)
    assert r["status"] == "correct", r["message"]
    assert _gone(name), f"daemon {name} still running: {_named(name)}"
