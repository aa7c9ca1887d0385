"""The Questions panel: at a decision point, the ranked questions to pick from by key.

Up/down/enter or a number picks a question, `i` opens a line for the human's own question,
`x` skips. The pane only reports the choice (QuestionAnswered); the engine acts on it.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from ks_tui.app.messages import QuestionAnswered

POINT_LABEL = {
    "session_start": "session start",
    "plateau": "plateau",
    "failure_streak": "failure streak",
    "agent_stop": "agent stopped",
    "suspicious_gain": "suspicious gain",
    "every_n_steps": "every N steps",
}


class QuestionPane(Vertical):
    BINDINGS = [
        *[Binding(str(n), f"pick({n})", f"pick {n}", show=False) for n in range(1, 10)],
        Binding("i", "own_question", "Own question"),
        Binding("x", "skip", "Skip"),
        Binding("escape", "close_input", "Cancel", show=False),
    ]

    DEFAULT_CSS = """
    QuestionPane { height: auto; }
    QuestionPane #question-point { height: auto; }
    QuestionPane OptionList, QuestionPane OptionList:focus {
        height: auto; max-height: 7; border: none; padding: 0; background: transparent;
    }
    QuestionPane OptionList.-empty { display: none; }
    QuestionPane Input { display: none; }
    QuestionPane.-typing Input { display: block; }
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.questions: list[dict[str, Any]] = []
        self.point: str | None = None
        self.human = False  # no agent: the questions are for the person at the keyboard
        self._focus_before = None  # what had the keys before `a` opened the input

    def compose(self):
        yield Static(self._idle_text(), id="question-point")
        yield OptionList(id="question-list", classes="-empty")
        yield Input(placeholder=self._input_hint(), id="question-input")

    @property
    def pending(self) -> bool:
        return self.point is not None

    def offer(self, point: str, reason: str, questions: list[dict[str, Any]]) -> None:
        self.point = point
        self.questions = list(questions)
        head = Text()
        head.append(POINT_LABEL.get(point, point), "bold yellow")
        head.append(f": {reason}" if reason else "")
        head.append("\n1-9/enter pick · i own question · x skip", "dim")
        self.query_one("#question-point", Static).update(head)
        options = self.query_one(OptionList)
        options.clear_options()
        for n, q in enumerate(self.questions, start=1):
            prompt = Text()
            prompt.append(f"{n} ", "bold")
            prompt.append(q.get("text", ""))
            if q.get("category"):
                prompt.append(f"  [{q['category']}]", "dim")
            options.add_option(Option(prompt, id=q.get("id")))
        options.set_class(not self.questions, "-empty")
        if self.questions:
            options.highlighted = 0

    def settle(self, note: str | None = None) -> None:
        """Back to idle after the question went out (or the point passed)."""
        self.point = None
        self.questions = []
        options = self.query_one(OptionList)
        options.clear_options()
        options.add_class("-empty")
        self.query_one("#question-point", Static).update(
            Text(note, style="dim") if note else self._idle_text())

    def set_human(self, human: bool) -> None:
        self.human = human
        self.query_one(Input).placeholder = self._input_hint()
        if not self.pending:
            self.settle()

    def _input_hint(self) -> str:
        if self.human:  # no agent to send it to: the engine records it with the next attempt
            return "your question, recorded with your next attempt; enter to send, esc to cancel"
        return "your question for the agent, enter to send, esc to cancel"

    def _idle_text(self) -> Text:
        if self.human:
            return Text("No decision point. a: note a question for your next attempt.", style="dim")
        return Text("No decision point. a: ask the agent your own question.", style="dim")

    def _answer(self, question_id: str | None, text: str | None) -> None:
        self.post_message(QuestionAnswered(question_id, text))

    def action_pick(self, n: int) -> None:
        if 1 <= n <= len(self.questions):
            self._answer(self.questions[n - 1].get("id"), None)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self._answer(event.option.id, None)

    def action_own_question(self) -> None:
        focused = self.screen.focused
        self._focus_before = focused if focused is not None and focused not in self.query("*") else None
        self.add_class("-typing")
        self.query_one(Input).focus()

    def action_close_input(self) -> None:
        self.remove_class("-typing")
        self.query_one(Input).value = ""
        # Back where the keys were before `a`: the offered questions, else the widget that had
        # focus (the conversation, say), not the hidden empty list.
        before = self._focus_before
        if self.pending or before is None or not before.is_attached:
            self.query_one(OptionList).focus()
        else:
            before.focus()

    def action_skip(self) -> None:
        if self.pending:
            self._answer(None, None)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        if not text:
            return
        self.action_close_input()
        self._answer(None, text)
