"""Which questions paid off: an append-only record per workspace, and statistics over it.

For every question asked we write an `asked` record with the best correct speedup so far;
once the next K attempts exist (or the session ends) an `outcome` record with the best
after them. The file lives at <workspace>/sessions/question_efficacy.jsonl (git-ignored,
shared by all sessions); each record is one line written under an exclusive lock, so
several sessions can append at once, and a torn line is skipped rather than fatal.

A rise inside the noise between calls can still be a gain when a run of the best kernel timed
in the same call shows it (points.gains): settling writes a `judged` record for an outcome
whose window holds such a gain, and again whenever that judgement changes (a pair declared
later, `ks remark --same-call`); no record reads as no same-call gain.

An ask recorded under the wrong question (`ks try --question` with the wrong id) is not rewritten:
`ks remark N --question QID` appends a `retagged` record, and the ask counts for QID from then on.
"""

from __future__ import annotations

import fcntl
import json
import os
import statistics
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Sequence

from ks_tui import best_rule
from ks_tui.questions.bank import Question
from ks_tui.questions.points import effective_noise, gains, measured_noise
from ks_tui.questions.thresholds import DecisionConfig
from ks_tui.questions.views import AttemptView, best_speedup

EFFICACY_FILE = "question_efficacy.jsonl"


@dataclass
class Tally:
    """What followed the asks of one question (or of one category)."""

    asked: int = 0
    settled: int = 0       # asks whose K attempts have been seen
    new_best: int = 0      # settled asks after which the best speedup rose
    gains: list[float] = field(default_factory=list)  # best_after / best_before - 1, when both exist
    text: str = ""
    category: str = ""

    @property
    def median_gain(self) -> float | None:
        return statistics.median(self.gains) if self.gains else None

    @property
    def new_best_rate(self) -> float | None:
        return self.new_best / self.settled if self.settled else None

    def expected_rate(self, prior_rate: float, prior_weight: float) -> float:
        """New-best rate shrunk toward a prior, so an unseen question still ranks."""
        return (self.new_best + prior_rate * prior_weight) / (self.settled + prior_weight)

    def to_dict(self) -> dict[str, Any]:
        return {"category": self.category, "asked": self.asked, "settled": self.settled,
                "new_best": self.new_best, "new_best_rate": self.new_best_rate,
                "median_gain": self.median_gain, "text": self.text}


@dataclass
class EfficacyStats:
    questions: dict[str, Tally] = field(default_factory=dict)
    categories: dict[str, Tally] = field(default_factory=dict)
    skipped_lines: int = 0

    def tally(self, question_id: str) -> Tally:
        return self.questions.get(question_id) or Tally()

    def to_dict(self) -> dict[str, Any]:
        return {"questions": {k: v.to_dict() for k, v in sorted(self.questions.items())},
                "categories": {k: {**v.to_dict(), "text": None} for k, v in sorted(self.categories.items())},
                "skipped_lines": self.skipped_lines}


def outcome_is_new_best(before: float | None, after: float | None, noise: float = 0.0) -> bool:
    if after is None or before is None:  # no best before: nothing rose (a first correct run is not a gain)
        return False
    return after > before * (1 + noise)


def by_ask(records: Sequence[dict[str, Any]], kind: str, latest: bool = False) -> dict[str, dict[str, Any]]:
    """The records of one kind by ask id, in file order: the first of each ask, or with `latest` the last (the file
    is in time order, so that is the newest: a retag or a judgement supersedes the ones before it)."""
    out: dict[str, dict] = {}
    for r in records:
        if r.get("kind") == kind and r.get("ask"):
            if latest:
                out[r["ask"]] = r
            else:
                out.setdefault(r["ask"], r)
    return out


def asks_as_retagged(records: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The asked records by ask id, in file order, each under the question its latest `retagged` record names."""
    asks = by_ask(records, "asked")
    retags = by_ask(records, "retagged", latest=True)
    return {k: {**a, **{f: retags[k][f] for f in ("question", "category", "text") if f in retags[k]}}
            if k in retags else a for k, a in asks.items()}


def compute_stats(records: Sequence[dict[str, Any]], noise: float = 0.0, skipped: int = 0) -> EfficacyStats:
    """Statistics from asked/outcome/judged records; the first outcome of an ask counts, and its latest
    judgement: a same-call gain in the window is a new best even inside `noise`. An ask counts for the
    question it was retagged to, if any."""
    asks = asks_as_retagged(records)
    outcomes = by_ask(records, "outcome")
    judged = by_ask(records, "judged", latest=True)
    stats = EfficacyStats(skipped_lines=skipped)
    for ask_id, a in asks.items():
        qid, cat = str(a.get("question")), str(a.get("category") or "")
        per_q = stats.questions.setdefault(qid, Tally(text=a.get("text") or "", category=cat))
        per_c = stats.categories.setdefault(cat, Tally(category=cat))
        for t in (per_q, per_c):
            t.asked += 1
        o = outcomes.get(ask_id)
        if o is None or o.get("attempts") == 0:  # pending, or superseded by the next ask before any run
            continue
        before, after = o.get("best_before"), o.get("best_after")
        # The session's own measured noise when it was larger than the bank's (kept with the outcome).
        floor = max(noise, o.get("noise") or 0.0)
        for t in (per_q, per_c):
            t.settled += 1
            t.new_best += (outcome_is_new_best(before, after, floor)
                           or judged.get(ask_id, {}).get("paired_gain") is not None)
            if before and after is not None:
                t.gains.append(after / before - 1)
    return stats


class EfficacyStore:
    def __init__(self, workspace: Path | str, k: int = 3, config: DecisionConfig | None = None):
        self.path = Path(workspace) / "sessions" / EFFICACY_FILE
        self.k = k
        self.config = config or DecisionConfig()  # noise and paired_noise, to judge same-call gains

    @contextmanager
    def _locked(self) -> Iterator[int]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield fd
        finally:
            os.close(fd)  # closing drops the lock

    def _read_unlocked(self) -> tuple[list[dict[str, Any]], int]:
        records, skipped = [], 0
        try:
            lines = self.path.read_text(encoding="utf-8", errors="replace").splitlines()
        except FileNotFoundError:
            return [], 0
        for line in lines:
            if not line.strip():
                continue
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                skipped += 1
                continue
            if isinstance(r, dict):
                records.append(r)
            else:
                skipped += 1
        return records, skipped

    def records(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        with self._locked():
            return self._read_unlocked()[0]

    @staticmethod
    def _append(fd: int, record: dict[str, Any]) -> None:
        # After a torn last line (a writer killed mid-write) start a new line, so the torn
        # one stays the only loss.
        size = os.fstat(fd).st_size
        torn = size > 0 and os.pread(fd, 1, size - 1) != b"\n"
        os.write(fd, (("\n" if torn else "") + json.dumps(record, sort_keys=True) + "\n").encode())

    def session_records(self, session: str) -> list[dict[str, Any]]:
        """The records of one session's asks and outcomes (carried by `ks session export`)."""
        return [r for r in self.records() if r.get("session") == session or str(r.get("ask", "")).startswith(f"{session}:")]

    def import_records(self, records: Sequence[Any]) -> int:
        """Append records from another workspace's file, skipping any already here; returns how many were new."""
        with self._locked() as fd:
            have = {json.dumps(r, sort_keys=True) for r in self._read_unlocked()[0]}
            added = 0
            for r in records:
                if isinstance(r, dict) and json.dumps(r, sort_keys=True) not in have:
                    self._append(fd, r)
                    have.add(json.dumps(r, sort_keys=True))
                    added += 1
        return added

    def record_asked(self, session: str, question: Question, *, point: str | None,
                     history: Sequence[AttemptView], chosen_by: str = "bank") -> str:
        """Note that `question` was asked now; returns the ask id its outcome will carry."""
        ask_id = f"{session}:{uuid.uuid4().hex[:12]}"
        record = {"kind": "asked", "ask": ask_id, "time": _now(), "session": session,
                  "question": question.id, "category": question.category, "text": question.text,
                  "point": point, "chosen_by": chosen_by,
                  "after_attempt": history[-1].number if history else 0,
                  "best_before": best_speedup(history)}
        with self._locked() as fd:
            self._append(fd, record)
        return ask_id

    def record_outcome(self, ask_id: str, *, best_after: float | None, attempts: int) -> None:
        """The best correct speedup seen once `attempts` attempts followed the ask."""
        with self._locked() as fd:
            records, _ = self._read_unlocked()
            asked = next((r for r in records if r.get("kind") == "asked" and r.get("ask") == ask_id), None)
            if asked is None:
                raise KeyError(f"no question was asked with id {ask_id!r}")
            if any(r.get("kind") == "outcome" and r.get("ask") == ask_id for r in records):
                return
            self._append(fd, self._outcome(asked, best_after, attempts))

    @staticmethod
    def _outcome(asked: dict, best_after: float | None, attempts: int, noise: float = 0.0) -> dict[str, Any]:
        """`noise`: the relative spread the session had measured by then (re-runs of one kernel)."""
        return {"kind": "outcome", "ask": asked["ask"], "time": _now(), "session": asked.get("session"),
                "question": asked.get("question"), "category": asked.get("category"),
                "best_before": asked.get("best_before"), "best_after": best_after, "attempts": attempts,
                "noise": round(noise, 6)}

    def settle(self, session: str, history: Sequence[AttemptView], *, final: bool = False) -> int:
        """Write outcomes for this session's asks that have K attempts after them.

        With `final` (the session is over) an ask with fewer but at least one attempt after
        it settles too; one with none stays pending. Returns how many outcomes were written.
        """
        written = 0
        with self._locked() as fd:
            records, _ = self._read_unlocked()
            done = {r.get("ask") for r in records if r.get("kind") == "outcome"}
            asks = [r for r in asks_as_retagged(records).values() if r.get("session") == session]
            for i, a in enumerate(asks):
                if a.get("ask") in done:
                    continue
                start = int(a.get("after_attempt") or 0)
                # The next ask ends this one's window: what follows it is that question's doing.
                end = int(asks[i + 1].get("after_attempt") or 0) if i + 1 < len(asks) else None
                # Only runs count: a rollback or an unchecked edit measures nothing.
                after = sorted((h for h in history if h.number > start and h.measured
                                and (end is None or h.number <= end)), key=lambda h: h.number)[: self.k]
                closed = end is not None
                if closed and not after:  # superseded before any run: no outcome to credit
                    self._append(fd, self._outcome(a, None, 0))
                    written += 1
                    continue
                if len(after) < self.k and not ((final or closed) and after):
                    continue
                # A re-measure of a kernel already timed is drift, not the question's doing: after
                # the ask, only the first timing of each kernel counts.
                # (one kernel: one code identity, so a comment-only edit is no new kernel)
                known = {(h.identity, h.scope) for h in history
                         if h.number <= start and h.identity and h.timed_speedup is not None}
                counted = [h for h in history if h.number <= start]
                for h in history:
                    if start < h.number <= after[-1].number and (h.identity, h.scope) not in known:
                        counted.append(h)
                        if h.identity and h.timed_speedup is not None:
                            known.add((h.identity, h.scope))
                # Compare like with like: a best taken from quick runs only (no full grid before
                # the ask) is compared with the quick runs after it, never with a full grid's
                # geomean over other scenarios.
                if not any(h.full_grid and h.timed_speedup is not None for h in counted if h.number <= start):
                    counted = [h for h in counted if not h.full_grid]
                # And on the device best_before was measured on: runs after a move to another machine read
                # another speed, neither gain nor loss.
                here = best_rule.latest_device((h.device, h.measured) for h in history if h.number <= start)
                if here:
                    counted = [h for h in counted if best_rule.comparable(h.device, here)]
                best_after = best_speedup(counted)
                seen = [h for h in history if h.number <= after[-1].number]
                outcome = self._outcome(a, best_after, len(after), noise=measured_noise(seen))
                self._append(fd, outcome)
                records.append(outcome)
                written += 1
            self._judge(fd, records, session, history)
        return written

    def _judge(self, fd: int, records: list[dict[str, Any]], session: str, history: Sequence[AttemptView]) -> None:
        """A `judged` record for each settled ask of `session` whose same-call gain (the first attempt of its window
        that was a gain only against a run of the best kernel timed beside it, or None) is not the one last
        recorded (None when nothing was). Judged on the whole history, as `ks log` judges it now."""
        noise = effective_noise(history, self.config)
        paired = {g.number: g for g in gains(history, noise, self.config.paired_noise) if g.over is not None}
        asks = [r for r in asks_as_retagged(records).values() if r.get("session") == session]
        outcomes = by_ask(records, "outcome")  # the first, as compute_stats counts it
        latest = by_ask(records, "judged", latest=True)
        for i, a in enumerate(asks):
            o = outcomes.get(a["ask"])  # every ask record has its id (by_ask keys them by it)
            if o is None or not o.get("attempts"):
                continue
            start = int(a.get("after_attempt") or 0)
            end = int(asks[i + 1].get("after_attempt") or 0) if i + 1 < len(asks) else None
            window = [h for h in history if h.number > start and h.measured
                      and (end is None or h.number <= end)][: int(o["attempts"])]
            found = next((paired[h.number] for h in window if h.number in paired), None)
            gain = None if found is None else found.number
            if latest.get(a["ask"], {}).get("paired_gain") == gain:  # no record yet reads as no same-call gain
                continue
            record = {"kind": "judged", "ask": a["ask"], "time": _now(), "session": session,
                      "question": a.get("question"), "paired_gain": gain,
                      "over": None if found is None else found.over,
                      "ratio": None if found is None or found.ratio is None else round(found.ratio, 6)}
            self._append(fd, record)
            records.append(record)

    def retag(self, session: str, attempt: int, was: str | None, question: Question) -> tuple[bool, dict | None]:
        """Count the ask that attempt `attempt` opened by its `ks try --question` (recorded as `was`) for
        `question` instead: a `retagged` record. Returns whether it was written, and the ask whose window
        holds the attempt as it counts now (None when none). Nothing is written when the attempt opened no
        such ask: no question recorded, an ask the bank chose, or an attempt that continued the ask of the
        one before it (retag that one)."""
        with self._locked() as fd:
            records, _ = self._read_unlocked()
            mine = [a for a in asks_as_retagged(records).values() if a.get("session") == session]
            # the latest ask before the attempt; `ks try --question` asks after the attempt before it
            holder = next((a for a in reversed(mine) if int(a.get("after_attempt") or 0) < attempt), None)
            if (not was or holder is None or int(holder.get("after_attempt") or 0) != attempt - 1
                    or holder.get("question") != was or holder.get("chosen_by") != "human"):
                return False, holder
            self._append(fd, {"kind": "retagged", "ask": holder["ask"], "time": _now(), "session": session,
                              "question": question.id, "category": question.category, "text": question.text,
                              "attempt": attempt, "was": was})
            return True, {**holder, "question": question.id}

    def asked_ids(self, session: str) -> list[str]:
        """Question ids asked in a session, oldest first (under the question each ask was retagged to)."""
        return [str(a["question"]) for a in asks_as_retagged(self.records()).values() if a.get("session") == session]

    def stats(self, noise: float = 0.0) -> EfficacyStats:
        if not self.path.exists():
            return EfficacyStats()
        with self._locked():
            records, skipped = self._read_unlocked()
        return compute_stats(records, noise=noise, skipped=skipped)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
