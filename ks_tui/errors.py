"""Errors that reach the user as one clear line.

`KsError` is bad usage or bad input (exit code 2): a broken task file, an unknown session,
a malformed question bank. The CLI prints its message without a traceback. Anything else
that escapes is a bug in KernelSeek and keeps its traceback.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_KERNEL_FAILED = 1  # compile error, crash, timeout, incorrect
EXIT_BAD_INPUT = 2


class KsError(Exception):
    """A user-facing error: bad usage or bad input files. Exit code 2."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, message: str, *, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n  hint: {self.hint}"


class InputFileError(KsError):
    """A file the user wrote (task.yaml, question bank, config) is malformed.

    The message names the file and, when known, the line.
    """

    def __init__(self, path, message: str, line: int | None = None, *, hint: str | None = None):
        where = f"{path}:{line}" if line else f"{path}"
        super().__init__(f"{where}: {message}", hint=hint)
        self.path = path
        self.line = line
