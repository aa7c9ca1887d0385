"""A plain view of one attempt: what the decision points and efficacy need, nothing more.

Built from `Attempt.to_dict()` (ks_tui.attempts) and, when at hand, that attempt's harness
result, so this package never imports git or the harness.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ks_tui import best_rule
from ks_tui.pairs import declared_pair
from ks_tui.questions.vocab import FAILURE_STATUSES, UNMEASURED_STATUSES


@dataclass(frozen=True)
class AttemptView:
    number: int
    status: str                      # harness status: correct, incorrect, compile_error, ...
    speedup: float | None = None     # geomean vs the best baseline; None when not timed
    correct: str = ""                # "n/total" as in the KS-Correct trailer
    max_tflops: float | None = None  # highest TFLOP/s over the scenarios of this run
    device: str = ""                 # device name from the harness result
    kernel_sha256: str = ""          # the kernel file's sha256 from the harness result
    # the kernel's code identity (Attempt.code: comments and layout left out); "" when unknown
    code: str = ""
    question: str | None = None      # id of the question that preceded the attempt
    author: str = "agent"
    rollback_of: int | None = None
    # What the speedup was measured over: "full" (the whole grid), "quick" (the task's quick
    # subset) or "subset" (a --scenarios selection). Geomeans over different scenario sets are
    # not comparable: "" (unknown, e.g. an old attempt) is treated as "full".
    scope: str = "full"
    # The run's pair tag (`ks bench --pair`, every run of one `ks compare` round): runs with one tag were
    # timed side by side in one call, so their difference is judged at the bank's paired_noise.
    pair: str = ""
    # scenarios whose timing the harness found invalid (faster than their speed of light, or work
    # outside the timed stream): a reason to question the gain, whatever its size
    invalid: int = 0

    @property
    def identity(self) -> str:
        """What makes two runs runs of one kernel (a re-measure, a repeat that measures the noise): its code, so a
        comment-only edit is the same kernel; the file's sha256 where the code is unknown; "" when neither is."""
        return self.code or self.kernel_sha256

    @property
    def passed(self) -> bool:
        return self.status == "correct"

    @property
    def failed(self) -> bool:
        return self.status in FAILURE_STATUSES

    @property
    def measured(self) -> bool:
        # A rollback copies the figures of the attempt it restores: no new measurement.
        return self.status not in UNMEASURED_STATUSES and self.rollback_of is None

    @property
    def full_grid(self) -> bool:
        return self.scope not in ("quick", "subset")

    @property
    def timed_speedup(self) -> float | None:
        """The speedup when it counts: only a correct, timed run has one worth comparing."""
        return self.speedup if self.passed and self.speedup is not None else None


def max_tflops_of(result: dict[str, Any] | None) -> float | None:
    values = [s.get("tflops") for s in (result or {}).get("scenarios") or []]
    values = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return max(values) if values else None


def _float_or_none(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def scope_of(mode: str | None, result: dict[str, Any] | None = None) -> str:
    """"full", "quick" or "subset", from an attempt's mode (check|bench, maybe -quick/-subset)
    or else from its harness result (`quick`, `selection`)."""
    mode = mode or ""
    if mode.endswith("quick"):
        return "quick"
    if mode.endswith("subset"):
        return "subset"
    if not mode and result:
        if result.get("quick"):
            return "quick"
        if result.get("selection"):
            return "subset"
    return "full"


def views_of(attempts: Iterable[Any], results: Mapping[int, dict[str, Any]]) -> list[AttemptView]:
    """The question bank's view of a session: each attempt (anything with `number` and `to_dict()`, as the
    store's Attempt) with its stored result (`results`, by attempt number, as `AttemptStore.results` gives)."""
    return [from_attempt_dict(a.to_dict(), results.get(a.number)) for a in attempts]


def from_attempt_dict(d: dict[str, Any], result: dict[str, Any] | None = None) -> AttemptView:
    """An AttemptView from `Attempt.to_dict()`, plus its harness result JSON if given.

    `max_tflops`, `device` and `kernel_sha256` come from the dict when present (a caller may
    have added them), else from the result; `code` (the kernel's code identity) from the dict.
    """
    result = result or {}
    max_tflops = _float_or_none(d.get("max_tflops"))
    if max_tflops is None:
        max_tflops = max_tflops_of(result)
    rollback_of = d.get("rollback_of")
    return AttemptView(
        number=int(d["number"]),
        status=str(d.get("status") or result.get("status") or ""),
        speedup=_float_or_none(d.get("speedup", result.get("geomean_speedup"))),
        correct=str(d.get("correct") or result.get("correct") or ""),
        max_tflops=max_tflops,
        device=str(d.get("device") or result.get("device") or ""),
        kernel_sha256=str(d.get("kernel_sha256") or result.get("kernel_sha256") or ""),
        code=str(d.get("code") or ""),
        question=d.get("question") or None,
        author=str(d.get("author") or "agent"),
        rollback_of=int(rollback_of) if rollback_of is not None else None,
        scope=scope_of(d.get("mode"), result),
        # a run's own tag, else one a remark declared after the fact (`ks remark N --same-call M`)
        pair=str(result.get("pair") or declared_pair(d.get("remarks") or [])),
        invalid=int(result.get("invalid") or 0) if isinstance(result.get("invalid"), int) else 0,
    )


def best_speedup(history: Iterable[AttemptView], upto: int | None = None) -> float | None:
    """Best correct speedup among attempts numbered <= upto (all when upto is None), by the rule
    the attempt log's best mark uses: the fastest full-grid run, and only while there is none a
    quick or subset run (their geomeans cover other scenarios and do not compare); and only runs
    on the device of the latest measurement (or naming none): another GPU's speedups do not compare."""
    seen = [a for a in history if upto is None or a.number <= upto]
    here = best_rule.latest_device((a.device, a.measured) for a in seen)
    best = best_rule.fastest([a for a in seen if best_rule.comparable(a.device, here)],
                             lambda a: a.timed_speedup, lambda a: a.full_grid)
    return best.timed_speedup if best else None
