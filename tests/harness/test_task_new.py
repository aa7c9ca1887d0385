"""`ks task new`: a fresh workspace gets a task that `ks check` passes at once (real g++, real git)."""

from __future__ import annotations

import json

import git
import pytest

from tests.harness.conftest import run_ks


@pytest.fixture
def workspace(tmp_path):
    out = run_ks("init", str(tmp_path / "ws"), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    return tmp_path / "ws"


@pytest.mark.slow
def test_new_task_checks_at_once(workspace):
    made = run_ks("task", "new", "mytask", cwd=workspace)
    assert made.returncode == 0, made.stderr
    folder = workspace / "kernels" / "mytask"
    assert sorted(p.name for p in folder.iterdir()) == ["README.md", "kernel.cpp", "reference.py", "task.yaml"]
    assert "{name}" not in (folder / "README.md").read_text()
    # Committed, so a session's worktree has it.
    assert git.Repo(workspace).head.commit.message.strip() == "KernelSeek task mytask"

    out = run_ks("check", "mytask", "--quick", "--json", cwd=workspace)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    result = json.loads(out.stdout)
    assert result["task"] == "mytask"
    assert len(result["scenarios"]) == 2 and all(s["ok"] for s in result["scenarios"])

    # The kernel really is judged: a wrong one fails (exit 1).
    kernel = folder / "kernel.cpp"
    kernel.write_text(kernel.read_text().replace("alpha * x[i] + y[i]", "alpha * x[i] - y[i]"))
    bad = run_ks("check", "mytask", "--quick", cwd=workspace)
    assert bad.returncode == 1, bad.stdout + bad.stderr


def test_like_copies_a_task_under_the_new_name(workspace):
    out = run_ks("task", "new", "my_attn", "--like", "attention_cpu", cwd=workspace)
    assert out.returncode == 0, out.stderr
    folder = workspace / "kernels" / "my_attn"
    assert {p.name for p in folder.iterdir()} >= {"task.yaml", "kernel.cpp", "reference.py"}
    assert "name: my_attn\n" in (folder / "task.yaml").read_text()
    listed = run_ks("scenarios", "my_attn", "--json", cwd=workspace)
    assert listed.returncode == 0, listed.stderr


@pytest.mark.parametrize("args, message", [
    (["task", "new", "9lives"], "bad task name '9lives'"),
    (["task", "new", "a/b"], "bad task name 'a/b'"),
    (["task", "new", "attention_cpu"], "already exists; nothing was changed"),
    (["task", "new", "x", "--like", "no_such_task"], "no task 'no_such_task'"),
])
def test_bad_requests_exit_2_with_one_line(workspace, args, message):
    head = git.Repo(workspace).head.commit.hexsha
    out = run_ks(*args, cwd=workspace)
    assert out.returncode == 2
    assert message in out.stderr.splitlines()[0] and "Traceback" not in out.stderr
    assert git.Repo(workspace).head.commit.hexsha == head
    assert not (workspace / "kernels" / "x").exists()
