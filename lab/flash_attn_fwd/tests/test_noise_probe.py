"""device/noise_probe.py: its schedules and summary on made-up samples, and its driver end to end on the CPU task."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from lab.flash_attn_fwd.device import noise_probe as probe

REPO = Path(__file__).resolve().parents[3]
NAMES = ["", "fa3", "sdpa_cudnn"]


def per_block_counts(blocks):
    """{function: [calls that count, per block it is in]}."""
    got: dict[str, list[int]] = {}
    for b in blocks:
        for name, n in Counter(name for name, _, _ in probe.counted(b)).items():
            got.setdefault(name, []).append(n)
    return got


def test_variants_make_the_same_calls():
    reps = {"": 37, "fa3": 5, "sdpa_cudnn": 100}
    made = {v: probe.plan(v, NAMES, reps, 4) for v in probe.VARIANTS}
    for v, blocks in made.items():
        for b in blocks:  # counted() needs samples: one per planned call
            b["ms"] = [1.0] * (b["n"] + b["lead"])
        total = {name: sum(n) for name, n in per_block_counts(blocks).items()}
        assert total == reps, v
    assert per_block_counts(made["V0"]) == per_block_counts(made["V3"]) == per_block_counts(made["V1"])
    assert per_block_counts(made["V0"])["fa3"] == [2, 1, 1, 1]
    assert all(b["lead"] == 1 for b in made["V1"]) and not any(b["lead"] for b in made["V0"] + made["V3"])
    assert len(made["V0"]) == 12 and len(made["V3"]) == 4
    assert max(per_block_counts(made["V2"])[""]) == 3  # 37 calls over 16 rounds
    # V0 rotates which function opens a round; V3 alternates call by call in the same rotated order
    assert [b["f"] for b in made["V0"][:4]] == ["", "fa3", "sdpa_cudnn", "fa3"]
    assert made["V3"][1]["f"][:5] == ["fa3", "sdpa_cudnn", "", "sdpa_cudnn", ""]  # fa3: 1 call in this round


def test_variant_order_rotates():
    orders = [probe.variant_order(r) for r in range(4)]
    assert orders[0] == ["V0", "V1", "V2", "V3"] and orders[1] == ["V1", "V2", "V3", "V0"]
    assert all(sorted(o) == list(probe.VARIANTS) for o in orders)
    assert {o[0] for o in orders} == set(probe.VARIANTS)


def make_run(kernel_ms: float, lib_ms: dict, first_slow: float = 1.0, lead: int = 0, mhz=(1980, 1980)) -> dict:
    """One variant's run: two blocks per function of 4 calls (plus a lead), the first call `first_slow` times slower."""
    blocks = []
    for name, ms in {"": kernel_ms, **lib_ms}.items():
        for _ in range(2):
            calls = [ms * first_slow] + [ms] * (3 + lead)
            blocks.append({"f": name, "lead": lead, "ms": calls, "mhz": mhz[0] if name == "" else mhz[1],
                           "wall_ms": sum(calls) + 0.1})
    med = probe.medians_of(blocks)
    return {**probe.speedups(med), "medians_ms": med, "blocks": blocks,
            "gpu_s": sum(b["wall_ms"] for b in blocks) / 1e3}


def test_summary_on_made_up_samples():
    scenarios = []
    for i, jitter in enumerate([0.0, 0.01, 0.05]):  # the kernel's time moves 0%, 1%, 5% from repeat to repeat
        repeats = []
        for r in range(3):
            k = 1.0 * (1 + jitter * (r - 1))
            repeats.append({"variants": {
                "V0": make_run(k, {"fa3": 1.1, "sdpa_cudnn": 1.2}, first_slow=1.2, mhz=(1900, 1980)),
                "V1": make_run(k, {"fa3": 1.1, "sdpa_cudnn": 1.2}, first_slow=1.2, lead=1),
                "V2": make_run(1.0, {"fa3": 1.1, "sdpa_cudnn": 1.2}),
                "V3": make_run(1.0, {"sdpa_cudnn": 1.2}),  # fa3 missing: no vs-fa3 spread
            }})
        scenarios.append({"id": f"s{i}", "repeats": repeats})
    s = probe.summarize(scenarios)
    v0, v1, v2, v3 = (s["variants"][v] for v in probe.VARIANTS)
    assert v0["speedup_spread_pct"]["n"] == 3
    spreads = sorted(s["per_scenario"][f"s{i}"]["V0"]["speedup"] for i in range(3))
    assert spreads[0] == pytest.approx(0.0, abs=1e-9) and spreads[1] == pytest.approx(2.0, rel=0.01)
    assert spreads[2] == pytest.approx(10.0, rel=0.01)
    assert v0["speedup_spread_pct"]["over_3pct"] == 1 and v0["worst"] == "s2"
    assert v0["speedup_spread_pct"]["max"] == pytest.approx(spreads[2], rel=1e-3)
    assert v2["speedup_spread_pct"]["max"] == pytest.approx(0.0, abs=1e-9) and v2["speedup_spread_pct"]["over_3pct"] == 0
    assert v3["vs_fa3_spread_pct"]["n"] == 0 and v2["vs_fa3_spread_pct"]["n"] == 3
    # H1: the slow first call shows; V1's lead takes it and the calls that count are even
    assert v0["first_call_ratio"]["median"] == pytest.approx(1.2)
    assert v1["first_call_ratio"]["median"] == pytest.approx(1.2)
    assert v1["first_counted_ratio"]["median"] == pytest.approx(1.0)
    assert v0["clock_gap_pct_median"] == pytest.approx(100 * (1 - 1900 / 1980))
    assert v1["calls"] - v0["calls"] == 3 * 3 * 3 * 2  # one lead per block
    assert "V3" in probe.table(s)


@pytest.mark.skipif(shutil.which("g++") is None, reason="the CPU task's kernel needs g++")
def test_end_to_end_on_the_cpu_task(tmp_path):
    """The probe drives the harness's Runner on the CPU task (a wall-clock timer in place of CUDA events)."""
    pytest.importorskip("torch")
    out = tmp_path / "probe.json"
    ids = ["d24-h2-1-q31-k45-b4", "d16-h4-4-q200-k50-b1-causal"]
    env = {**os.environ, "KS_CACHE_DIR": str(tmp_path / "cache")}
    cmd = [sys.executable, str(REPO / "lab/flash_attn_fwd/device/noise_probe.py"), "--task", "attention_cpu",
           "--source", str(REPO / "kernels/attention_cpu/kernel.cpp"), "--scenarios", ",".join(ids),
           "--repeats", "2", "--seconds", "120", "--out", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "V3" in done.stdout.splitlines()[-1]
    rec = json.loads(out.read_text())
    assert [s["id"] for s in rec["scenarios"]] == ids
    assert rec["meta"]["status"] == "correct" and not rec["meta"]["stopped"]
    for sc in rec["scenarios"]:
        assert len(sc["repeats"]) == 2 and sc["family"]
        for rep in sc["repeats"]:
            assert sorted(rep["variants"]) == list(probe.VARIANTS)
            calls = {v: sum(len(probe.counted(b)) for b in run["blocks"]) for v, run in rep["variants"].items()}
            assert calls["V0"] == calls["V1"] == calls["V2"] == calls["V3"] == sum(rep["reps"].values())
            for run in rep["variants"].values():
                assert run["speedup"] > 0 and run["best"] == "torch_sdpa" and run["gpu_s"] > 0
    assert rec["summary"]["variants"]["V0"]["speedup_spread_pct"]["n"] == 2

    # Too few seconds: it says so and fails, with the file written
    cmd[cmd.index("--seconds") + 1] = "1"
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 1 and "no scenario got 2 repeats" in done.stderr
    assert json.loads(out.read_text())["meta"]["stopped"] == "--seconds ran out"


def test_a_library_failing_midway_leaves_and_the_kernel_failing_stops(tmp_path):
    """Probe.scenario with the CPU timer on plain callables: a library raising on its 30th call is dropped (as the
    bench skips it), the others go on; the kernel raising ends the scenario with its error."""
    from ks_tui.task import Timing

    timing = Timing(warmup=2, min_reps=5, max_reps=12, budget_s=1.0, rounds=4)
    count = {"n": 0}

    def flaky():
        count["n"] += 1
        if count["n"] >= 30:
            raise RuntimeError("out of memory")

    p = probe.Probe(repeats=3, deadline=float("inf"), out=tmp_path / "p.json")
    timed, errors = p.scenario("s", {"": [lambda: None], "lib": [flaky], "other": [lambda: None]}, timing, 4,
                               probe.cpu_block)
    assert list(errors) == ["lib"] and "out of memory" in p.scenarios[0]["errors"]["lib"]
    assert set(timed) == {"", "other"} and timed[""]["reps"] > 0
    last = p.scenarios[0]["repeats"][-1]
    assert "lib" not in last["reps"] and all(r["best"] == "other" for r in last["variants"].values())
    assert json.loads((tmp_path / "p.json").read_text())["scenarios"][0]["id"] == "s"

    def broken():
        raise ValueError("illegal address")

    with pytest.raises(ValueError, match="illegal address"):
        p.scenario("t", {"": [broken], "other": [lambda: None]}, timing, 4, probe.cpu_block)
