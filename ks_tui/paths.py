"""Where things live: the bundled tasks and question bank, and the user's workspace."""

from __future__ import annotations

import os
from pathlib import Path

from ks_tui.errors import KsError

_PKG = Path(__file__).resolve().parent


def bundled_root() -> Path:
    """Folder holding the bundled `kernels/` and `question_bank.yaml`.

    A wheel carries them under ks_tui/_bundled; an editable install or a checkout has them
    at the repository root.
    """
    packaged = _PKG / "_bundled"
    if (packaged / "kernels").is_dir():
        return packaged
    return _PKG.parent


def is_workspace(path: Path) -> bool:
    return (path / "kernels").is_dir()


def main_workspace(path: Path) -> Path:
    """The workspace itself when `path` lies in one of its session worktrees
    (<ws>/sessions/<id>/worktree/...): sessions and question records live there. (Harness
    commands keep the worktree: `ks check TASK` there checks the kernel being edited.)"""
    for p in (path, *path.parents):
        if p.name == "worktree" and p.parent.parent.name == "sessions" and is_workspace(p.parent.parent.parent):
            return p.parent.parent.parent
    return path


def find_workspace(explicit: str | os.PathLike | None = None, start: Path | None = None,
                   sessions: bool = False) -> Path:
    """The workspace: `--workspace` if given, else the nearest folder upward holding `kernels/`.

    `KS_WORKSPACE` in the environment acts like `--workspace`. With neither and no workspace
    above the current folder, the bundled tasks are used for read-only use (check, bench);
    a command that makes sessions (`sessions=True`) is refused instead: from an editable
    install it would write branches and worktrees into the ks source checkout.
    """
    explicit = explicit or os.environ.get("KS_WORKSPACE")
    if explicit:
        p = Path(explicit).expanduser().resolve()
        if not is_workspace(p):
            raise KsError(f"{p} is not a KernelSeek workspace (no kernels/ folder)",
                          hint="create one with `ks init DIR`")
        return p
    here = (start or Path.cwd()).resolve()
    for p in (here, *here.parents):
        if is_workspace(p):
            return p
    if sessions:
        raise KsError(f"no KernelSeek workspace at or above {here}",
                      hint="make one with `ks init DIR` and run ks there, or name one with --workspace DIR")
    return bundled_root()
