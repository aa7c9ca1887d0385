"""The facts a question's `requires:` conditions are evaluated against.

`build_context` derives every condition in vocab.REQUIREMENTS from the attempt history,
the latest harness result and the task's language; callers may add or override keys.
"""

from __future__ import annotations

from typing import Any, Sequence

from ks_tui.questions.views import AttemptView, best_speedup


def build_context(history: Sequence[AttemptView], result: dict[str, Any] | None = None,
                  language: str | None = None) -> dict[str, bool]:
    result = result or {}
    scenarios = result.get("scenarios") or []
    compile_info = result.get("compile") or {}
    best = best_speedup(history)
    if language is None and "sass" in compile_info:
        language = "cuda"
    return {
        "is_cuda": language == "cuda",
        "is_cpu": language == "cpp",
        "has_correct_attempt": best is not None,
        "has_failures": any(a.failed for a in history),
        "has_failing_scenarios": any(s.get("ok") is False for s in scenarios),
        "has_losing_scenarios": any(
            isinstance(s.get("speedup"), (int, float)) and s["speedup"] < 1 for s in scenarios),
        "beats_baseline": best is not None and best > 1,
        "below_baseline": best is not None and best < 1,
        "has_spills": any((k.get("spills_bytes") or 0) > 0 for k in compile_info.get("kernels") or []),
        "has_serialized_wgmma": any(k.get("perf_warnings") for k in compile_info.get("kernels") or []),
        "has_sass": bool(compile_info.get("sass")),
        "has_rollbacks": any(a.rollback_of is not None for a in history),
    }
