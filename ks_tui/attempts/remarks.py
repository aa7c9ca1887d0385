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
"""

from __future__ import annotations

from datetime import datetime, timezone

from ks_tui.errors import KsError

REMARKS_REF = "refs/notes/ks-remarks"
AUTHORS = ("human", "agent")
MAX_CHARS = 500


def remark_line(text: str, author: str = "human", when: datetime | None = None, pair: str = "") -> str:
    """The stored line of one remark (with `pair`, one that declares the run's pair tag); KsError for
    an empty text or an unknown author."""
    from ks_tui.attempts.trailers import one_line

    if author not in AUTHORS:
        raise KsError(f"a remark's author must be human or agent, not {author!r}")
    flat = one_line(text, MAX_CHARS).replace("\t", " ")
    if not flat:
        raise KsError("a remark needs some text", hint='ks remark ATTEMPT "what was wrong or learned"')
    when = (when or datetime.now(timezone.utc)).isoformat(timespec="seconds")
    tail = f"\tpair={pair}" if pair else ""
    return f"{when}\t{author}\t{flat}{tail}"


def parse_remarks(note: str) -> list[dict[str, str]]:
    """Remarks from a note's text, oldest first: {time, author, text}, and `pair` for one that
    declares a pair tag. A line not in our format (a hand-edited note) is kept whole as the text,
    with no time or author."""
    out = []
    for line in note.splitlines():
        line = line.strip()
        if not line:
            continue
        when, sep1, rest = line.partition("\t")
        author, sep2, text = rest.partition("\t")
        if sep1 and sep2 and _is_time(when):
            # remark_line folds tabs out of the text, so a last `\tpair=` is the declared pair's field
            body, sep3, pair = text.rpartition("\tpair=")
            remark = {"time": when, "author": author, "text": body if sep3 and pair else text}
            if sep3 and pair:
                remark["pair"] = pair
            out.append(remark)
        else:
            out.append({"time": "", "author": "", "text": line})
    return out


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
