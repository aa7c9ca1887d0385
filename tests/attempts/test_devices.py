"""Speedups measured on different devices are not compared: the KS-Device trailer, the best mark per device,
the note `ks try` prints when the session moves machines, `ks log`, rollbacks and old attempts without the
trailer (real git repositories, real `ks` child processes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ks_tui.attempts import AttemptStore
from ks_tui.attempts.model import short_device
from ks_tui.attempts.render import log_table
from ks_tui.attempts.speed_diff import compare_results, comparison_text
from ks_tui.attempts.store import NOTES_REF
from tests.attempts.conftest import git, result_for

ROOT = Path(__file__).resolve().parents[2]
H200, H100 = "NVIDIA H200", "NVIDIA H100 80GB HBM3"


def ks(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ks_tui", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=240, env=dict(os.environ, PYTHONPATH=str(ROOT)))


def on(device: str, kernel: Path, speedup: float, **kw) -> dict:
    return dict(result_for(kernel, speedup=speedup), device=device, **kw)


def edit(kernel: Path, marker: str) -> None:
    kernel.write_text(kernel.read_text() + f"// {marker}\n")


def session_with(workspace: Path, *runs: tuple[str, float]):
    """A new session of the toy task with one attempt per (device, speedup), each its own kernel edit."""
    store = AttemptStore(workspace)
    s = store.new_session("toy")
    kernel = store.kernel_path(s.id)
    for i, (device, speedup) in enumerate(runs):
        edit(kernel, f"run {i}")
        store.record(s.id, on(device, kernel, speedup))
    return store, s, kernel


def test_the_best_is_chosen_among_runs_on_the_latest_device(workspace):
    store, s, kernel = session_with(workspace, (H200, 1.30), (H100, 1.10))
    msg = git(workspace, "log", "-1", "--format=%B", s.branch)
    assert f"KS-Device: {H100}" in msg
    atts = store.attempts(s.id)
    assert [a.device for a in atts] == [H200, H100]
    assert [a.best for a in atts] == [False, True]  # 1.30 on the H200 does not outrank the H100's 1.10
    edit(kernel, "c")
    store.record(s.id, on(H100, kernel, 1.05))
    assert store.resolve(s.id, "best").number == 2
    edit(kernel, "d")
    store.record(s.id, on(H200, kernel, 1.20))  # back on the H200: its own runs compete again
    assert store.resolve(s.id, "best").number == 1


def test_a_rollback_carries_its_targets_device_and_does_not_move_the_session(workspace):
    store, s, _ = session_with(workspace, (H200, 1.30), (H100, 1.10))
    rb = store.rollback(s.id, 1)
    assert rb.device == H200 and f"KS-Device: {H200}" in git(workspace, "log", "-1", "--format=%B", rb.sha)
    # The rollback measured nothing: the session is still on the H100, whose best is attempt 2.
    assert store.resolve(s.id, "best").number == 2


def test_attempts_without_the_trailer_take_the_device_of_their_stored_result(workspace):
    """Sessions recorded before KS-Device: the result note names the device, and the best is per device there too."""
    store, s, kernel = session_with(workspace, (H200, 1.30))
    old = store.attempts(s.id)[0]
    # Rewrite that commit as an old ks wrote it (no KS-Device line), its result note moved along.
    message = git(workspace, "log", "-1", "--format=%B", old.sha).replace(f"KS-Device: {H200}\n", "")
    git(s.worktree, "commit", "--amend", "-q", "-m", message)
    new_sha = git(s.worktree, "rev-parse", "HEAD").strip()
    git(workspace, "notes", f"--ref={NOTES_REF}", "copy", old.sha, new_sha)
    assert "KS-Device" not in git(workspace, "log", "-1", "--format=%B", new_sha)

    edit(kernel, "new")
    store.record(s.id, on(H100, kernel, 1.10))
    fresh = AttemptStore(workspace)  # no cache from the writes above
    atts = fresh.attempts(s.id)
    assert [a.device for a in atts] == [H200, H100]
    assert [a.best for a in atts] == [False, True]


@pytest.mark.slow
def test_ks_try_and_ks_log_say_when_the_session_moved_machines(workspace, tmp_path):
    out = ks("session", "new", "toy", cwd=workspace)
    assert out.returncode == 0, out.stderr
    sid = out.stdout.strip()
    kernel = workspace / "sessions" / sid / "worktree" / "kernels" / "toy" / "kernel.cpp"
    res = tmp_path / "r.json"

    edit(kernel, "a")
    res.write_text(json.dumps(on(H200, kernel, 1.30)))
    first = ks("lab", "record", "--session", sid, "--result", str(res), cwd=workspace)
    assert first.returncode == 0, first.stderr
    assert "note:" not in first.stdout  # nothing to compare with yet
    edit(kernel, "b")
    res.write_text(json.dumps(on(H100, kernel, 1.10)))
    moved = ks("lab", "record", "--session", sid, "--result", str(res), cwd=workspace)
    assert moved.returncode == 0, moved.stderr
    assert f"note: measured on {H100}; attempt 1 ran on {H200} (fastest on {H200}: #1, 1.300x)" in moved.stdout
    edit(kernel, "c")
    res.write_text(json.dumps(on(H100, kernel, 1.00)))
    same = ks("lab", "record", "--session", sid, "--result", str(res), cwd=workspace)
    assert same.returncode == 0 and "note:" not in same.stdout  # said once, at the move

    log = ks("log", "--session", sid, cwd=workspace).stdout
    rows = {line[1:5].strip(): line for line in log.splitlines() if line[1:5].strip().isdigit()}
    # the tag drops the vendor word both names share; the footer below keeps the full names
    assert "bench        [on H200] " in rows["1"] and "[on" not in rows["2"] and rows["2"].startswith("*")
    # `ks log` on a terminal cuts each line to its width: the tag comes before the summary, so it stays
    narrow = log_table(AttemptStore(workspace).attempts(sid), width=120)
    assert "[on H200]" in next(line for line in narrow.splitlines() if line[1:5].strip() == "1")
    assert f"(the best is chosen among runs on {H100}, the latest measurement's device; fastest on {H200}: #1" in log
    as_json = json.loads(ks("log", "--session", sid, "--json", cwd=workspace).stdout)["attempts"]
    assert [a["device"] for a in as_json] == [H200, H100, H100]


@pytest.mark.parametrize("name, names, short", [
    ("NVIDIA H200", ("NVIDIA H200", "NVIDIA H100 80GB HBM3"), "H200"),
    ("NVIDIA H200", ("NVIDIA H200", "AMD Instinct MI300X"), "NVIDIA H200"),  # no shared word: all of it
    ("NVIDIA H200", ("NVIDIA H200", "NVIDIA"), "NVIDIA H200"),  # a one-word name would read as nothing
    ("cpu", ("cpu", "NVIDIA H100"), "cpu"),
])
def test_a_device_tag_drops_only_the_word_every_device_of_the_session_shares(name, names, short):
    assert short_device(name, names) == short


def test_one_device_only_prints_no_device_lines(workspace):
    _, s, _ = session_with(workspace, (H100, 1.0), (H100, 1.2))
    log = ks("log", "--session", s.id, cwd=workspace).stdout
    assert "[on " not in log and "latest measurement's device" not in log


def test_comparing_two_runs_from_different_devices_says_so():
    def run(device, ms):
        return {"device": device, "scenarios": [{"id": "a", "ok": True, "time_ms": ms, "speedup": 1.0 / ms,
                                                 "baseline": {"name": "b", "time_ms": 1.0}}]}

    cmp = compare_results(run(H100, 1.0), run(H200, 0.9))
    assert cmp["devices"] == [H100, H200]
    text = comparison_text(cmp, "attempt 3")
    assert f"measured on different devices ({H100} here, {H200} in attempt 3's run)" in text
    assert compare_results(run(H100, 1.0), run(H100, 0.9))["devices"] is None
    assert "different devices" not in comparison_text(compare_results(run(H100, 1.0), run(H100, 0.9)), "x")
