"""One line at the top: task, agent state, attempts, best speedup, harness run, tokens, cost,
the last request's share of the context window, session."""

from __future__ import annotations

from dataclasses import dataclass, replace

from rich.text import Text
from textual.widgets import Static

from ks_tui.app import formatting as fmt

STATE_LABEL = {
    "opening": ("opening session…", "yellow"),
    "idle": ("idle", "dim"),
    "running": ("agent running", "bold green"),
    "waiting_question": ("waiting for a question", "bold yellow"),
    "paused": ("paused", "yellow"),
    "human": ("human mode", "bold cyan"),
    "stopped": ("stopped", "dim"),
}


@dataclass(frozen=True)
class StatusInfo:
    task: str = "—"
    session: str = "—"
    attempts: int = 0
    best_speedup: float | None = None
    best_correct: str = ""
    state: str = "opening"  # until the session is open and its engine says what it does
    tokens: int = 0
    cost_usd: float = 0.0
    priced: bool = True  # False once a turn's model had no price (a compatible server's model)
    agent: bool = True  # False in human mode: no agent waits for a question or can be paused
    harness: str = ""  # "bench 3/18" while a run is in flight
    context: float | None = None  # the last request's share of the context window


class StatusBar(Static):
    DEFAULT_CSS = """
    StatusBar { height: 1; background: $panel; color: $text; padding: 0 1; }
    """

    def __init__(self, **kwargs):
        super().__init__("", **kwargs)
        self.info = StatusInfo()

    def on_mount(self) -> None:
        self.show(self.info)

    def update_info(self, **changes) -> None:
        self.show(replace(self.info, **changes))

    def show(self, info: StatusInfo) -> None:
        self.info = info
        # In human mode the engine waits at a decision point too, but for nobody's answer in particular: the
        # questions are offered to the person, who may take one or not.
        state = "human" if not info.agent and info.state == "waiting_question" else info.state
        label, style = STATE_LABEL.get(state, (state, ""))
        best = "best —"
        if info.best_speedup is not None:
            best = f"best {fmt.speedup(info.best_speedup)}"
            if info.best_correct:
                best += f" ({info.best_correct})"
        # Most telling first: a narrow terminal cuts the line from the right.
        parts: list[tuple[str, str]] = [
            (info.task, "bold"),
            (label, style),
            (f"{info.attempts} attempt{'' if info.attempts == 1 else 's'}", ""),
            (best, "bold magenta" if info.best_speedup else ""),
        ]
        if info.harness:
            parts.append((info.harness, "cyan"))
        cost = f"${info.cost_usd:.2f}" if info.priced else ("unpriced" if not info.cost_usd else f"${info.cost_usd:.2f}+")
        parts.append((f"{_tokens(info.tokens)} tok {cost}", "dim"))
        if info.context is not None:
            parts.append((f"ctx {info.context:.0%}", "bold yellow" if info.context >= 0.7 else "dim"))
        parts.append((f"session {info.session}", "dim"))
        text = Text(no_wrap=True, overflow="ellipsis")
        for i, (chunk, chunk_style) in enumerate(parts):
            if i:
                text.append(" │ ", "dim")
            text.append(chunk, chunk_style)
        self.update(text)


def _tokens(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1e6:.1f}M"
    if n >= 1000:
        return f"{n / 1e3:.1f}k"
    return str(n)
