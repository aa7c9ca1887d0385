"""The engine: a Session runs the agent loop, the harness, the attempt store and the question
bank, and emits the events of ks_tui/events.py.

One Session drives one session folder. It runs in its own thread (`start()`), emits events to
subscribers, appends every event that matters to the trace (so a killed session resumes from
it), and takes commands from any thread: pause, resume, stop, answer_question, send_message,
run_harness_now, rollback, approve_bash. Commands act at safe points (between model turns and
tool calls), never mid-request, except stop, which also aborts the request or harness run in
flight.

No Textual here: the TUI and the headless runner consume the same events.
"""

from ks_tui.engine.session import Session

__all__ = ["Session"]
