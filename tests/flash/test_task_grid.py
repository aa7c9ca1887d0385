"""The flash_attn_fwd task's scenario grid, quick subset and FLOP formula (no GPU needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ks_tui.task import load_task

REPO = Path(__file__).resolve().parents[2]
LENGTHS = [512, 1024, 2048, 4096, 8192, 16384, 32768]

# The 13 head configurations of the issue: (d, h_q, h_kv, dtype, kind).
HEAD_CONFIGS = {
    (64, 32, 32, "bf16", "full"), (64, 32, 8, "bf16", "full"), (96, 16, 16, "bf16", "full"),
    (128, 16, 16, "bf16", "full"), (128, 32, 8, "bf16", "full"), (128, 64, 8, "bf16", "full"),
    (128, 32, 1, "bf16", "full"), (128, 16, 16, "bf16", "prefill"),
    (128, 16, 16, "bf16", "ragged"), (128, 16, 16, "fp16", "full"),
    (256, 8, 8, "bf16", "full"), (256, 16, 4, "bf16", "full"), (256, 8, 8, "bf16", "ragged"),
}


@pytest.fixture(scope="module")
def task():
    return load_task("flash_attn_fwd", REPO)


def head_config(p: dict) -> tuple:
    """Recover a scenario's head configuration from its shape alone (not from the tag)."""
    if p["s_q"] * 4 == p["s_k"]:
        kind = "prefill"
    elif p["s_k"] == p["S"] - 17:
        kind = "ragged"
    else:
        kind = "full"
    return (p["d"], p["h_q"], p["h_kv"], p["dtype"], kind)


def test_grid_has_182_scenarios_with_unique_ids(task):
    ids = [s.id for s in task.scenarios]
    assert len(ids) == 182
    assert len(set(ids)) == 182


def test_grid_is_masks_by_lengths_by_head_configs(task):
    combos = {(head_config(s.params), s.params["S"], s.params["causal"]) for s in task.scenarios}
    assert combos == {(h, S, c) for h in HEAD_CONFIGS for S in LENGTHS for c in (False, True)}


def test_every_scenario_holds_32k_tokens_and_the_standard_scale(task):
    for s in task.scenarios:
        p = s.params
        assert p["b"] == max(1, 32768 // p["S"])
        assert p["scale"] == pytest.approx(p["d"] ** -0.5)
        assert p["s_q"] <= p["s_k"]
        assert p["h_q"] % p["h_kv"] == 0


@pytest.mark.parametrize("sid, expect", [
    ("d128-h32-8-s4096-causal", dict(d=128, h_q=32, h_kv=8, s_q=4096, s_k=4096, b=8, causal=True)),
    ("d64-h32-32-s512", dict(d=64, h_q=32, h_kv=32, s_q=512, s_k=512, b=64, causal=False)),
    ("d128-h16-16-q1024-k4096-causal", dict(s_q=1024, s_k=4096, b=8, causal=True)),
    ("d128-h16-16-s4079", dict(s_q=4079, s_k=4079, b=8, dtype="bf16")),
    ("d256-h8-8-s32751-causal", dict(d=256, s_q=32751, s_k=32751, b=1, causal=True)),
    ("d128-h16-16-s16384-fp16", dict(dtype="fp16", s_q=16384, b=2)),
    ("d128-h32-1-s32768", dict(h_q=32, h_kv=1, b=1)),
])
def test_ids_are_readable_and_name_the_shape(task, sid, expect):
    p = task.scenario(sid).params
    assert {k: p[k] for k in expect} == expect


def test_quick_subset_covers_every_head_config_and_both_masks(task):
    quick = task.select(quick=True)
    assert 10 <= len(quick) <= 16
    assert {head_config(s.params) for s in quick} == HEAD_CONFIGS
    assert {s.params["causal"] for s in quick} == {False, True}


@pytest.mark.parametrize("sid, flops", [
    # full: 4 * b * h_q * s_q * s_k * d
    ("d128-h32-8-s4096", 4 * 8 * 32 * 4096 * 4096 * 128),
    ("d64-h32-32-s512", 4 * 64 * 32 * 512 * 512 * 64),
    # causal, square: half the score matrix
    ("d128-h32-8-s4096-causal", 2 * 8 * 32 * 4096 * 4096 * 128),
    ("d256-h8-8-s32751-causal", 2 * 1 * 8 * 32751 * 32751 * 256),
    # causal prefill, s_q = 1024 against s_k = 4096: each query sees 3072 + its row,
    # on average (3072 + 4096) / 2 = 3584 keys
    ("d128-h16-16-q1024-k4096-causal", 4 * 8 * 16 * 1024 * 3584 * 128),
    ("d128-h16-16-q1024-k4096", 4 * 8 * 16 * 1024 * 4096 * 128),
])
def test_flop_formula_matches_hand_computed_values(task, sid, flops):
    assert task.flops_of(task.scenario(sid)) == pytest.approx(flops, rel=1e-12)
