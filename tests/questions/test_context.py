"""Attempt views, the condition context and threshold overrides."""

from datetime import datetime, timezone

import pytest

from ks_tui.questions import REQUIREMENTS, DecisionConfig, build_context, from_attempt_dict

from .builders import fail, ok

CUDA_RESULT = {
    "status": "correct", "device": "NVIDIA H200", "kernel_sha256": "f00d", "geomean_speedup": 1.2,
    "compile": {"ok": True, "kernels": [{"name": "k", "registers": 255, "spills_bytes": 64,
                                         "perf_warnings": ["C7511: wgmma.mma_async instructions are serialized"]}],
                "sass": {"HGMMA": 96, "LDL": 4}},
    "scenarios": [{"id": "a", "ok": True, "tflops": 512.5, "speedup": 1.5},
                  {"id": "b", "ok": True, "tflops": 301.0, "speedup": 0.9},
                  {"id": "c", "ok": True, "tflops": None, "speedup": None}],
}


def attempt_dict(**kw):
    """The shape of ks_tui.attempts.Attempt.to_dict()."""
    d = {"session": "s", "number": 4, "sha": "ab" * 20, "time": datetime.now(timezone.utc).isoformat(),
         "author": "agent", "status": "correct", "correct": "182/182", "speedup": 1.2, "baseline": "cudnn",
         "question": "limit-floor", "summary": "", "rollback_of": None, "best": True, "mode": "bench"}
    return {**d, **kw}


def test_from_attempt_dict_reads_the_attempt_and_its_result():
    a = from_attempt_dict(attempt_dict(), CUDA_RESULT)
    assert (a.number, a.status, a.speedup, a.correct, a.question) == (4, "correct", 1.2, "182/182", "limit-floor")
    assert (a.max_tflops, a.device, a.kernel_sha256) == (512.5, "NVIDIA H200", "f00d")
    bare = from_attempt_dict(attempt_dict(status="incorrect", speedup=None, question=None, rollback_of=2))
    assert (bare.max_tflops, bare.device, bare.question, bare.rollback_of) == (None, "", None, 2)
    assert bare.failed and bare.timed_speedup is None


def test_context_from_a_cuda_result_covers_every_condition():
    history = [fail(1, "compile_error"), ok(2, 0.8), ok(3, 1.2, rollback_of=2)]
    ctx = build_context(history, CUDA_RESULT)
    assert set(ctx) == set(REQUIREMENTS)
    expected_true = {"is_cuda", "has_correct_attempt", "has_failures", "has_losing_scenarios", "beats_baseline",
                     "has_spills", "has_serialized_wgmma", "has_sass", "has_rollbacks"}
    assert {k for k, v in ctx.items() if v} == expected_true


def test_context_for_a_cpu_task_with_no_attempts():
    ctx = build_context([], None, "cpp")
    assert {k for k, v in ctx.items() if v} == {"is_cpu"}
    assert build_context([ok(1, 0.5)], {"scenarios": [{"ok": False}]}, "cpp")["below_baseline"]


def test_overrides_are_checked_like_the_bank():
    cfg = DecisionConfig().with_overrides({"plateau_n": 6, "noise": 0.05, "peak_tflops": {"MI300X": 1307}})
    assert (cfg.plateau_n, cfg.noise) == (6, 0.05)
    assert cfg.peak_for("AMD Instinct MI300X") == 1307 and cfg.peak_for("NVIDIA H100 80GB HBM3") == 989
    assert cfg.peak_for("NVIDIA H20") == 148 and cfg.peak_for("cpu") is None
    with pytest.raises(ValueError, match="failure_n must be an integer"):
        DecisionConfig().with_overrides({"failure_n": 2.5})
