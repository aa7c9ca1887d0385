"""Same-call pair tags: which runs were timed side by side in one device call.

A run's own tag is written into its result (`ks compare` writes RUNID:ROUND, `ks bench --pair`
a tag by hand). For runs without one, a remark can declare it after the fact (`ks remark N
--same-call M`, attempts/remarks.py); such tags start with DECLARED, which no run's own tag may.
Outside attempts/ so the question bank reads tags without importing git (docs/questions.md).
"""

from __future__ import annotations

from typing import Iterable, Mapping

DECLARED = "declared:"


def declared_pair(remarks: Iterable[Mapping[str, str]]) -> str:
    """The pair tag an attempt's remarks declare ("" when none; the latest when several)."""
    return next((r["pair"] for r in reversed(list(remarks)) if r.get("pair")), "")
