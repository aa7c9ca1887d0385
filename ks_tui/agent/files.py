"""File access for the agent, confined to the task folder of the session worktree.

Paths are relative to the task folder. `..` is refused outright, absolute paths must lie in
the folder, and symlinks are resolved before the check, so a link cannot lead outside.
Only the kernel file may be written: the kernel is one self-contained source file, and the
reference, scenarios and harness files must stay as the task defines them.
"""

from __future__ import annotations

from pathlib import Path, PurePath
from typing import Iterable

MAX_READ_CHARS = 200_000


CANDIDATES = "candidates"  # the folder of the task where the agent may write candidate kernels


class ToolRefused(Exception):
    """The agent asked for something it may not do; becomes an is_error tool_result."""


class TaskFiles:
    def __init__(self, task_dir: Path, kernel: Path, readonly: Iterable[Path] = ()):
        self.root = Path(task_dir).resolve()
        self.kernel = Path(kernel).resolve()
        self.readonly = {Path(p).resolve() for p in readonly}

    def resolve(self, path: str) -> Path:
        if not isinstance(path, str) or not path.strip():
            raise ToolRefused("path must be a non-empty string, relative to the task folder")
        if "\x00" in path:  # the OS refuses it with a ValueError, which is no refusal the model can read
            raise ToolRefused("path contains a NUL character")
        p = PurePath(path)
        if ".." in p.parts:
            raise ToolRefused(f"{path}: '..' is not allowed; paths are relative to the task folder")
        full = (Path(p) if p.is_absolute() else self.root / p).resolve()
        if full != self.root and self.root not in full.parents:
            raise ToolRefused(f"{path}: outside the task folder; only files under it can be used")
        return full

    def rel(self, full: Path) -> str:
        return full.relative_to(self.root).as_posix() if full != self.root else "."

    def read(self, path: str, offset: int | None = None, limit: int | None = None) -> str:
        """The file's text; with `offset` (first line, from 1) or `limit` (lines), that part only,
        under a header naming the lines, so a large kernel can be read a piece at a time."""
        full = self.resolve(path)
        if full.is_dir():
            names = sorted(c.name + ("/" if c.is_dir() else "") for c in full.iterdir() if not c.name.startswith("."))
            return f"{self.rel(full)} is a folder: " + ", ".join(names)
        if not full.is_file():
            raise ToolRefused(f"{path}: no such file in the task folder")
        data = full.read_bytes()
        try:
            txt = data.decode()
        except UnicodeDecodeError:
            raise ToolRefused(f"{path}: not a text file") from None
        if offset is not None or limit is not None:
            txt = _lines(txt, self.rel(full), offset, limit)
        if len(txt) > MAX_READ_CHARS:
            return txt[:MAX_READ_CHARS] + (f"\n[... cut at {MAX_READ_CHARS} of {len(txt)} characters; "
                                           "read the rest with offset and limit]")
        return txt

    def check_writable(self, path: str) -> Path:
        full = self.resolve(path)
        if full in self.readonly:
            raise ToolRefused(f"{path}: read-only (part of the task definition)")
        if full != self.kernel and not self.is_candidate(full):
            raise ToolRefused(f"{path}: only the kernel file {self.rel(self.kernel)} (or candidate files "
                              f"{CANDIDATES}/*{self.kernel.suffix} for run_harness) may be written")
        return full

    def is_candidate(self, full: Path) -> bool:
        """A file under the task folder's candidates/ with the kernel's suffix: a variant for
        run_harness to measure beside others (docs/cluster.md)."""
        return full.parent == self.root / CANDIDATES and full.suffix == self.kernel.suffix

    def write(self, path: str, content: str) -> str:
        if not isinstance(content, str):
            raise ToolRefused("content must be a string")
        full = self.check_writable(path)
        full.parent.mkdir(exist_ok=True)  # candidates/ on the first candidate
        full.write_text(content)
        return f"wrote {self.rel(full)} ({content.count(chr(10)) + 1} lines, {len(content)} characters)"

    def edit(self, path: str, old: str, new: str) -> str:
        if not isinstance(old, str) or not isinstance(new, str):
            raise ToolRefused("old_string and new_string must be strings")
        full = self.check_writable(path)
        text = full.read_text()
        if not old:
            raise ToolRefused("old_string is empty; use write_file to replace the whole file")
        n = text.count(old)
        if n == 0:
            raise ToolRefused(f"old_string not found in {self.rel(full)}; read the file again and copy it exactly")
        if n > 1:
            raise ToolRefused(f"old_string occurs {n} times in {self.rel(full)}; include more context so it is unique")
        full.write_text(text.replace(old, new, 1))
        line = text[:text.index(old)].count("\n") + 1
        return f"edited {self.rel(full)} at line {line} (-{old.count(chr(10)) + 1} +{new.count(chr(10)) + 1} lines)"


def _lines(txt: str, name: str, offset: int | None, limit: int | None) -> str:
    for value, what in ((offset, "offset"), (limit, "limit")):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ToolRefused(f"{what} must be a whole number of at least 1, not {value!r}")
    lines = txt.splitlines(keepends=True)
    first = (offset or 1) - 1
    if first >= len(lines) and lines:
        raise ToolRefused(f"offset {offset} is past the end of {name} ({len(lines)} lines)")
    part = lines[first:first + limit if limit else None]
    return f"[{name}: lines {first + 1}-{first + len(part)} of {len(lines)}]\n" + "".join(part)
