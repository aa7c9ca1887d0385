"""Writing remarks (ks_tui/attempts/remarks.py has their format): a plain remark, one that
names the question an attempt answered, one that declares two runs timed in one device call;
and the raw notes for export and import.

Part of AttemptStore (ks_tui/attempts/store.py); `self` is the store.
"""

from __future__ import annotations

from ks_tui.attempts import trailers as tr
from ks_tui.attempts.git_io import _json_object
from ks_tui.attempts.model import Attempt
from ks_tui.attempts.read_model import resolve_in
from ks_tui.attempts.remarks import REMARKS_REF, parse_remarks, remark_line
from ks_tui.attempts.store_base import StoreBase
from ks_tui.errors import KsError
from ks_tui.pairs import DECLARED, declared_pair
from ks_tui.trace import Trace


class RemarkWriter(StoreBase):
    """AttemptStore's remarks written as notes."""

    def remark(self, sid: str, ref: str | int, text: str, author: str = "human") -> Attempt:
        """Append a remark to an attempt (its commit and summary stay as they are); the attempt
        with its remarks. Also a `remark` line in the session trace."""
        info = self.session(sid)
        target = resolve_in(self._attempts(info), info.id, ref)
        line = remark_line(text, author)
        self._notes(REMARKS_REF, "append", target.sha, text=line, what="storing the remark as a git note")
        Trace(self.trace_path(info.id)).append("remark", {"attempt": target.number, "sha": target.sha,
                                                          "author": author, "text": parse_remarks(line)[0]["text"]})
        return resolve_in(self._attempts(info), info.id, target.number)

    def remark_question(self, sid: str, ref: str | int, question: str, text: str,
                        author: str = "human") -> tuple[Attempt, str | None]:
        """Declare, by a remark, that attempt `ref` answered `question` (a question id the caller has checked
        against the bank): its KS-Question trailer was wrong or missing, and commits are never rewritten.
        Returns the attempt as it reads now and the question it read before (None when none). KsError,
        writing nothing, for an empty reason, a rollback, or the question the attempt already answers."""
        info = self.session(sid)
        target = resolve_in(self._attempts(info), info.id, ref)
        if not " ".join(text.split()):
            raise KsError("a question remark needs the reason (why the recorded question was not the one answered)",
                          hint=f'ks remark {target.number} --question {question} "the probe asked whether ..."')
        if target.rollback_of is not None:
            raise KsError(f"attempt {target.number} is a rollback: it answered no question")
        if target.question == question:
            raise KsError(f"attempt {target.number} already reads as answering {question}")
        before = target.question
        said = f"answered {question}" + (f", not {before}" if before else "") + f": {text}"
        line = remark_line(said, author, question=question)
        self._notes(REMARKS_REF, "append", target.sha, text=line, what="storing the remark as a git note")
        Trace(self.trace_path(info.id)).append("remark", {"attempt": target.number, "sha": target.sha,
                                                          "author": author, "text": parse_remarks(line)[0]["text"],
                                                          "question": question})
        return resolve_in(self._attempts(info), info.id, target.number), before

    def remark_same_call(self, sid: str, ref: str | int, other: str | int, text: str,
                         author: str = "human") -> tuple[Attempt, Attempt]:
        """Declare, by a remark on each, that attempt `ref`'s run was timed in the same device call as
        attempt `other`'s (for runs without a pair tag of their own: made before tags existed, or by
        hand). `ref` joins `other`'s pair (its run's tag or a declared one), or both get a new tag
        `declared:<other's sha>`. KsError, writing nothing, when the two cannot be one call's runs:
        the same attempt, one not measured, measured on different devices, or `ref` already paired."""
        info = self.session(sid)
        attempts = self._attempts(info)
        me, them = resolve_in(attempts, info.id, ref), resolve_in(attempts, info.id, other)
        if me.number == them.number:
            raise KsError(f"attempt {me.number} cannot be declared timed beside itself")
        if not " ".join(text.split()):
            raise KsError("a same-call remark needs the evidence (which call, where its files are)",
                          hint=f'ks remark {me.number} --same-call {them.number} '
                               '"call 5: one interleaved round, results/..."')
        notes = self._result_notes(info)
        results = {a.number: _json_object(notes.get(a.sha, "")) for a in (me, them)}
        for a in (me, them):
            if a.rollback_of is not None or a.status == "unchecked" or not results[a.number]:
                raise KsError(f"attempt {a.number} has no run of its own to pair "
                              f"({'a rollback' if a.rollback_of is not None else 'no stored result'})")
        dev_me, dev_them = (results[a.number].get("device") or a.device for a in (me, them))
        if dev_me and dev_them and dev_me != dev_them:
            raise KsError(f"attempts {me.number} and {them.number} ran on different devices "
                          f"({dev_me}; {dev_them}), so not in one call")
        mine = results[me.number].get("pair") or declared_pair(me.remarks)
        if mine:
            raise KsError(f"attempt {me.number} is already paired (tag {mine}): a run has one call",
                          hint=f"declare the other attempts beside it: ks remark N --same-call {me.number} TEXT")
        theirs = results[them.number].get("pair") or declared_pair(them.remarks)
        tag = theirs or f"{DECLARED}{them.sha[:12]}"
        lines = [(me, remark_line(f"timed in the same call as #{them.number}: {text}", author, pair=tag))]
        if not theirs:  # `them` takes the new tag too
            lines.append((them, remark_line(f"timed in the same call as #{me.number}: {text}", author, pair=tag)))
        for a, line in lines:
            self._notes(REMARKS_REF, "append", a.sha, text=line, what="storing the remark as a git note")
            Trace(self.trace_path(info.id)).append("remark", {"attempt": a.number, "sha": a.sha, "author": author,
                                                              "text": parse_remarks(line)[0]["text"], "pair": tag})
        now = self._attempts(info)
        return resolve_in(now, info.id, me.number), resolve_in(now, info.id, them.number)

    def remark_notes(self, sid: str) -> dict[str, str]:
        """{commit sha: the raw remarks note} for the session's attempts that have remarks (for export)."""
        out = self._run(self.repo, "log", "-z", "--no-notes", f"--notes={REMARKS_REF}", f"--format=%H{tr.FIELD}%N",
                        self._range(self.session(sid)), "--", what="reading the remarks",
                        strip_newline_in_stdout=False)
        notes = (r.strip("\n").partition(tr.FIELD)[::2] for r in out.split("\0") if tr.FIELD in r)
        return {sha: note.strip("\n") + "\n" for sha, note in notes if note.strip()}

    def restore_remarks(self, sha: str, note: str) -> None:
        """Write a remarks note as exported (for import); replaces any note on that commit."""
        self._notes(REMARKS_REF, "add", "-f", sha, text=note, what="storing the remarks as a git note")
