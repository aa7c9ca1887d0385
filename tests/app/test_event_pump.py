"""The event pump: many events from another thread reach the UI in few batches, with
adjacent text deltas joined and only the latest progress kept, in order."""

from __future__ import annotations

import threading

from ks_tui import events as ev
from ks_tui.app.event_pump import EventPump, coalesce


def test_coalesce_joins_text_and_keeps_last_progress_in_order():
    batch = [
        ev.TextDelta("Tiling "), ev.TextDelta("the K loop"),
        ev.ToolCall("t1", "run_harness", {"mode": "bench"}),
        ev.HarnessProgress(1, 20, "a", "check"), ev.HarnessProgress(2, 20, "b", "check"),
        ev.TextDelta("done"),
    ]
    merged = coalesce(batch)
    assert [e.kind for e in merged] == ["text_delta", "tool_call", "harness_progress", "text_delta"]
    assert merged[0].text == "Tiling the K loop"
    assert (merged[2].done, merged[2].scenario) == (2, "b")
    assert merged[3].text == "done"


def test_pump_wakes_once_per_batch():
    wakes = []
    pump = EventPump(lambda: wakes.append(1))
    for w in ("a", "b", "c"):
        pump.push(ev.TextDelta(w))
    assert len(wakes) == 1  # one wake-up for the three, until the UI drains them
    assert [e.text for e in pump.drain()] == ["abc"]
    pump.push(ev.TextDelta("d"))
    assert len(wakes) == 2


def test_pump_loses_nothing_across_threads():
    wakes = []
    pump = EventPump(lambda: wakes.append(1))
    words = [f"w{i} " for i in range(5000)]

    def produce():
        for w in words:
            pump.push(ev.TextDelta(w))

    thread = threading.Thread(target=produce)
    thread.start()
    received = []
    while thread.is_alive() or wakes:
        if wakes:
            wakes.clear()
            received.extend(pump.drain())
    received.extend(pump.drain())
    assert "".join(e.text for e in received) == "".join(words)
