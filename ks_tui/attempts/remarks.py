"""Remarks on attempts: words added after the fact, without rewriting the attempt's commit.

An attempt's summary is its commit subject, and history is never rewritten, so a summary that
later proves wrong ("+17%" that was the baseline's noise) cannot be edited. A remark is appended
to the commit's note in refs/notes/ks-remarks instead: one line per remark,
`<ISO time>\t<author>\t<text>`. `ks log` marks attempts that have remarks, `ks show`, the
history screen and the agent's attempt tools show them. `git notes append` separates
paragraphs with a blank line; blank lines are skipped when reading.

A remark can also declare, after the fact, that the attempt's run was timed in the same device
call as another's (`ks remark N --same-call M`): runs made before pair tags existed, or by hand
without `ks bench --pair`. Its line carries a fourth field, `pair=<tag>` (tags of declared pairs
start with `declared:`, ks_tui/pairs.py); the question bank then judges the two as it judges a
`ks compare` round.

And a remark can name the question an attempt answered when its `KS-Question` trailer is wrong
or missing (`ks remark N --question QID`): a field `question=<id>`. The attempt then reads as
answering that question everywhere (the log, the bank's history); the trailer stays in the commit.
"""

from __future__ import annotations

from datetime import datetime, timezone

from ks_tui.attempts.text import one_line
from ks_tui.errors import KsError

REMARKS_REF = "refs/notes/ks-remarks"
AUTHORS = ("human", "agent")
MAX_CHARS = 500


FIELDS = ("pair", "question")  # what a remark can declare, each as a last `\t<name>=<value>` field


def remark_line(text: str, author: str = "human", when: datetime | None = None, pair: str = "",
                question: str = "") -> str:
    """The stored line of one remark (with `pair`, one that declares the run's pair tag; with
    `question`, one that names the question the attempt answered); KsError for an empty text or an
    unknown author."""
    if author not in AUTHORS:
        raise KsError(f"a remark's author must be human or agent, not {author!r}")
    flat = one_line(text, MAX_CHARS).replace("\t", " ")
    if not flat:
        raise KsError("a remark needs some text", hint='ks remark ATTEMPT "what was wrong or learned"')
    stamp = (when or datetime.now(timezone.utc)).isoformat(timespec="seconds")
    tail = "".join(f"\t{name}={value}" for name, value in (("pair", pair), ("question", question)) if value)
    return f"{stamp}\t{author}\t{flat}{tail}"


def parse_remarks(note: str) -> list[dict[str, str]]:
    """Remarks from a note's text, oldest first: {time, author, text}, and `pair` / `question` for one
    that declares them. A line not in our format (a hand-edited note) is kept whole as the text,
    with no time or author."""
    out = []
    for line in note.splitlines():
        line = line.strip()
        if not line:
            continue
        when, sep1, rest = line.partition("\t")
        author, sep2, text = rest.partition("\t")
        if sep1 and sep2 and _is_time(when):
            # remark_line folds tabs out of the text, so what follows a tab is a declared field
            parts, fields = text.split("\t"), {}
            while len(parts) > 1:
                name, sep, value = parts[-1].partition("=")
                if not (sep and value and name in FIELDS and name not in fields):
                    break
                fields[name] = value
                parts.pop()
            out.append({"time": when, "author": author, "text": "\t".join(parts), **fields})
        else:
            out.append({"time": "", "author": "", "text": line})
    return out


def declared_question(remarks: list[dict[str, str]]) -> str:
    """The question the remarks name for their attempt ("" when none; the latest when several)."""
    return next((r["question"] for r in reversed(remarks) if r.get("question")), "")


def remark_text(r: dict[str, str]) -> str:
    """One remark for a person to read: `2026-12-04 22:40 human: text`."""
    when = r.get("time", "")
    try:
        when = datetime.fromisoformat(when).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        pass
    head = " ".join(x for x in (when, r.get("author", "")) if x)
    return f"{head}: {r.get('text', '')}" if head else r.get("text", "")


def _is_time(text: str) -> bool:
    try:
        datetime.fromisoformat(text)
    except ValueError:
        return False
    return True
