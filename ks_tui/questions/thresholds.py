"""Thresholds of the decision points and the selection, with their defaults.

A bank's `thresholds:` section, or the user's config, overrides any of them; both go
through `check_thresholds` so a bad value is named the same way wherever it came from.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, fields, replace
from typing import Any

# Dense bf16/fp16 tensor-core peak (TFLOP/s, no sparsity) from the vendors' data sheets.
# A measured figure above it means the timing or the FLOP count is wrong.
DEFAULT_PEAK_TFLOPS: dict[str, float] = {
    "H100": 989.0, "H200": 989.0, "H800": 989.0, "GH200": 989.0, "H20": 148.0,
    "A100": 312.0, "A800": 312.0, "L40S": 362.0, "B200": 2250.0,
}


@dataclass(frozen=True)
class DecisionConfig:
    plateau_n: int = 4            # attempts without a gain above the noise
    failure_n: int = 3            # failed attempts in a row
    every_n: int = 8              # ask every N attempts regardless
    suspicious_factor: float = 1.5  # a jump over the previous best larger than this is suspect
    noise: float = 0.02           # relative noise floor of a speedup (0.02 = 2 %)
    paired_noise: float = 0.005   # the same between runs timed side by side in one call (one pair tag)
    efficacy_k: int = 3           # attempts after a question that count as its outcome
    recent_n: int = 5             # a question among the last N asked is ranked last
    prior_rate: float = 0.5       # new-best rate assumed for a question never asked
    prior_weight: float = 2.0     # how many asks that assumption is worth
    peak_tflops: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_PEAK_TFLOPS))

    def with_overrides(self, values: dict[str, Any]) -> "DecisionConfig":
        """A copy with `values` applied; ValueError naming the first bad one."""
        problems = check_thresholds(values)
        if problems:
            raise ValueError(problems[0][1])
        values = dict(values)
        if "peak_tflops" in values:
            values["peak_tflops"] = {**self.peak_tflops,
                                     **{str(k): float(v) for k, v in values["peak_tflops"].items()}}
        for f in fields(self):
            if f.name in values and f.type in ("float", float):
                values[f.name] = float(values[f.name])
        return replace(self, **values)

    def peak_for(self, device: str) -> float | None:
        """Peak TFLOP/s of a device named like "NVIDIA H200"; the longest matching name wins."""
        for name in sorted(self.peak_tflops, key=len, reverse=True):
            if re.search(rf"(?<![A-Za-z0-9]){re.escape(name)}(?![A-Za-z0-9])", device or "", re.I):
                return self.peak_tflops[name]
        return None

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


# name -> (kind, lowest allowed, lowest is exclusive, highest exclusive or None)
_RULES: dict[str, tuple[str, float, bool, float | None]] = {
    "plateau_n": ("int", 1, False, None),
    "failure_n": ("int", 1, False, None),
    "every_n": ("int", 1, False, None),
    "efficacy_k": ("int", 1, False, None),
    "recent_n": ("int", 0, False, None),
    "suspicious_factor": ("number", 1, True, None),
    "noise": ("number", 0, False, 1),
    "paired_noise": ("number", 0, False, 1),
    "prior_rate": ("number", 0, False, 1),
    "prior_weight": ("number", 0, True, None),
}


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def check_thresholds(values: dict[str, Any]) -> list[tuple[str, str]]:
    """Problems as (key, message); empty when every value is known and in range."""
    problems: list[tuple[str, str]] = []
    known = (*_RULES, "peak_tflops")
    for key, value in values.items():
        if key == "peak_tflops":
            if not isinstance(value, dict) or not all(
                    isinstance(k, str) and _is_number(v) and v > 0 for k, v in value.items()):
                problems.append((key, "peak_tflops must map device names to positive numbers"))
            continue
        if key not in _RULES:
            problems.append((key, f"unknown threshold '{key}' (expected one of: {', '.join(known)})"))
            continue
        kind, low, low_open, high = _RULES[key]
        ok_type = _is_int(value) if kind == "int" else _is_number(value)
        if not ok_type:
            want = "an integer" if kind == "int" else "a number"
            problems.append((key, f"{key} must be {want} (got {value!r})"))
            continue
        below = value <= low if low_open else value < low
        if below or (high is not None and value >= high):
            rng = f"{'>' if low_open else '>='} {low}" + (f" and < {high}" if high is not None else "")
            problems.append((key, f"{key} must be {rng} (got {value!r})"))
    return problems
