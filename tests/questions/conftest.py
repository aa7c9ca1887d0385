"""A real workspace (`ks init`) in a temporary folder, with an isolated git identity."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def git_home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.delenv("KS_WORKSPACE", raising=False)
    (home / ".gitconfig").write_text("[user]\n\tname = Test User\n\temail = test@example.com\n"
                                     "[init]\n\tdefaultBranch = main\n")
    return home


@pytest.fixture
def workspace(tmp_path, git_home) -> Path:
    from ks_tui.workspace import init_workspace

    return init_workspace(tmp_path / "ws")
