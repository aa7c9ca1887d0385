"""`ks init DIR`: a workspace is a git repository holding kernels/ and question_bank.yaml.

The bundled tasks are copied without their results/ and build leftovers, sessions/ is
ignored, and the first commit is made (with a default identity when git has none). An
existing repository is fine: only the files we add are committed, so whatever the user
had staged stays staged and uncommitted.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ks_tui.errors import KsError
from ks_tui.paths import bundled_root

# Never copied into a workspace: measurements of the bundled kernels and build junk.
SKIP_DIRS = {"results", "__pycache__", ".ks-cache", "build", ".pytest_cache"}
SKIP_SUFFIXES = {".so", ".o", ".pyc", ".a", ".ptx", ".cubin"}
IGNORE_LINE = "/sessions/"


def _ignore(folder: str, names: list[str]) -> set[str]:
    return {n for n in names
            if (n in SKIP_DIRS and os.path.isdir(os.path.join(folder, n)))
            or Path(n).suffix in SKIP_SUFFIXES}


def init_workspace(target: str | os.PathLike) -> Path:
    import git

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
    dest.mkdir(parents=True, exist_ok=True)

    try:
        repo = git.Repo(dest, search_parent_directories=True)
    except git.InvalidGitRepositoryError:
        repo = git.Repo.init(dest)
    top = Path(repo.working_tree_dir).resolve()
    prefix = dest.relative_to(top)

    shutil.copytree(src / "kernels", dest / "kernels", ignore=_ignore)
    shutil.copy2(src / "question_bank.yaml", dest / "question_bank.yaml")
    ignore = dest / ".gitignore"
    existing = ignore.read_text() if ignore.exists() else ""
    if IGNORE_LINE not in existing.split("\n"):
        sep = "" if not existing or existing.endswith("\n") else "\n"
        ignore.write_text(existing + sep + "# KernelSeek sessions: worktrees and traces\n" + IGNORE_LINE + "\n")

    paths = [(prefix / p).as_posix() for p in ("kernels", "question_bank.yaml", ".gitignore")]
    env = {}
    reader = repo.config_reader()
    for key, var, default in (("name", "NAME", "KernelSeek"), ("email", "EMAIL", "ks@localhost")):
        try:
            reader.get_value("user", key)
        except Exception:
            env[f"GIT_AUTHOR_{var}"] = os.environ.get(f"GIT_AUTHOR_{var}") or default
            env[f"GIT_COMMITTER_{var}"] = os.environ.get(f"GIT_COMMITTER_{var}") or default
    try:
        repo.git.execute(["git", "add", "--", *paths], env=env)
        # --only: commit exactly these paths, leaving anything the user staged alone.
        repo.git.execute(["git", "commit", "--quiet", "--no-verify", "-m", "KernelSeek workspace: tasks and question bank",
                          "--only", "--", *paths], env=env)
    except git.GitCommandError as e:
        raise KsError(f"could not commit the new workspace in {top}: {str(e.stderr).strip() or e}") from None
    return dest
