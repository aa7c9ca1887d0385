"""One-line text for commit messages, trailers and remarks (a leaf: no other attempts module)."""

from __future__ import annotations

# Field and record separators for the log format; control characters never appear in
# subjects we write, and git prints them verbatim.
FIELD = "\x1f"
TRAILER = "\x1d"


def one_line(text: str, limit: int = 200) -> str:
    """Collapse whitespace so a value cannot break the trailer block or the subject."""
    flat = " ".join(str(text).split())
    flat = flat.replace(FIELD, " ").replace(TRAILER, " ")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
