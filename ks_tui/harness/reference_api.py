"""Names shared by every task's reference module and the harness (standard library only).

A task's reference.py may raise `Unavailable("why")` from a baseline factory when that
baseline cannot run a scenario (library missing, shape unsupported); the harness records
the reason and times the other baselines.
"""

from __future__ import annotations

REQUIRED = ("make_inputs", "make_output", "call_kernel", "reference")
OPTIONAL = ("reference_lowp", "BASELINES", "extra_limits")


class Unavailable(Exception):
    """A baseline cannot run this scenario; the message says why."""
