"""The task's own files, kept as they were across a run: a kernel that edits them fails the run, and they come back.

Hashed before the child starts and checked after it ended: the task's read-only files (task.yaml, the reference,
those task.yaml lists under `readonly`), the inputs the harness builds its verdict from. Without this, a kernel that
loosened its task.yaml's tolerance would read "correct" on the next run. The kernel file itself is not guarded: a
person may be editing it while a run goes on; nor is the installed harness, which a developer may be editing (in
the sandbox it is read-only). Standard library only.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

MESSAGE = "the kernel modified its task files"


def protected_files(task, source: Path | None = None) -> list[Path]:
    files = [Path(p) for p in task.readonly]
    skip = {Path(task.kernel).resolve()} | ({Path(source).resolve()} if source else set())
    return [f for f in dict.fromkeys(files) if Path(f).resolve() not in skip]


def _read(path: Path) -> bytes | None:
    try:
        if path.is_symlink():  # a link planted in place of the file is a change whatever it points at
            return None
        return path.read_bytes()
    except OSError:
        return None


class TaskGuard:
    def __init__(self, files: list[Path]):
        self.kept: dict[Path, bytes | None] = {Path(f): _read(Path(f)) for f in files}
        self.digests = {f: hashlib.sha256(b).hexdigest() if b is not None else None for f, b in self.kept.items()}
        self.modes = {f: f.stat().st_mode & 0o7777 for f, b in self.kept.items() if b is not None}

    def changed(self) -> list[Path]:
        out = []
        for f, digest in self.digests.items():
            now = _read(f)
            if (hashlib.sha256(now).hexdigest() if now is not None else None) != digest or (
                    digest is None and (f.exists() or f.is_symlink())):
                out.append(f)
        return out

    def restore(self) -> tuple[list[Path], list[str]]:
        """(the files found changed, the ones that could not be put back, each with why). Each changed file
        gets its bytes back; one that did not exist before is removed."""
        changed, failed = self.changed(), []
        for f in changed:
            data = self.kept[f]
            try:
                if data is None:
                    f.unlink(missing_ok=True)
                    continue
                fd, tmp = tempfile.mkstemp(prefix=f".{f.name}.", dir=f.parent)
                with os.fdopen(fd, "wb") as out:
                    out.write(data)
                os.chmod(tmp, self.modes.get(f, 0o644))
                os.replace(tmp, f)  # also replaces a symlink planted in its place
            except OSError as e:
                failed.append(f"{f}: {e.strerror or e}")
        return changed, failed
