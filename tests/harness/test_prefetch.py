"""References computed while the compiler runs (harness/prefetch.py) judge exactly as computed ones do."""

from __future__ import annotations

import importlib

import pytest

from ks_tui.harness.client import run_harness
from ks_tui.harness.prefetch import RefPrefetch
from ks_tui.harness.runner import _Background, _draw_seed, load_reference

TWO = ["d48-h8-2-q77-k301-b1-causal", "d24-h2-1-q31-k45-b4"]


def run(task, source, monkeypatch, how: str, seed: int = 4321) -> dict:
    monkeypatch.setenv("KS_REF_PREFETCH", how)  # "all": every reference prefetched; "0": none
    return run_harness(task, source, scenarios=TWO, seed=seed)


def errors(result: dict) -> list:
    return [(s["id"], s["ok"], s["draws"], s["error"]) for s in result["scenarios"]]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["naive", "zeros"])
def test_prefetched_and_computed_references_give_the_same_verdicts_and_errors(cpu_task, planted_dir, kind,
                                                                              monkeypatch):
    pre = run(cpu_task, planted_dir / f"{kind}.cpp", monkeypatch, "all")
    plain = run(cpu_task, planted_dir / f"{kind}.cpp", monkeypatch, "0")
    assert pre["timings"]["ref_prefetch_used"] > 0 and pre["timings"]["ref_prefetch_missed"] == 0
    assert "ref_prefetch_used" not in plain["timings"]
    assert errors(pre) == errors(plain)
    assert pre["status"] == ("correct" if kind == "naive" else "incorrect")


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["skip_row", "cache_by_pointer"])
def test_planted_wrong_kernels_still_fail_with_prefetched_references(cpu_task, planted_dir, kind, monkeypatch):
    r = run(cpu_task, planted_dir / f"{kind}.cpp", monkeypatch, "all", seed=None)
    assert r["status"] == "incorrect", r["message"]
    assert r["timings"]["ref_prefetch_used"] > 0


def test_a_reference_is_used_only_for_the_exact_inputs_it_was_made_from(cpu_task):
    torch = importlib.import_module("torch")
    scenarios = cpu_task.select(ids=TWO[1:])
    pre = RefPrefetch(_Background(importlib.import_module, "torch"), load_reference, cpu_task, scenarios, 99,
                      _draw_seed, 1)
    pre.stop(finish=True)
    assert pre.made == 2 and pre.stopped_by == "all done"
    ref = load_reference(cpu_task)
    sc = scenarios[0]

    def inputs(draw):
        gen = torch.Generator()
        gen.manual_seed(_draw_seed(99, sc.id, draw))
        return ref.make_inputs(sc.params, gen, "cpu")

    same = inputs(0)
    got = pre.take(torch, sc.id, 0, same)
    assert got is not None and torch.equal(got[0], ref.reference(same, sc.params)) and got[1] is None
    other = inputs(1)
    other["q"][0, 0, 0, 0] += 1.0  # one element differs: computed afresh, not taken
    assert pre.take(torch, sc.id, 1, other) is None
    assert (pre.used, pre.missed) == (1, 1)
    assert pre.take(torch, sc.id, 0, same) is None  # taken once only


def test_the_low_precision_rule_judges_the_same_with_given_references():
    # The FlashAttention rule takes two references; given ones must give the verdict computed ones give,
    # for an honest output and for a wrong one.
    torch = importlib.import_module("torch")
    from ks_tui.harness import attention
    from ks_tui.harness.correctness import judge

    p = {"b": 1, "s_q": 33, "s_k": 47, "h_q": 4, "h_kv": 2, "d": 32, "causal": True, "dtype": "bf16"}
    gen = torch.Generator()
    gen.manual_seed(5)
    inputs = attention.make_inputs(p, gen, "cpu")
    tol = {"rule": "lowp_relative", "factor": 2.0, "atol": 1e-5}
    refs = (attention.reference(inputs, p), attention.reference_lowp(inputs, p))
    honest = attention.reference_lowp(inputs, p)
    wrong = honest.clone()
    wrong[0, 7, 1, 3] += 0.5
    for out in (honest, wrong):
        assert judge(out, attention, inputs, p, tol, refs) == judge(out, attention, inputs, p, tol)
    assert judge(honest, attention, inputs, p, tol, refs)["ok"] and not judge(wrong, attention, inputs, p, tol, refs)["ok"]
