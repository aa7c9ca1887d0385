"""Finding a run's leftover processes by the mark in their environment (a /proc laid out in a folder)."""

from __future__ import annotations

from ks_tui.harness.leftovers import MARK_VARIABLE, group_members, marked_environ, marked_processes


def _proc(root, pid, *env: str) -> None:
    (root / str(pid)).mkdir()
    (root / str(pid) / "environ").write_bytes(b"\0".join(e.encode() for e in env) + b"\0")


def test_only_processes_with_the_whole_mark_are_found(tmp_path):
    _proc(tmp_path, 41, "PATH=/bin", f"{MARK_VARIABLE}=abc")
    _proc(tmp_path, 7, f"{MARK_VARIABLE}=abc", "HOME=/root")
    _proc(tmp_path, 42, f"{MARK_VARIABLE}=abcd")           # another run's mark, sharing a prefix
    _proc(tmp_path, 43, f"X={MARK_VARIABLE}=abc")           # the text inside another variable
    _proc(tmp_path, 44)                                     # a zombie: its environ reads empty
    _proc(tmp_path, 45, f"{MARK_VARIABLE}=outer:abc")       # a run inside another's: both marks
    (tmp_path / "self").mkdir()                             # not a pid
    assert marked_processes("abc", tmp_path) == [7, 41, 45]
    assert marked_processes("outer", tmp_path) == [45]


def test_a_groups_live_members_are_found_by_their_stat(tmp_path):
    def stat(pid, comm, state, pgrp):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "stat").write_text(f"{pid} ({comm}) {state} 1 {pgrp} {pgrp} 0 -1 4194560 0\n")

    stat(50, "sleep", "S", 900)
    stat(51, "odd) name (x", "R", 900)       # a command name with spaces and parentheses
    stat(52, "bash", "Z", 900)               # a zombie: it ran and ended, nothing to kill
    stat(53, "sleep", "S", 9001)             # another group whose id shares a prefix
    (tmp_path / "54").mkdir()                # its stat unreadable (gone meanwhile)
    assert group_members(900, tmp_path) == [50, 51]
    assert group_members(900, tmp_path / "absent") == []


def test_a_run_inside_another_keeps_the_outer_marks():
    assert marked_environ("b", {"PATH": "/bin"}) == {"PATH": "/bin", MARK_VARIABLE: "b"}
    assert marked_environ("c", {MARK_VARIABLE: "a:b"})[MARK_VARIABLE] == "a:b:c"


def test_without_a_proc_folder_nothing_is_found(tmp_path):
    assert marked_processes("abc", tmp_path / "absent") == []



def test_the_group_and_the_marked_processes_are_killed_and_no_other():
    """A marked process in a session of its own is found and killed with the run's group (whose live member is
    named too); a process without the mark is left alone even when asked for by pid (the mark is read again just
    before each kill: a pid can end and be reused after the scan)."""
    import os
    import subprocess

    from ks_tui.harness.leftovers import _kill_marked, end_leftovers
    from tests.support.processes import wait_gone

    def sleeper(**env):
        return subprocess.Popen(["sleep", "30"], start_new_session=True, env={**os.environ, **env})

    group, marked, other = sleeper(), sleeper(**{MARK_VARIABLE: "m1"}), sleeper()
    try:
        assert end_leftovers(group.pid, "m1") == sorted([group.pid, marked.pid])
        assert group.wait(timeout=5) == -9 and marked.wait(timeout=5) == -9
        _kill_marked(other.pid, "m1")
        assert other.poll() is None and not wait_gone(other.pid, timeout=0.3)
    finally:
        for p in (group, marked, other):
            p.kill()
            p.wait()
