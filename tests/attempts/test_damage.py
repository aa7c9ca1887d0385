"""Damage the session 22 audit did to sessions: a result file that is not one, a workspace
moved to another folder, an export cut short, one session's unreadable session.json. Each
is refused in one line or mended, and nothing recorded is lost. Real git, real `ks`."""

from __future__ import annotations

import gzip
import io
import json
import shutil
import subprocess
import tarfile

import pytest

from tests.attempts.conftest import git, result_for
from tests.attempts.test_cli import bad_input, ks, toy_session  # noqa: F401 - toy_session is a fixture


@pytest.mark.parametrize("edit, words", [
    (lambda r: r.update(geomean_speedup=float("nan")), "'geomean_speedup' must be a positive finite number"),
    (lambda r: r.update(geomean_speedup=1e400), "'geomean_speedup' must be a positive finite number"),
    (lambda r: r.update(selection=5), "'selection' must be a list of scenario ids"),
])
def test_a_result_file_with_impossible_values_records_nothing(toy_session, tmp_path, edit, words):  # noqa: F811
    ws, sid, kernel = toy_session
    kernel.write_text(kernel.read_text() + "// measured elsewhere\n")
    result = result_for(kernel, speedup=1.5)
    edit(result)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(result))  # NaN and inf go out as the bare words Python's json accepts back
    bad_input(ks("lab", "record", "-s", sid, "--result", str(path), cwd=ws), words)
    bad_input(ks("lab", "record", "-s", sid, "--result", str(tmp_path), cwd=ws), "cannot read")  # a folder
    assert json.loads(ks("log", "-s", sid, "--json", cwd=ws).stdout)["attempts"] == []
    assert "// measured elsewhere" in kernel.read_text()


def test_a_moved_workspace_mends_its_worktree_link_and_keeps_the_unrecorded_edit(toy_session, tmp_path):  # noqa: F811
    ws, sid, kernel = toy_session
    kernel.write_text(kernel.read_text() + "// v1\n")
    assert ks("try", "-s", sid, "--no-run", cwd=ws).returncode == 0
    kernel.write_text(kernel.read_text() + "// typed, not yet recorded\n")
    moved = tmp_path / "moved"
    shutil.move(str(ws), str(moved))

    out = ks("try", "-s", sid, "--no-run", cwd=moved)
    assert out.returncode == 0, out.stderr
    log = json.loads(ks("log", "-s", sid, "--json", cwd=moved).stdout)["attempts"]
    assert [a["number"] for a in log] == [1, 2]
    wt = moved / "sessions" / sid / "worktree"
    assert "// typed, not yet recorded" in git(wt, "show", "HEAD:kernels/toy/kernel.cpp")


def test_an_export_cut_short_is_refused_before_anything_is_imported(toy_session, tmp_path):  # noqa: F811
    ws, sid, kernel = toy_session
    kernel.write_text(kernel.read_text() + "// v1\n")
    res = tmp_path / "r.json"
    res.write_text(json.dumps(result_for(kernel, speedup=1.3)))
    assert ks("lab", "record", "-s", sid, "--result", str(res), cwd=ws).returncode == 0
    export = tmp_path / "s.tgz"
    assert ks("session", "export", sid, str(export), cwd=ws).returncode == 0

    raw = gzip.decompress(export.read_bytes())
    bundle = next(m for m in tarfile.open(fileobj=io.BytesIO(raw)) if m.name == "session.bundle")
    cut = tmp_path / "cut.tgz"  # ends after the bundle: tar reads it as whole, without results or trace
    cut.write_bytes(gzip.compress(raw[:bundle.offset_data + (bundle.size + 511) // 512 * 512]))
    damaged = tmp_path / "damaged.tgz"  # gzip's checksum no longer matches
    data = bytearray(export.read_bytes())
    data[len(data) // 3] ^= 0xFF
    damaged.write_bytes(bytes(data))

    clone = tmp_path / "clone"
    git(tmp_path, "clone", "--quiet", str(ws), str(clone))
    for bad, words in ((cut, "no results.json"), (damaged, "not a session export")):
        bad_input(ks("session", "import", str(bad), cwd=clone), words)
    assert not (clone / "sessions").exists() or not any((clone / "sessions").iterdir())
    out = ks("session", "import", str(export), cwd=clone)  # the whole export still imports afterwards
    assert out.returncode == 0, out.stderr
    assert json.loads(ks("log", "-s", sid, "--json", cwd=clone).stdout)["attempts"][0]["speedup"] == 1.3


def test_one_unreadable_session_file_does_not_hide_the_other_sessions(toy_session):  # noqa: F811
    ws, sid, _ = toy_session
    other = ks("session", "new", "toy", cwd=ws).stdout.strip()
    (ws / "sessions" / sid / "session.json").write_text("{bad")
    out = ks("sessions", cwd=ws)
    assert out.returncode == 0, out.stderr
    assert sid in out.stdout and other in out.stdout
    bad_input(ks("log", "-s", sid, cwd=ws), "unreadable session file")  # that session itself names the file


@pytest.mark.slow
def test_an_edit_made_while_the_harness_runs_keeps_the_measured_kernel_and_its_result(tmp_path, git_env):
    import os
    import stat
    import subprocess
    import sys
    import time

    from tests.attempts.test_cli import ROOT

    assert ks("init", "ws", cwd=tmp_path).returncode == 0
    ws = tmp_path / "ws"
    sid = ks("session", "new", "attention_cpu", cwd=ws).stdout.strip()
    kernel = ws / "sessions" / sid / "worktree" / "kernels" / "attention_cpu" / "kernel.cpp"
    measured = kernel.read_text() + f"// measured {time.time()}\n"  # new bytes: no build cache hit
    kernel.write_text(measured)
    # A compiler that says when it starts and takes its time, so the edit lands mid-run.
    slow = tmp_path / "bin"
    slow.mkdir()
    started = tmp_path / "compiling"
    (slow / "g++").write_text(f"#!/bin/sh\ntouch {started}\nsleep 2\nexec /usr/bin/g++ \"$@\"\n")
    (slow / "g++").chmod((slow / "g++").stat().st_mode | stat.S_IEXEC)
    env = dict(os.environ, PYTHONPATH=str(ROOT), PATH=f"{slow}:{os.environ['PATH']}",
               KS_CACHE_DIR=str(tmp_path / "cache"), KS_SANDBOX="off")  # the stand-in g++ writes beside the test
    run = subprocess.Popen([sys.executable, "-m", "ks_tui", "try", "-s", sid, "--check", "--quick"], cwd=ws, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not started.exists():
        assert time.monotonic() < deadline and run.poll() is None, run.stderr.read() if run.poll() is not None else ""
        time.sleep(0.05)
    kernel.write_text(measured + "// typed during the run\n")
    out, err = run.communicate(timeout=120)

    assert run.returncode == 2 and "the kernel changed while the harness ran" in err and "Traceback" not in err
    [kept_kernel] = (ws / "sessions" / sid / "unrecorded").glob("*-kernel.cpp")
    [kept_result] = (ws / "sessions" / sid / "unrecorded").glob("*-result.json")
    assert kept_kernel.read_text() == measured
    assert json.loads(kept_result.read_text())["status"] == "correct"
    assert "// typed during the run" in kernel.read_text()  # the newer edit is untouched

    # The hint's two commands record both, the measured one with its result.
    assert ks("try", "-s", sid, "--no-run", cwd=ws).returncode == 0
    out = ks("lab", "record", "-s", sid, "--kernel", str(kept_kernel), "--result", str(kept_result), cwd=ws)
    assert out.returncode == 0, out.stderr
    log = json.loads(ks("log", "-s", sid, "--json", cwd=ws).stdout)["attempts"]
    assert [(a["author"], a["status"]) for a in log] == [("human", "unchecked"), ("human", "correct")]


def test_a_stale_notes_lock_is_named_in_the_error(toy_session):  # noqa: F811
    ws, sid, kernel = toy_session
    kernel.write_text(kernel.read_text() + "// v1\n")
    assert ks("try", "-s", sid, "--no-run", cwd=ws).returncode == 0
    lock = ws / ".git" / "refs" / "notes" / "ks-remarks.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text("")
    bad_input(ks("lab", "remark", "1", "-s", sid, "a remark", cwd=ws), "ks-remarks.lock")


@pytest.mark.slow
def test_a_new_session_is_the_default_at_once(workspace, monkeypatch):
    # Dates far apart, so the order cannot come from ties within one second.
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2020-01-01T00:00:00")
    git(workspace, "commit", "--quiet", "--amend", "--no-edit", "--date=2020-01-01T00:00:00")
    monkeypatch.delenv("GIT_COMMITTER_DATE")
    older = ks("session", "new", "toy", cwd=workspace).stdout.strip()
    kernel = workspace / "sessions" / older / "worktree" / "kernels" / "toy" / "kernel.cpp"
    kernel.write_text(kernel.read_text() + "// v1\n")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2021-01-01T00:00:00")
    assert ks("try", "-s", older, "--no-run", cwd=workspace).returncode == 0  # the older session's last commit
    monkeypatch.delenv("GIT_COMMITTER_DATE")
    newer = ks("session", "new", "toy", cwd=workspace).stdout.strip()  # its branch sits at the 2020 commit
    assert json.loads(ks("log", "--json", cwd=workspace).stdout)["session"]["id"] == newer


def test_a_failing_checkout_hook_leaves_no_half_made_session(workspace):
    hook = workspace / ".git" / "hooks" / "post-checkout"
    hook.write_text("#!/bin/sh\necho 'hook says no' >&2\nexit 1\n")
    hook.chmod(0o755)
    bad_input(ks("session", "new", "toy", cwd=workspace), "creating the session worktree failed")
    assert git(workspace, "branch", "--list", "ks/*").strip() == ""
    assert not (workspace / "sessions").exists() or not any((workspace / "sessions").iterdir())
    assert "no sessions" in ks("sessions", cwd=workspace).stdout + ks("sessions", cwd=workspace).stderr


def test_export_warns_when_the_worktree_holds_an_unrecorded_edit(toy_session, tmp_path):  # noqa: F811
    ws, sid, kernel = toy_session
    kernel.write_text(kernel.read_text() + "// v1\n")
    assert ks("try", "-s", sid, "--no-run", cwd=ws).returncode == 0
    kernel.write_text(kernel.read_text() + "// not recorded\n")
    out = ks("session", "export", sid, str(tmp_path / "s.tgz"), cwd=ws)
    assert out.returncode == 0 and "an edit not recorded as an attempt" in out.stderr


@pytest.mark.slow
def test_a_removed_worktree_or_branch_is_named_with_the_way_back(toy_session):  # noqa: F811
    ws, sid, kernel = toy_session
    kernel.write_text(kernel.read_text() + "// v1\n")
    assert ks("try", "-s", sid, "--no-run", cwd=ws).returncode == 0
    sha = json.loads(ks("log", "-s", sid, "--json", cwd=ws).stdout)["attempts"][0]["sha"]
    branch = f"ks/toy/{sid}"

    git(ws / "sessions" / sid / "worktree", "switch", "--quiet", "--detach")
    git(ws, "branch", "-D", branch)
    git(ws / "sessions" / sid / "worktree", "switch", "--quiet", "--orphan", branch)
    for cmd in (["try", "--no-run"], ["log"], ["rollback", "1"]):
        bad_input(ks(*cmd, "-s", sid, cwd=ws), f"branch {branch} no longer exists")
    hint = f"git -C {ws} branch -f {branch} {sha}"
    assert hint in ks("log", "-s", sid, cwd=ws).stderr
    subprocess.run(hint.split(), check=True, capture_output=True)  # the hint brings the history back
    assert [a["sha"] for a in json.loads(ks("log", "-s", sid, "--json", cwd=ws).stdout)["attempts"]] == [sha]

    shutil.rmtree(ws / "sessions" / sid / "worktree")
    bad_input(ks("show", "1", "-s", sid, cwd=ws), f"session {sid} has no worktree")


def test_a_kill_between_the_commit_and_its_result_note_loses_no_result(toy_session, tmp_path):  # noqa: F811
    import sys

    from tests.attempts.test_cli import ROOT

    ws, sid, kernel = toy_session
    kernel.write_text(kernel.read_text() + "// v1\n")
    result = result_for(kernel, speedup=1.7)
    # A real process, killed at the one moment that matters: its commit is made, its note is not.
    code = ("import os, sys, json\n"
            f"sys.path.insert(0, {str(ROOT)!r})\n"
            "from ks_tui.attempts import AttemptStore\n"
            f"store = AttemptStore({str(ws)!r})\n"
            "store._write_note = lambda *a: os.kill(os.getpid(), 9)\n"
            f"store.record({sid!r}, json.loads({json.dumps(json.dumps(result))}))\n")
    died = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert died.returncode == -9, died.stderr
    log = json.loads(ks("log", "-s", sid, "--json", cwd=ws).stdout)["attempts"]
    assert [(a["number"], a["speedup"]) for a in log] == [(1, 1.7)]  # the commit and its trailers are there

    shown = ks("show", "1", "-s", sid, "--json", cwd=ws)  # a reader puts the note back
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["result"]["geomean_speedup"] == 1.7
    assert not (ws / "sessions" / sid / "pending-result.json").exists()
