"""`ks init DIR`: a workspace is a git repository holding kernels/ and question_bank.yaml.

Each bundled task is copied as the files its task.yaml names (task.yaml, the kernel, the
reference, its `readonly` files) plus a README.md when it has one: a new workspace starts
from the seed kernel, not from our measurements (results/), device scripts or kernel
variants. sessions/ is ignored, and the first commit is made (with a default identity when
git has none). An existing repository is fine: only the files we add are committed, so
whatever the user had staged stays staged and uncommitted.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ks_tui.errors import KsError
from ks_tui.paths import bundled_root

IGNORE_LINE = "/sessions/"
TASK_DOCS = ("README.md",)


def task_files(task_dir: Path) -> list[Path]:
    """The files that make up a task, relative to its folder (task.yaml first)."""
    from ks_tui.task import load_task

    task = load_task(task_dir, task_dir.parent.parent)
    root = task.dir.resolve()
    named = [task.yaml_path, task.kernel, task.reference, *task.readonly]
    named += [root / d for d in TASK_DOCS if (root / d).is_file()]
    return list(dict.fromkeys(p.resolve().relative_to(root) for p in named))


def _copy_tasks(src: Path, dest: Path) -> None:
    for task_dir in sorted(p for p in src.iterdir() if (p / "task.yaml").is_file()):
        for rel in task_files(task_dir):
            (dest / task_dir.name / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(task_dir / rel, dest / task_dir.name / rel)


def init_workspace(target: str | os.PathLike) -> Path:
    import git

    from ks_tui.attempts.store import identity_env

    if not str(target).strip():
        raise KsError("ks init needs a folder name (use `ks init .` for this folder)")
    dest = Path(target).expanduser().resolve()
    src = bundled_root()
    if not (src / "kernels").is_dir():
        raise KsError(f"the bundled tasks are missing from {src}", hint="reinstall ks-tui")
    if dest.exists() and not dest.is_dir():
        raise KsError(f"{dest} exists and is not a folder")
    for name in ("kernels", "question_bank.yaml"):
        if (dest / name).exists():
            raise KsError(f"{dest / name} already exists; nothing was changed",
                          hint="this folder already is a workspace" if name == "kernels" else None)
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise KsError(f"cannot create {dest}: {e.strerror or e}") from None

    try:
        repo = git.Repo(dest, search_parent_directories=True)
    except git.InvalidGitRepositoryError:
        repo = git.Repo.init(dest)
    if repo.working_tree_dir is None:
        raise KsError(f"{dest} is inside the bare git repository {repo.git_dir}: a workspace needs a checkout",
                      hint="make the workspace in a checkout, or in a folder outside any repository")
    top = Path(repo.working_tree_dir).resolve()
    prefix = dest.relative_to(top)

    _copy_tasks(src / "kernels", dest / "kernels")
    shutil.copy2(src / "question_bank.yaml", dest / "question_bank.yaml")
    ignore = dest / ".gitignore"
    existing = ignore.read_text() if ignore.exists() else ""
    if IGNORE_LINE not in existing.split("\n"):
        sep = "" if not existing or existing.endswith("\n") else "\n"
        ignore.write_text(existing + sep + "# KernelSeek sessions: worktrees and traces\n" + IGNORE_LINE + "\n")

    paths = [(prefix / p).as_posix() for p in ("kernels", "question_bank.yaml", ".gitignore")]
    env = identity_env(repo)
    try:
        repo.git.execute(["git", "add", "--", *paths], env=env)
        # --only: commit exactly these paths, leaving anything the user staged alone.
        repo.git.execute(["git", "commit", "--quiet", "--no-verify", "-m", "KernelSeek workspace: tasks and question bank",
                          "--only", "--", *paths], env=env)
    except git.GitCommandError as e:
        raise KsError(f"could not commit the new workspace in {top}: {str(e.stderr).strip() or e}") from None
    return dest
