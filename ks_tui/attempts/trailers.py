"""Commit messages of attempts: a summary line plus `KS-*` trailers, and reading them back.

The message is what `git interpret-trailers` expects: subject, blank line, then one final
paragraph of `Key: value` lines. Reading goes through git itself
(`%(trailers:only,unfold)` in `git log --format`), so one `git log` call yields every
attempt of a session without opening commits one by one.
"""

from __future__ import annotations

from datetime import datetime

from ks_tui.attempts.model import Attempt
from ks_tui.attempts.remarks import declared_question, parse_remarks
from ks_tui.attempts.text import FIELD, TRAILER, one_line

# Order in which trailers are written (and shown by `git log`).
KEYS = ("KS-Session", "KS-Attempt", "KS-Author", "KS-Status", "KS-Correct", "KS-Speedup",
        "KS-Baseline", "KS-Mode", "KS-Device", "KS-Question", "KS-Rollback-Of")
NONE = "n/a"

# The body (%b) last but one: it holds the whole summary when the subject had to cut it, then
# the trailers again (dropped when reading).
LOG_FORMAT = f"%H{FIELD}%cI{FIELD}%s{FIELD}%(trailers:only,unfold,separator=%x1d){FIELD}%b"
# The same with the commit's note last: git log --no-notes --notes=<remarks ref> fills %N.
LOG_FORMAT_REMARKS = f"{LOG_FORMAT}{FIELD}%N"
SUBJECT_CHARS = 120
DESCRIPTION_CHARS = 4000


def format_speedup(x: float | None) -> str:
    return NONE if x is None else f"{x:.4f}"


def build_message(summary: str, trailers: dict[str, object]) -> str:
    """Subject, the whole summary as one paragraph when the subject cuts it, then the trailers."""
    subject = one_line(summary, SUBJECT_CHARS) or "attempt"
    whole = one_line(summary, DESCRIPTION_CHARS)
    body = f"{whole}\n\n" if whole != subject else ""
    lines = []
    for key in KEYS:
        if key in trailers and trailers[key] is not None:
            lines.append(f"{key}: {one_line(str(trailers[key])) or NONE}")
    return subject + "\n\n" + body + "\n".join(lines) + "\n"


def description(body: str) -> str:
    """The whole summary from a commit body (%b): what precedes our trailer paragraph; "" if none."""
    paragraphs = [p for p in body.strip().split("\n\n") if p.strip()]
    if paragraphs and all(line.startswith("KS-") for line in paragraphs[-1].splitlines()):
        paragraphs = paragraphs[:-1]
    return " ".join(" ".join(p.split()) for p in paragraphs)


def parse_trailers(block: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in block.split(TRAILER):
        key, sep, value = item.strip().partition(":")
        if sep:
            out[key.strip()] = value.strip()
    return out


def _opt(value: str | None) -> str | None:
    return None if value in (None, "", NONE) else value


def _float(value: str | None) -> float | None:
    text = _opt(value)
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def _int(value: str | None) -> int | None:
    text = _opt(value)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def parse_log(output: str, session: str) -> list[Attempt]:
    """Attempts of `session` from `git log -z --format=LOG_FORMAT` (or LOG_FORMAT_REMARKS) output,
    in log order.

    Commits without our trailers (someone committed by hand on the branch) are not attempts.
    """
    attempts = []
    for record in output.split("\0"):
        record = record.strip("\n")
        if not record:
            continue
        parts = record.split(FIELD, 5)
        if len(parts) < 5:
            continue
        sha, when, subject, block, body = parts[:5]
        t = parse_trailers(block)
        number = _int(t.get("KS-Attempt"))
        if t.get("KS-Session") != session or number is None:
            continue
        remarks = parse_remarks(parts[5]) if len(parts) > 5 else []
        attempts.append(Attempt(
            session=session, number=number, sha=sha, time=datetime.fromisoformat(when),
            author=t.get("KS-Author", "agent"), status=t.get("KS-Status", "unchecked"),
            correct=_opt(t.get("KS-Correct")) or "", speedup=_float(t.get("KS-Speedup")),
            baseline=_opt(t.get("KS-Baseline")),
            # a question a remark declared (ks remark --question) stands for the commit's trailer
            question=declared_question(remarks) or _opt(t.get("KS-Question")),
            summary=subject, rollback_of=_int(t.get("KS-Rollback-Of")),
            mode=_opt(t.get("KS-Mode")) or "",
            device=_opt(t.get("KS-Device")) or "",
            description=description(body),
            remarks=remarks,
        ))
    return attempts
