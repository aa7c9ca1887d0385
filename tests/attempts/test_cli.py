"""`ks init / session new / sessions / try / log / show / rollback` as real child processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.attempts.conftest import git, result_for

ROOT = Path(__file__).resolve().parents[2]


def ks(*args: str, cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "ks_tui", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def bad_input(out: subprocess.CompletedProcess, needle: str) -> None:
    assert out.returncode == 2, out.stdout + out.stderr
    assert "Traceback" not in out.stderr
    assert needle in out.stderr, out.stderr


def test_init_makes_a_committed_workspace_without_a_git_identity(tmp_path, git_env):
    (git_env / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
    out = ks("init", "ws", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    ws = tmp_path / "ws"
    assert (ws / "kernels" / "attention_cpu" / "task.yaml").is_file()
    assert (ws / "question_bank.yaml").is_file()
    assert "/sessions/" in (ws / ".gitignore").read_text()
    # The tasks as task.yaml names them: no results/, device scripts or kernel variants.
    assert sorted(git(ws, "ls-files").split()) == [
        ".gitignore",
        "kernels/attention_cpu/kernel.cpp", "kernels/attention_cpu/reference.py", "kernels/attention_cpu/task.yaml",
        "kernels/flash_attn_fwd/README.md", "kernels/flash_attn_fwd/kernel.cu", "kernels/flash_attn_fwd/reference.py",
        "kernels/flash_attn_fwd/task.yaml",
        "question_bank.yaml"]
    assert git(ws, "log", "--format=%an <%ae>").strip() == "KernelSeek <ks@localhost>"
    assert git(ws, "status", "--porcelain") == ""
    assert "user" not in (git_env / ".gitconfig").read_text()

    again = ks("init", "ws", cwd=tmp_path)
    bad_input(again, "already exists")
    assert git(ws, "rev-list", "--count", "HEAD").strip() == "1"


def test_a_task_is_copied_as_the_files_its_task_yaml_names(tmp_path):
    from ks_tui.workspace import _copy_tasks
    from tests.attempts.conftest import KERNEL, TASK_YAML

    src = tmp_path / "bundled"
    toy = src / "toy"
    files = {"task.yaml": TASK_YAML + "readonly: [docs/notes.md]\n", "kernel.cpp": KERNEL, "reference.py": "#\n",
             "docs/notes.md": "read me\n", "README.md": "the task\n", "best/kernel.cpp": KERNEL,
             "scripts/run.sh": "echo\n", "results/run.json": "{}\n", "scratch.py": "#\n"}
    for rel, text in files.items():
        (toy / rel).parent.mkdir(parents=True, exist_ok=True)
        (toy / rel).write_text(text)
    (src / "not_a_task").mkdir()
    (src / "not_a_task" / "x.txt").write_text("x\n")
    _copy_tasks(src, tmp_path / "out")
    copied = sorted(p.relative_to(tmp_path / "out").as_posix() for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert copied == ["toy/README.md", "toy/docs/notes.md", "toy/kernel.cpp", "toy/reference.py", "toy/task.yaml"]
    assert (tmp_path / "out/toy/task.yaml").read_text() == files["task.yaml"]


def test_init_inside_an_existing_repo_commits_only_its_own_files(tmp_path, git_env):
    repo = tmp_path / "proj"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "main.c").write_text("int main(){}\n")
    git(repo, "add", "main.c")
    out = ks("init", "proj/gpu", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    committed = git(repo, "show", "--name-only", "--format=", "HEAD").split()
    assert "main.c" not in committed and "gpu/kernels/attention_cpu/task.yaml" in committed
    assert git(repo, "diff", "--cached", "--name-only").split() == ["main.c"]


def test_init_inside_a_bare_repo_is_bad_input(tmp_path, git_env):
    git(tmp_path, "init", "-q", "--bare", "store.git")
    out = ks("init", "store.git/ws", cwd=tmp_path)
    bad_input(out, "is inside the bare git repository")
    assert not (tmp_path / "store.git" / "ws" / "kernels").exists()


@pytest.mark.slow
def test_try_log_show_rollback_with_the_real_harness(tmp_path, git_env):
    assert ks("init", "ws", cwd=tmp_path).returncode == 0
    ws = tmp_path / "ws"
    new = ks("session", "new", "attention_cpu", cwd=ws)
    assert new.returncode == 0, new.stderr
    sid = new.stdout.strip()
    kernel = ws / "sessions" / sid / "worktree" / "kernels" / "attention_cpu" / "kernel.cpp"
    seed = kernel.read_bytes()

    first = ks("try", "--session", sid, "--check", "--quick", "--summary", "seed kernel", cwd=ws)
    assert first.returncode == 0, first.stdout + first.stderr
    again = ks("try", "--session", sid, "--check", "--quick", cwd=ws)
    assert again.returncode == 0 and "unchanged since attempt 1" in again.stdout

    kernel.write_text(kernel.read_text() + "\nthis is not C++;\n")
    unknown = ks("try", "--session", sid, "--check", "--quick", "--question", "q-layer", cwd=ws)
    bad_input(unknown, "unknown question id 'q-layer'")
    broken = ks("try", "--session", sid, "--check", "--quick", "--question", "layer-overlap", cwd=ws)
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "compile_error" in broken.stdout
    # The question this attempt answered goes into the bank's efficacy record.
    stats = json.loads(ks("questions", "stats", "--json", cwd=ws).stdout)
    assert stats["questions"]["layer-overlap"]["asked"] == 1
    assert stats["questions"]["layer-overlap"]["settled"] == 0  # needs K attempts after it

    log = json.loads(ks("log", "--session", sid, "--json", cwd=ws).stdout)
    assert [(a["number"], a["status"], a["author"]) for a in log["attempts"]] == \
        [(1, "correct", "human"), (2, "compile_error", "human")]
    assert log["attempts"][1]["question"] == "layer-overlap"

    show = json.loads(ks("show", "2", "--session", sid, "--json", cwd=ws).stdout)
    assert "+this is not C++;" in show["diff"]
    assert show["result"]["status"] == "compile_error" and show["result"]["compile"]["errors"]
    text = ks("show", "1", "--session", sid, cwd=ws)
    assert text.returncode == 0 and "d64-h4-4-q128-k128-b2" in text.stdout

    back = ks("rollback", "1", "--session", sid, cwd=ws)
    assert back.returncode == 0, back.stderr
    assert kernel.read_bytes() == seed
    history = git(ws, "log", f"ks/attention_cpu/{sid}", "--format=%B")
    assert "KS-Rollback-Of: 1" in history and "KS-Status: compile_error" in history
    assert "KS-Question: layer-overlap" in history
    assert git(ws, "status", "--porcelain") == ""

    listing = json.loads(ks("sessions", "--json", cwd=ws).stdout)["sessions"]
    assert [(s["id"], s["attempts"]) for s in listing] == [(sid, 3)]
    # `ks session list` (where `new`, `export` and `import` live) says the same
    assert json.loads(ks("session", "list", "--json", cwd=ws).stdout)["sessions"] == listing


@pytest.fixture
def toy_session(workspace):
    out = ks("session", "new", "toy", cwd=workspace)
    assert out.returncode == 0, out.stderr
    sid = out.stdout.strip()
    return workspace, sid, workspace / "sessions" / sid / "worktree" / "kernels" / "toy" / "kernel.cpp"


def test_try_records_a_result_computed_elsewhere(toy_session, tmp_path):
    ws, sid, kernel = toy_session
    kernel.write_text(kernel.read_text() + "// tuned on the GPU box\n")
    res_file = tmp_path / "remote.json"
    res_file.write_text(json.dumps(result_for(kernel, speedup=1.8)))
    out = ks("lab", "record", "--session", sid, "--result", str(res_file), "--author", "agent", cwd=ws)
    assert out.returncode == 0, out.stderr
    log = json.loads(ks("log", "--json", cwd=ws).stdout)["attempts"]
    assert (log[0]["speedup"], log[0]["author"], log[0]["best"]) == (1.8, "agent", True)

    kernel.write_text(kernel.read_text() + "// edited again\n")
    bad_input(ks("lab", "record", "--session", sid, "--result", str(res_file), cwd=ws), "different kernel")
    (tmp_path / "torn.json").write_text('{"status": "correct",')
    bad_input(ks("lab", "record", "--session", sid, "--result", str(tmp_path / "torn.json"), cwd=ws), "torn.json")
    other = result_for(kernel)
    other["task"] = "flash_attn_fwd"
    (tmp_path / "other.json").write_text(json.dumps(other))
    bad_input(ks("lab", "record", "--session", sid, "--result", str(tmp_path / "other.json"), cwd=ws), "flash_attn_fwd")
    assert "// edited again" in kernel.read_text()
    assert len(json.loads(ks("log", "--json", cwd=ws).stdout)["attempts"]) == 1


def test_try_kernel_records_a_file_measured_elsewhere_and_guards_unrecorded_edits(toy_session, tmp_path):
    ws, sid, kernel = toy_session
    candidate = tmp_path / "candidate.cpp"
    candidate.write_text(kernel.read_text() + "// candidate benched on the GPU box\n")
    res_file = tmp_path / "remote.json"
    res_file.write_text(json.dumps(result_for(candidate, speedup=1.4)))
    out = ks("lab", "record", "--session", sid, "--kernel", str(candidate), "--result", str(res_file), cwd=ws)
    assert out.returncode == 0, out.stderr
    assert kernel.read_text() == candidate.read_text()
    log = json.loads(ks("log", "--json", cwd=ws).stdout)["attempts"]
    assert [a["speedup"] for a in log] == [1.4]

    # An edit in the worktree that no attempt holds is not overwritten by --kernel.
    kernel.write_text(kernel.read_text() + "// unrecorded edit\n")
    other = tmp_path / "other.cpp"
    other.write_text(candidate.read_text() + "// another candidate\n")
    bad_input(ks("lab", "record", "--session", sid, "--kernel", str(other), "--no-run", cwd=ws), "no attempt holds")
    assert "// unrecorded edit" in kernel.read_text()
    bad_input(ks("lab", "record", "--session", sid, "--kernel", str(tmp_path / "missing.cpp"), "--no-run", cwd=ws),
              "missing.cpp")
    # A result of another file than --kernel: refused before the worktree is touched.
    kernel.write_text(candidate.read_text())
    bad_input(ks("lab", "record", "--session", sid, "--kernel", str(other), "--result", str(res_file), cwd=ws),
              "different kernel")
    assert kernel.read_text() == candidate.read_text()
    assert len(json.loads(ks("log", "--json", cwd=ws).stdout)["attempts"]) == 1


def test_try_records_a_new_measurement_of_an_unchanged_kernel(toy_session, tmp_path):
    """A subset run, then the full grid of the same file (as on the GPU box): two attempts, one kernel."""
    ws, sid, kernel = toy_session
    kernel.write_text(kernel.read_text() + "// candidate\n")
    subset, full = tmp_path / "subset.json", tmp_path / "full.json"
    subset.write_text(json.dumps(result_for(kernel, speedup=0.9, n_ok=2)))
    full_result = result_for(kernel, speedup=1.3)
    full_result["seed"] = 99
    full.write_text(json.dumps(full_result))
    assert ks("lab", "record", "--session", sid, "--result", str(subset), cwd=ws).returncode == 0
    out = ks("lab", "record", "--session", sid, "--result", str(full), cwd=ws)
    assert out.returncode == 0, out.stdout + out.stderr
    log = json.loads(ks("log", "--json", cwd=ws).stdout)["attempts"]
    assert [(a["number"], a["speedup"], a["best"]) for a in log] == [(1, 0.9, False), (2, 1.3, True)]
    assert "re-measure of attempt 1" in log[1]["summary"]
    branch = f"ks/toy/{sid}"
    assert git(ws, "diff", f"{branch}~1", branch) == ""  # the same kernel: an empty commit
    shown = json.loads(ks("show", "2", "--session", sid, "--json", cwd=ws).stdout)
    assert shown["result"]["seed"] == 99
    # The same result file twice is a double record, not a measurement.
    bad_input(ks("lab", "record", "--session", sid, "--result", str(full), cwd=ws), "already holds this result")
    bad_input(ks("lab", "record", "--session", sid, "--again", "--no-run", cwd=ws), "needs a harness run")
    assert len(json.loads(ks("log", "--json", cwd=ws).stdout)["attempts"]) == 2


@pytest.mark.slow
def test_try_again_runs_the_harness_on_an_unchanged_kernel(tmp_path, git_env):
    assert ks("init", "ws", cwd=tmp_path).returncode == 0
    ws = tmp_path / "ws"
    sid = ks("session", "new", "attention_cpu", cwd=ws).stdout.strip()
    assert ks("try", "--session", sid, "--check", "--quick", cwd=ws).returncode == 0
    again = ks("lab", "record", "--session", sid, "--again", "--check", "--json", cwd=ws)
    assert again.returncode == 0, again.stdout + again.stderr
    doc = json.loads(again.stdout)
    assert doc["attempt"]["number"] == 2 and "re-measure of attempt 1" in doc["attempt"]["summary"]
    assert doc["result"]["quick"] is False and doc["result"]["status"] == "correct"
    log = json.loads(ks("log", "--json", cwd=ws).stdout)["attempts"]
    assert [(a["number"], a["mode"]) for a in log] == [(1, "check-quick"), (2, "check")]


def test_no_run_commits_a_human_edit_as_unchecked(toy_session):
    ws, sid, kernel = toy_session
    kernel.write_text(kernel.read_text() + "// by hand\n")
    out = ks("try", "--session", sid, "--no-run", cwd=ws)
    assert out.returncode == 0, out.stderr
    text = ks("log", "--session", sid, cwd=ws).stdout
    assert "human" in text and "unchecked" in text
    again = ks("try", "--session", sid, "--no-run", "--json", cwd=ws)
    doc = json.loads(again.stdout)                   # --json: one document on stdout, even here
    assert doc["attempt"] is None and doc["unchanged_since"]["number"] == 1


def test_second_try_on_a_busy_session_is_refused(toy_session):
    ws, sid, kernel = toy_session
    code = ("import sys,time; from ks_tui.attempts import AttemptStore\n"
            "with AttemptStore(sys.argv[1]).lock(sys.argv[2]):\n"
            "    print('ready', flush=True); time.sleep(60)\n")
    holder = subprocess.Popen([sys.executable, "-c", code, str(ws), sid], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        kernel.write_text(kernel.read_text() + "// waiting\n")
        bad_input(ks("try", "--session", sid, "--no-run", cwd=ws), f"pid {holder.pid}")
    finally:
        holder.kill()
        holder.wait()
    assert "// waiting" in kernel.read_text()


def test_stale_lock_message_and_removal_through_the_cli(toy_session):
    ws, sid, kernel = toy_session
    gitdir = Path(git(kernel.parent, "rev-parse", "--absolute-git-dir").strip())
    lock = gitdir / "index.lock"
    lock.write_text("")
    os.utime(lock, (time.time() - 60, time.time() - 60))
    kernel.write_text(kernel.read_text() + "// after a crash\n")
    bad_input(ks("try", "--session", sid, "--no-run", cwd=ws), "stale git lock")
    out = ks("try", "--session", sid, "--no-run", "--remove-stale-lock", cwd=ws)
    assert out.returncode == 0, out.stderr
    assert not lock.exists()


def test_bad_names_are_one_line_errors(toy_session, tmp_path):
    ws, sid, _ = toy_session
    bad_input(ks("log", "--session", "nope", cwd=ws), "no session 'nope'")
    bad_input(ks("show", "7", "--session", sid, cwd=ws), "no attempts yet")
    bad_input(ks("rollback", "best", "--session", sid, cwd=ws), "no attempts yet")
    bad_input(ks("session", "new", "missing_task", cwd=ws), "no task 'missing_task'")
    (tmp_path / "loose" / "kernels").mkdir(parents=True)
    bad_input(ks("sessions", cwd=tmp_path / "loose"), "not inside a git repository")


def test_ks_works_from_inside_a_session_worktree_and_finds_hashes_across_sessions(toy_session, tmp_path):
    ws, sid, kernel = toy_session
    other = ks("session", "new", "toy", cwd=ws).stdout.strip()
    kernel.write_text(kernel.read_text() + "// first session\n")
    assert ks("try", "--session", sid, "--no-run", cwd=kernel.parent).returncode == 0
    sha = json.loads(ks("log", "--session", sid, "--json", cwd=ws).stdout)["attempts"][0]["sha"]
    assert other  # the latest session has no attempts; the hash still finds the first one
    shown = json.loads(ks("show", sha[:10], "--json", cwd=kernel.parent).stdout)
    assert shown["session"] == sid and "+// first session" in shown["diff"]


def test_a_selection_naming_every_scenario_is_the_full_grid(toy_session, tmp_path):
    """A device script that lists all of the grid's ids with --scenarios ran the full grid: that
    result is a full-grid bench (it can be the best); a list of some ids stays a subset probe."""
    ws, sid, kernel = toy_session
    kernel.write_text(kernel.read_text() + "// candidate\n")
    some, every = tmp_path / "some.json", tmp_path / "every.json"
    some_result = dict(result_for(kernel, speedup=1.5), selection=["n8"])
    every_result = dict(result_for(kernel, speedup=1.2), selection=["n16", "n8"], seed=77)
    some.write_text(json.dumps(some_result))
    every.write_text(json.dumps(every_result))
    assert ks("lab", "record", "--session", sid, "--result", str(some), cwd=ws).returncode == 0
    assert ks("lab", "record", "--session", sid, "--result", str(every), cwd=ws).returncode == 0
    log = json.loads(ks("log", "--json", cwd=ws).stdout)["attempts"]
    assert [(a["mode"], a["best"]) for a in log] == [("bench-subset", False), ("bench", True)]
    shown = json.loads(ks("show", "2", "--session", sid, "--json", cwd=ws).stdout)
    assert shown["result"]["selection"] is None and shown["result"]["seed"] == 77


@pytest.mark.slow
def test_a_session_exported_from_one_checkout_is_imported_into_a_fresh_clone(toy_session, tmp_path):
    ws, sid, kernel = toy_session
    (ws / "question_bank.yaml").write_text((ROOT / "question_bank.yaml").read_text())
    git(ws, "add", "question_bank.yaml")
    git(ws, "commit", "--quiet", "-m", "the project's bank")
    for n, speedup in enumerate((1.2, 1.5), 1):
        kernel.write_text(kernel.read_text() + f"// version {n}\n")
        res = tmp_path / f"r{n}.json"
        res.write_text(json.dumps(result_for(kernel, speedup=speedup)))
        assert ks("lab", "record", "-s", sid, "--result", str(res), "--summary", f"v{n}", "--question", "layer-overlap",
                  cwd=ws).returncode == 0
    assert ks("lab", "remark", "1", "-s", sid, "the 1.2x was a noisy baseline", cwd=ws).returncode == 0
    before = json.loads(ks("log", "-s", sid, "--json", cwd=ws).stdout)["attempts"]
    assert before[0]["remarks"][0]["text"] == "the 1.2x was a noisy baseline"
    trace = (ws / "sessions" / sid / "trace.jsonl").read_bytes()
    stats = ks("questions", "stats", "--json", cwd=ws).stdout
    assert json.loads(stats)["questions"]["layer-overlap"]["asked"] == 1  # two attempts in a row answer one ask

    empty = ks("session", "new", "toy", cwd=ws).stdout.strip()
    bad_input(ks("session", "export", empty, str(tmp_path / "e.tgz"), cwd=ws), "no attempts")
    out = ks("session", "export", sid, str(tmp_path / "s.tgz"), cwd=ws)
    assert out.returncode == 0, out.stderr
    assert "2 attempts" in out.stdout

    # A clone of the checkout's main branch: no session branches, no notes, no sessions/ folder.
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "--quiet", "--branch", git(ws, "branch", "--show-current").strip(), str(ws), str(clone))
    assert "no session" in ks("log", "-s", sid, cwd=clone).stderr
    kept = clone / "kernels" / "toy" / "results" / f"ks_session_{sid}.tar.gz"
    kept.parent.mkdir()
    kept.write_bytes((tmp_path / "s.tgz").read_bytes())
    assert f"ks session import kernels/toy/results/ks_session_{sid}.tar.gz" in ks("log", "-s", sid, cwd=clone).stderr
    kept.unlink()
    kept.parent.rmdir()
    # An import that fails after fetching the branch (here: sessions/ is a file) undoes itself.
    (clone / "sessions").write_text("in the way")
    bad_input(ks("session", "import", str(tmp_path / "s.tgz"), cwd=clone), "cannot import")
    assert git(clone, "branch", "--list", "ks/*").strip() == ""
    (clone / "sessions").unlink()
    out = ks("session", "import", str(tmp_path / "s.tgz"), cwd=clone)
    assert out.returncode == 0, out.stderr
    after = json.loads(ks("log", "-s", sid, "--json", cwd=clone).stdout)["attempts"]
    assert after == before
    assert json.loads(ks("show", "2", "-s", sid, "--json", cwd=clone).stdout)["result"]["geomean_speedup"] == 1.5
    assert (clone / "sessions" / sid / "trace.jsonl").read_bytes() == trace
    assert json.loads(ks("questions", "stats", "--json", cwd=clone).stdout)["questions"] == json.loads(stats)["questions"]
    assert git(clone, "status", "--porcelain") == ""
    # The imported session goes on: its worktree holds the latest kernel, and a new attempt is number 3.
    wt_kernel = clone / "sessions" / sid / "worktree" / "kernels" / "toy" / "kernel.cpp"
    assert wt_kernel.read_text() == kernel.read_text()
    wt_kernel.write_text(wt_kernel.read_text() + "// version 3\n")
    (tmp_path / "r3.json").write_text(json.dumps(result_for(wt_kernel, speedup=1.1)))
    assert ks("lab", "record", "-s", sid, "--result", str(tmp_path / "r3.json"), cwd=clone).returncode == 0
    assert [a["number"] for a in json.loads(ks("log", "-s", sid, "--json", cwd=clone).stdout)["attempts"]] == [1, 2, 3]

    # Again: refused, nothing changed.
    bad_input(ks("session", "import", str(tmp_path / "s.tgz"), cwd=clone), "already exists")
    # Not an export, a missing file, an export whose base commit this repository lacks.
    (tmp_path / "junk.tgz").write_text("not a tar")
    bad_input(ks("session", "import", str(tmp_path / "junk.tgz"), cwd=clone), "not a session export")
    bad_input(ks("session", "import", str(tmp_path / "none.tgz"), cwd=clone), "not found")
    other = tmp_path / "other"  # a workspace of its own, whose history lacks the session's base
    (other / "kernels").mkdir(parents=True)
    git(other, "init", "--quiet")
    (other / "kernels" / "f").write_text("x")
    git(other, "add", "kernels/f")
    git(other, "commit", "--quiet", "-m", "unrelated")
    refused = ks("session", "import", str(tmp_path / "s.tgz"), cwd=other)
    bad_input(refused, "must have")
    assert "--whole" in refused.stderr
    assert not (other / "sessions" / sid).exists()
    # Exported whole (the history it started from too), the same session goes into that unrelated workspace.
    out = ks("session", "export", "--whole", sid, str(tmp_path / "w.tgz"), cwd=ws)
    assert out.returncode == 0, out.stderr
    out = ks("session", "import", str(tmp_path / "w.tgz"), cwd=other)
    assert out.returncode == 0, out.stderr
    assert json.loads(ks("log", "-s", sid, "--json", cwd=other).stdout)["attempts"] == before
    assert git(other, "log", "-1", "--format=%s").strip() == "unrelated"  # its own branch is left as it was


@pytest.mark.slow
def test_show_compares_speed_with_the_other_attempt_and_flags_baseline_drift(toy_session, tmp_path):
    """Two full benches from different runs: `ks show 2 --against 1` puts their speedups side by side and says
    when the baselines moved (the machine, not the kernel)."""
    ws, sid, kernel = toy_session
    results = []
    for n, (kernel_ms, base_ms) in enumerate(((0.010, 0.012), (0.008, 0.0125)), 1):
        kernel.write_text(kernel.read_text() + f"// version {n}\n")
        r = result_for(kernel, speedup=1.0)
        for s in r["scenarios"]:
            s["time_ms"], s["baseline"]["time_ms"] = kernel_ms, base_ms
            s["speedup"] = base_ms / kernel_ms
        r["geomean_speedup"] = base_ms / kernel_ms
        results.append(r)
        f = tmp_path / f"r{n}.json"
        f.write_text(json.dumps(r))
        assert ks("lab", "record", "-s", sid, "--result", str(f), cwd=ws).returncode == 0
    text = ks("show", "2", "-s", sid, "--against", "1", cwd=ws).stdout
    assert "speed against attempt 1 (2 scenarios timed in both)" in text
    assert "1.2000x -> 1.5625x" in text and "kernel time attempt 1 / this 1.2500" in text
    assert "baselines ran 4.0% faster in attempt 1's run" in text  # 0.012 / 0.0125 = 0.96
    doc = json.loads(ks("show", "2", "-s", sid, "--json", cwd=ws).stdout)  # default: against the previous one
    assert doc["speed_against"]["attempt"] == 1 and abs(doc["speed_against"]["baseline_time"] - 0.96) < 1e-9
    assert json.loads(ks("show", "1", "-s", sid, "--json", cwd=ws).stdout)["speed_against"] is None
    # Same baselines: no drift line.
    assert "baselines ran" not in ks("show", "2", "-s", sid, "--against", "2", cwd=ws).stdout


def record_speedups(toy_session, tmp_path, speedups) -> None:
    """One attempt per speedup: the kernel's code edited (a comment alone would leave it the same kernel), its result
    computed elsewhere, `ks try --result`."""
    ws, sid, kernel = toy_session
    for i, speedup in enumerate(speedups):
        kernel.write_text(kernel.read_text() + f"static int try_{i};  // try {i}\n")
        res = tmp_path / f"r{i}.json"
        res.write_text(json.dumps(result_for(kernel, speedup=speedup)))
        assert ks("lab", "record", "--session", sid, "--result", str(res), cwd=ws).returncode == 0


def test_log_counts_the_attempts_since_the_best(toy_session, tmp_path):
    """The plateau a session is on: how many attempts came after the best correct one (`ks log`'s last line)."""
    ws, sid, _ = toy_session
    record_speedups(toy_session, tmp_path, (1.2, 0.9, 1.0))
    doc = json.loads(ks("log", "--json", cwd=ws).stdout)
    assert (doc["best"], doc["attempts_since_best"]) == (1, 2)
    text = ks("log", "--session", sid, cwd=ws).stdout
    assert text.splitlines()[-3:] == ["(* best correct attempt: #1; 2 attempts since)",
                                      "(last gain above the 2.0% noise: #1; 2 attempts since)",
                                      "(a gain on cpu must beat #1's kernel by 0.5% in one call (`ks show 1 --kernel`)"
                                      " or read above 1.2240x alone)"]


@pytest.mark.slow
def test_log_says_when_the_best_mark_moved_inside_the_noise(toy_session, tmp_path):
    """A rise smaller than the noise takes the best mark (the fastest run) but is no gain: `ks log` names the last
    attempt that beat the best before it by more than the noise, as the plateau decision point counts."""
    ws, sid, _ = toy_session
    record_speedups(toy_session, tmp_path, (1.0, 1.05, 1.06, 0.9))  # +5% is a gain; +0.95% after it is not
    doc = json.loads(ks("log", "--json", cwd=ws).stdout)
    assert (doc["best"], doc["attempts_since_best"]) == (3, 1)
    assert (doc["last_gain"], doc["attempts_since_gain"], doc["noise"]) == (2, 2, 0.02)
    text = ks("log", "--session", sid, cwd=ws).stdout
    assert text.splitlines()[-4:] == ["(* best correct attempt: #3; 1 attempt since)",
                                      "(last gain above the 2.0% noise: #2; 2 attempts since)",
                                      "(#3 leads #2 by +0.95%: inside the 2.0% noise between calls, so no gain)",
                                      # the bar is the gain's (#2), not the fastest reading's (#3)
                                      "(a gain on cpu must beat #2's kernel by 0.5% in one call (`ks show 2 --kernel`)"
                                      " or read above 1.0710x alone)"]
    assert doc["gain_needs"] == {"device": "cpu", "beside_kernel_of": 2, "paired_noise": 0.005,
                                 "alone_above": pytest.approx(1.05 * 1.02)}
    assert doc["best_lead"] == {"over": 2, "ratio": round(1.06 / 1.05, 6), "paired": False, "bar": 0.02}


@pytest.mark.slow
def test_log_counts_no_gain_for_a_remeasure_after_a_comment_only_edit(toy_session, tmp_path):
    """A kernel whose comments and layout were edited (a promotion to best/, a note) is the kernel it was: its
    re-measure 3% up is drift (and the noise the session has measured), not a gain. The same readings in a second
    session, where the second kernel changed its code, are a gain (above the bank's 2% floor)."""
    ws, first, kernel = toy_session
    out = ks("session", "new", "toy", cwd=ws)
    assert out.returncode == 0, out.stderr
    second = out.stdout.strip()
    seed = kernel.read_text()
    edits = {first: f"// promoted to best/: +3% in one call\n{seed.replace('    ', '  ')}/* v2 */\n",
             second: seed.replace("2.0f * x[i]", "x[i] * 2.0f")}
    for sid, edited in edits.items():
        path = ws / "sessions" / sid / "worktree" / "kernels" / "toy" / "kernel.cpp"
        for n, speedup in enumerate((1.0, 1.03)):
            if n:
                path.write_text(edited)
            res = tmp_path / f"{sid}-{n}.json"
            res.write_text(json.dumps(result_for(path, speedup=speedup)))
            assert ks("lab", "record", "-s", sid, "--result", str(res), cwd=ws).returncode == 0
    same = json.loads(ks("log", "-s", first, "--json", cwd=ws).stdout)
    changed = json.loads(ks("log", "-s", second, "--json", cwd=ws).stdout)
    assert [a["code"] for a in same["attempts"]][0] == [a["code"] for a in same["attempts"]][1]
    assert (same["last_gain"], same["attempts_since_gain"], same["noise"]) == (1, 1, pytest.approx(0.03))
    assert [a["code"] for a in changed["attempts"]][0] != [a["code"] for a in changed["attempts"]][1]
    assert (changed["last_gain"], changed["attempts_since_gain"], changed["noise"]) == (2, 0, 0.02)
    assert "(last gain above the 3.0% noise: #1; 1 attempt since)" in ks("log", "-s", first, cwd=ws).stdout


def record_pair(toy_session, tmp_path, tag: str, reference: float, candidate: float) -> None:
    """One `ks compare` round recorded: the latest kernel re-measured (`reference`), then an edit of its code
    (`candidate`), both results carrying the round's pair tag."""
    ws, sid, kernel = toy_session
    for n, speedup in enumerate((reference, candidate)):
        if n:
            code = f"static int candidate_{tag.replace(':', '_')};"  # new code: a comment alone is the same kernel
            kernel.write_text(kernel.read_text() + code + "  // the candidate\n")
        res = tmp_path / f"pair{n}.json"
        res.write_text(json.dumps({**result_for(kernel, speedup=speedup), "pair": tag}))
        assert ks("lab", "record", "--session", sid, "--result", str(res), cwd=ws).returncode == 0


def test_log_counts_a_gain_timed_beside_the_best_kernel(toy_session, tmp_path):
    """A same-call A/B (one `ks compare` round: one pair tag) decides at the bank's paired_noise: +0.8% over the best
    kernel's run in that round is a gain, where the same +0.8% against a reading from another call is not (v36)."""
    ws, _, _ = toy_session
    record_speedups(toy_session, tmp_path, (1.0,))
    record_pair(toy_session, tmp_path, "c5:1", 0.99, 0.99 * 1.008)
    doc = json.loads(ks("log", "--json", cwd=ws).stdout)
    # The best mark stays the fastest reading (#1's 1.0 from another call); the last gain is #3, which beat that
    # kernel beside it. Without the pair tags #3 (0.998) would be no gain: tests/questions/test_points.py.
    assert (doc["best"], doc["last_gain"], doc["attempts_since_gain"]) == (1, 3, 0)
    assert doc["best_lead"] is None  # the mark's run (#1) has no rival before it: nothing to explain
    assert doc["last_gain_paired"] == {"over": 2, "ratio": pytest.approx(1.008, abs=1e-4), "bar": 0.005,
                                       "declared": False}  # KS-Speedup keeps four decimals
    text = ks("log", cwd=ws).stdout
    assert ("(last gain: #3, +0.80% over #2, timed in the same call, above the 0.5% same-call noise; 0 attempts since)"
            in text.splitlines())
    # The next A/B must time #3's kernel; alone a run must still clear #1's reading (the higher bar) by the floor.
    assert doc["gain_needs"]["beside_kernel_of"] == 3 and doc["gain_needs"]["alone_above"] == pytest.approx(1.02)


def test_show_kernel_prints_the_file_an_attempt_committed(toy_session, tmp_path):
    """`ks show N --kernel`: the bytes attempt N measured, to time beside a candidate in one call (the partner the
    paired rule names), whatever the worktree holds now."""
    ws, sid, kernel = toy_session
    record_speedups(toy_session, tmp_path, (1.0, 1.1))
    first = ks("show", "1", "-s", sid, "--kernel", cwd=ws)
    assert first.returncode == 0 and first.stdout.endswith("// try 0\n") and "// try 1" not in first.stdout
    assert ks("show", "2", "-s", sid, "--kernel", cwd=ws).stdout == kernel.read_text()
    bad_input(ks("show", "9", "-s", sid, "--kernel", cwd=ws), "9")


def test_log_says_by_how_much_a_best_timed_beside_the_old_one_leads(toy_session, tmp_path):
    """Session 29's shape: v37 read 1.1638 beside v36's 1.1621 in one call, the fastest reading of the session, so it
    holds the best mark; +0.15% is under the bank's paired_noise (0.5%), so `ks log` says why it is no gain."""
    ws, sid, _ = toy_session
    record_speedups(toy_session, tmp_path, (1.1607,))
    record_pair(toy_session, tmp_path, "c2:1", 1.1621, 1.1638)
    doc = json.loads(ks("log", "--json", cwd=ws).stdout)
    assert (doc["best"], doc["last_gain"]) == (3, 1)
    # #2 is a re-measure of #1's kernel: #3's rival is #2, the run beside it, not #1 (another call)
    assert doc["best_lead"] == {"over": 2, "ratio": round(1.1638 / 1.1621, 6), "paired": True, "bar": 0.005}
    text = ks("log", "--session", sid, cwd=ws).stdout
    assert text.splitlines()[-2] == ("(#3 leads #2, timed in the same call, by +0.15%: inside the 0.5% same-call noise,"
                                     " so no gain)")
    # Session 35 took the fastest reading's kernel (#3's here) for the paired rule's partner; the rule names #1's.
    assert text.splitlines()[-1].startswith("(a gain on cpu must beat #1's kernel by 0.5% in one call")


@pytest.mark.slow
def test_log_names_a_later_run_that_ties_the_best(toy_session, tmp_path):
    """Two runs equal as recorded (4 decimals): the earlier keeps the mark, and `ks log` says the later one ties it,
    so the count since the best does not read as a mistake (flash_attn_fwd: #56's 1.15752 against #48's 1.15746)."""
    ws, sid, _ = toy_session
    record_speedups(toy_session, tmp_path, (1.15746, 0.9, 1.15752, 1.1))
    doc = json.loads(ks("log", "--json", cwd=ws).stdout)
    assert (doc["best"], doc["attempts_since_best"]) == (1, 3)
    text = ks("log", "--session", sid, cwd=ws).stdout
    assert "(* best correct attempt: #1; #3 ties it; 3 attempts since)" in text.splitlines()
