"""Which sandbox a machine gets (harness/sandbox.py): the strongest tool that works, a clear line when none does,
and the switch. The tools are hidden from PATH lookups to play a machine without them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ks_tui.errors import KsError
from ks_tui.harness import sandbox


@pytest.fixture
def without(monkeypatch):
    real = shutil.which

    def hide(*names):
        monkeypatch.setattr(sandbox.shutil, "which", lambda n, *a, **k: None if n in names else real(n, *a, **k))
        sandbox._probe.cache_clear()

    yield hide
    sandbox._probe.cache_clear()


def test_without_bubblewrap_unshare_or_none_is_used_and_said(without, monkeypatch):
    monkeypatch.delenv("KS_SANDBOX", raising=False)
    without("bwrap")
    box = sandbox.current()
    assert box.mode in ("unshare", "none")
    if box.mode == "none":
        assert "bwrap not installed" in box.detail
    without("bwrap", "unshare")
    box = sandbox.current()
    assert box.mode == "none" and not box.active
    assert box.detail == "bwrap not installed (Debian/Ubuntu package bubblewrap); unshare not found (util-linux)"
    line = sandbox.warning_line()
    assert line.startswith("warning: no sandbox for kernels on this machine (bwrap not installed") and "\n" not in line
    assert sandbox.wrap(["python3", "-V"], box, scratch=sandbox.Path("/tmp"), writable=[], readable=[]) == \
        ["python3", "-V"]


def test_the_switch_turns_it_off_and_a_missing_mode_is_bad_input(without, monkeypatch):
    monkeypatch.setenv("KS_SANDBOX", "off")
    assert sandbox.current().mode == "none" and sandbox.warning_line() == ""  # off on purpose: no warning
    assert sandbox.doctor_report()["switch"].endswith("(now off)")
    without("bwrap")
    monkeypatch.setenv("KS_SANDBOX", "bwrap")
    with pytest.raises(KsError, match="KS_SANDBOX=bwrap but it cannot run here: bwrap not installed"):
        sandbox.current()
    monkeypatch.setenv("KS_SANDBOX", "jail")
    with pytest.raises(KsError, match="use auto, bwrap, unshare or off"):
        sandbox.current()


def test_the_bubblewrap_command_hides_home_and_keeps_the_gpu_and_the_scratch_writable(monkeypatch, tmp_path):
    home = tmp_path / "home"
    (home / "venv").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(sandbox, "_needed_paths", lambda: [home / "venv"])
    box = sandbox.Sandbox("bwrap", "", ("--unshare-all",))
    scratch, cache = tmp_path / "scratch", home / ".cache" / "ks"
    scratch.mkdir()
    cmd = sandbox.wrap(["python3", "-V"], box, scratch=scratch, writable=[cache], readable=[])
    text = " ".join(cmd)
    assert "--ro-bind / /" in text and "--unshare-all" in text and "--die-with-parent" in text
    assert f"--tmpfs {home.resolve()}" in text  # home hidden ...
    assert f"--ro-bind {(home / 'venv').resolve()} {(home / 'venv').resolve()}" in text  # ... but Python's folder
    assert f"--bind {scratch.resolve()} {scratch.resolve()}" in text and f"--bind {cache.resolve()}" in text
    assert text.index(f"--tmpfs {home.resolve()}") < text.index(f"--bind {cache.resolve()}")  # shown after hiding
    for node in sandbox.glob.glob("/dev/nvidia*"):
        assert f"--dev-bind {node} {node}" in text
    assert cmd[-2:] == ["python3", "-V"]


def test_a_needed_folder_that_holds_the_home_is_not_shown_back(monkeypatch, tmp_path):
    # `python -m` started from / puts "/" first on sys.path: shown back, it swallowed Python's own folder under the
    # hidden home (bwrap then found no interpreter); the home itself would undo the hiding.
    home = tmp_path / "home"
    (home / "venv").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(sandbox, "_needed_paths", lambda: [Path("/"), home, home / "venv"])
    box = sandbox.Sandbox("bwrap", "", ("--unshare-all",))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    text = " ".join(sandbox.wrap(["python3", "-V"], box, scratch=scratch, writable=[], readable=[]))
    assert f"--ro-bind {(home / 'venv').resolve()} {(home / 'venv').resolve()}" in text
    assert f"--ro-bind {home.resolve()} " not in text and "--ro-bind / / --dev" in text  # "/" only as the base
