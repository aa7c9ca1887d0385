"""`ks task new NAME [--like TASK]`: a new task folder in the workspace that `ks check` passes.

Without --like the folder is a small CPU task (ks_tui/templates/cpu_task); with it, the files
that make up TASK (its task.yaml, kernel, reference, read-only files and README) are copied
under the new name. The new folder is loaded as a task before it is kept, and committed in the
workspace's git repository so that sessions (which work in git worktrees) see it.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from ks_tui.errors import KsError

NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}\Z")
TEMPLATE = Path(__file__).resolve().parent.parent / "templates" / "cpu_task"


def register(sub) -> None:
    text = "make and manage task folders"
    p = sub.add_parser("task", help=text, description=text)
    task_sub = p.add_subparsers(dest="task_command", metavar="ACTION", required=True, parser_class=type(p))
    text = "write a new task folder under kernels/ that `ks check NAME` passes at once"
    n = task_sub.add_parser("new", help=text, description=text)
    n.add_argument("name", metavar="NAME", help="the task's name and folder name (letters, digits, - and _)")
    n.add_argument("--like", metavar="TASK",
                   help="copy this task (a workspace or bundled task name, or a task folder) instead of the "
                        "small CPU template")
    n.set_defaults(func=new_cmd)


def new_cmd(args) -> int:
    from ks_tui.paths import find_workspace

    workspace = find_workspace(getattr(args, "workspace", None), sessions=True)
    dest = new_task(workspace, args.name, like=args.like)
    print(f"made task {args.name} in {dest}")
    print(f"  next: ks check {args.name}   (then edit {dest.name}/*; docs/task-format.md)")
    return 0


def new_task(workspace: Path, name: str, like: str | None = None) -> Path:
    """Write kernels/<name>/ in `workspace`; KsError (exit 2) for a bad name or an existing folder."""
    if not NAME_RE.match(name or ""):
        raise KsError(f"bad task name {name!r}: use a letter, then letters, digits, - or _ (64 at most)")
    dest = Path(workspace) / "kernels" / name
    if dest.exists():
        raise KsError(f"{dest} already exists; nothing was changed")
    files = _like_files(workspace, like) if like else _template_files()
    try:
        for rel, text in files.items():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            if isinstance(text, Path):
                shutil.copy2(text, dest / rel)
            else:
                (dest / rel).write_text(text.replace("{name}", name) if not like else text)
        _rename(dest / "task.yaml", name)
        from ks_tui.task import load_task

        load_task(dest, workspace)  # a folder that does not load is not left behind
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    _commit(workspace, dest, name)
    return dest


def _template_files() -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(TEMPLATE.iterdir()) if p.is_file()}


def _like_files(workspace: Path, like: str) -> dict[str, str | Path]:
    from ks_tui.paths import bundled_root
    from ks_tui.task import resolve_task_dir
    from ks_tui.workspace import task_files

    try:
        src = resolve_task_dir(like, workspace)
    except KsError:
        src = bundled_root() / "kernels" / like
    if not (src / "task.yaml").is_file():
        raise KsError(f"no task {like!r} in {workspace / 'kernels'} or among the bundled tasks",
                      hint="ks scenarios TASK lists a task; ls kernels/ shows the workspace's")
    out: dict[str, str | Path] = {}
    for rel in task_files(src):
        out[rel.as_posix()] = (src / rel).read_text() if rel.name == "task.yaml" else src / rel
    return out


def _rename(yaml_path: Path, name: str) -> None:
    text = yaml_path.read_text()
    new, n = re.subn(r"(?m)^name:[^\n#]*", f"name: {name}", text, count=1)
    yaml_path.write_text(new if n else f"name: {name}\n{text}")


def _commit(workspace: Path, dest: Path, name: str) -> None:
    """Commit exactly the new folder (what the user staged stays staged); nothing outside git."""
    import git

    from ks_tui.attempts.store import identity_env

    try:
        repo = git.Repo(workspace, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return
    if repo.working_tree_dir is None:  # a bare repository: no checkout to commit from
        return
    rel = dest.resolve().relative_to(Path(repo.working_tree_dir).resolve()).as_posix()
    env = identity_env(repo)
    try:
        repo.git.execute(["git", "add", "--", rel], env=env)
        repo.git.execute(["git", "commit", "--quiet", "--no-verify", "-m", f"KernelSeek task {name}",
                          "--only", "--", rel], env=env)
    except git.GitCommandError as e:
        raise KsError(f"made {dest} but could not commit it: {str(e.stderr).strip() or e}") from None
