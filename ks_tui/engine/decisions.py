"""Decision points and questions: rank the bank's questions, wait for a person's pick (or let
the bank pick), and send the question to the agent as its next user message."""

from __future__ import annotations

from dataclasses import dataclass

from ks_tui import events as ev
from ks_tui.agent import prompts
from ks_tui.engine.session_base import SessionBase


@dataclass
class Answer:
    """A person's reply: a bank question id, their own text, or neither (skip)."""

    question_id: str | None
    text: str | None


class DecisionsMixin(SessionBase):
    """Part of Session (ks_tui/engine/session.py)."""

    def _decision(self, point: str, reason: str, history=None) -> bool:
        """A decision point: offer ranked questions; True when one was sent to the agent."""
        from ks_tui.questions import build_context, select

        history = self._history() if history is None else history
        last = self.results.get(history[-1].number) if history else None
        context = build_context(history, last, self.task.language)
        ranked = select(self.bank, point, self.asked, self.efficacy.stats(noise=self.bank.config.noise), context, k=3)
        if self.human_present:  # the state says "waiting" by the time the questions show
            self._set_state("waiting_question")
        self.emit(ev.DecisionPointReached(point, reason, [q.to_dict() for q in ranked]))
        if not self.human_present:
            if ranked:
                self._ask(ranked[0], "bank", point)
                return True
            return False
        self._deciding = True
        try:
            answer = self._wait_answer(self.cfg.question_timeout_s)
        finally:
            self._deciding = False
        if answer is None:  # nobody answered in time
            if ranked and not self._stop.is_set():
                self._ask(ranked[0], "timeout", point)
                return True
            return False
        return self._ask_answer(answer, point, ranked)

    def _ask_answer(self, answer: Answer, point: str | None, ranked=()) -> bool:
        """Send the question a person chose or typed; False when skipped or unknown."""
        from ks_tui.questions import human_question

        if answer.question_id:
            q = self.bank.get(answer.question_id) or next((r for r in ranked if r.id == answer.question_id), None)
            if q is None:
                self.emit(ev.ErrorEvent(f"no question {answer.question_id!r} in the bank"))
                return False
            self._ask(q, "human", point)
            return True
        if answer.text and answer.text.strip():
            self._ask(human_question(answer.text), "human", point)
            return True
        return False  # skipped

    def _ask(self, q, chosen_by: str, point: str | None) -> None:
        self.efficacy.record_asked(self.id, q, point=point, history=self._history(), chosen_by=chosen_by)
        self.asked.append(q.id)
        self.pending_question = q.id
        self.emit(ev.QuestionAsked(q.id, q.text, q.category, chosen_by))
        self._user(prompts.question_message(q.text, q.id, q.category, chosen_by), "question")
