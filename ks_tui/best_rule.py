"""Which run is a session's best: one rule for every record type that applies it.

The attempt store marks it (Attempt), the question package plans from it (AttemptView), and the TUI
draws it (attempt dicts and chart points). Each passes its own fields in, so this module imports
nothing of theirs (the question package must not pull in git through the attempt store).

- Speedups measured on two machines do not compare (one kernel read 1.160x on an H200, 1.148x on
  an H100), so only runs on the device of the latest measurement compete, with runs that name none.
- A whole-grid run outranks a quick or subset one: their geomeans cover other scenarios.
"""

from __future__ import annotations

from typing import Callable, Iterable, TypeVar

T = TypeVar("T")


def latest_device(records: Iterable[tuple[str, bool]]) -> str:
    """The device of the last (device, measured) record that was measured and names one: where the
    session measures now ("" when none does). A rollback is not a measurement: it carries its
    target's result."""
    here = ""
    for device, measured in records:
        if device and measured:
            here = device
    return here


def comparable(device: str, here: str) -> bool:
    """Whether a run on `device` competes with runs on `here` (either unnamed counts as the same)."""
    return not device or not here or device == here


def fastest(items: Iterable[T], speedup: Callable[[T], float | None],
            full_grid: Callable[[T], bool]) -> T | None:
    """The item with the largest speedup among the whole-grid runs if there is one, else among all
    timed ones (speedup not None); the earliest on a tie, None when none is timed."""
    timed = [x for x in items if speedup(x) is not None]
    full = [x for x in timed if full_grid(x)]
    return max(full or timed, key=speedup, default=None)  # type: ignore[arg-type]
