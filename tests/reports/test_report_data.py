"""reports/data.py and html.py without a browser: the scenario grid derived from the real tasks' scenarios, the
families table against each baseline, the best-so-far rule, and escaping in the rendered page."""

from __future__ import annotations

import math
import statistics
from html.parser import HTMLParser
from pathlib import Path

from ks_tui.reports.data import FA3, FASTEST, attempt_points, family_table, page_data, scenario_grid
from ks_tui.reports.html import render
from ks_tui.task import load_task

ROOT = Path(__file__).resolve().parents[2]


def results_for(task_name: str, baselines: dict[str, float], skipped: dict[str, str] | None = None) -> list[dict]:
    """Scenario results in the harness's shape for every scenario of a bundled task: the kernel's time from the
    task's FLOP count at a rate that grows with the key length, each baseline a fixed factor of that."""
    task = load_task(task_name, ROOT)
    out = []
    for i, sc in enumerate(task.scenarios):
        t = task.flops_of(sc) / 1e9 / (50 + sc.params.get("s_k", 1) % 97)
        times = {name: t * f * (1 + (i % 5) / 50) for name, f in baselines.items()}
        fastest = min(times, key=times.get)
        out.append({"id": sc.id, "shape": dict(sc.params), "ok": True, "time_ms": t, "tflops": 1.0,
                    "baseline": {"name": fastest, "time_ms": times[fastest]}, "baselines": times,
                    "skipped_baselines": dict(skipped or {}), "speedup": times[fastest] / t})
    return out


def test_the_flash_grid_makes_families_of_head_configs_with_lengths_as_columns():
    scenarios = results_for("flash_attn_fwd", {"sdpa_cudnn": 1.1, "sdpa_flash": 2.0})
    g = scenario_grid(scenarios)
    assert g["column"] == "S" and g["mask"] == "causal" and g["masks"] == [False, True]
    assert g["columns"] == [512, 1024, 2048, 4096, 8192, 16384, 32768]
    # b follows S (32k tokens a scenario): not a family of its own; scale follows d: not named
    assert "b" not in g["family_keys"]
    assert len(g["families"]) == 13
    labels = [f["label"] for f in g["families"]]
    assert not any("scale" in x or "b=" in x for x in labels)
    assert "d=128 h_q=16 h_kv=16 bf16 prefill" in labels and "d=256 h_q=8 h_kv=8 bf16 ragged" in labels
    cells = {(c["family"], c["column"], c["mask"]) for c in g["cells"]}
    assert len(cells) == len(scenarios) == 182


def test_the_cpu_grid_keeps_the_batch_where_it_does_not_follow_the_length():
    scenarios = results_for("attention_cpu", {"torch_sdpa": 0.5})
    g = scenario_grid(scenarios)
    assert g["column"] == "s_k" and g["masks"] == [False, True]
    assert "b" in g["family_keys"] and len(g["families"]) == 10
    named = [tuple(f["key"][k] for k in g["label_keys"]) for f in g["families"]]
    assert "d" in g["label_keys"] and named == sorted(named)  # rows in the order of what their labels say


def test_a_task_with_no_length_and_no_mask_gets_one_panel():
    scenarios = [{"id": f"n{n}", "shape": {"n": n}, "ok": n != 16, "time_ms": 1.0, "speedup": 1.0 + n / 100,
                  "baselines": {"ref": 1.0 + n / 100}} for n in (8, 16, 32)]
    g = scenario_grid(scenarios)
    assert g["column"] is None and g["mask"] is None and g["masks"] == [None]
    assert [f["label"] for f in g["families"]] == ["n=8", "n=16", "n=32"]
    failed = next(c for c in g["cells"] if c["id"] == "n16")
    assert failed["speedup"] is None and not failed["ok"]
    page = render(page_data({"id": "s1", "task": "toy"}, [], _attempts([1.1]), {"scenarios": scenarios}, []))
    assert 'id="heat-speedup"' in page and 'id="heat-sol"' not in page


def test_the_families_table_puts_fa3_first_and_takes_geomeans_per_baseline():
    scenarios = results_for("attention_cpu", {"fa3": 0.9, "torch_sdpa": 1.3})
    g = scenario_grid(scenarios)
    t = family_table(scenarios, g, {"geomean_speedup": 0.95})
    assert t["columns"] == [FA3, FASTEST, "torch_sdpa"] and not t["fa3_missing"]
    row = t["rows"][0]
    members = [s for s, c in zip(scenarios, g["cells"]) if (c["family"], c["mask"]) == (row["family"], False)]
    assert row["mask"] == "unmasked" and row["n"] == len(members) == 1
    expect = statistics.geometric_mean(s["baselines"]["fa3"] / s["time_ms"] for s in members)
    assert math.isclose(row["by"][FA3], expect)
    every = statistics.geometric_mean(s["baselines"]["torch_sdpa"] / s["time_ms"] for s in scenarios)
    assert math.isclose(t["overall"]["torch_sdpa"], every)
    assert t["overall"][FASTEST] == 0.95  # the harness's own geomean where the result has one


def test_fa3_listed_but_not_run_says_the_speedups_are_against_weaker_baselines():
    why = "flash_attn_interface (FA3) not importable (ModuleNotFoundError)"
    scenarios = results_for("attention_cpu", {"torch_sdpa": 1.3}, skipped={FA3: why})
    result = {"scenarios": scenarios, "geomean_speedup": 1.2}
    data = page_data({"id": "s1", "task": "attention_cpu"}, [], _attempts([1.2]), result, [])
    assert data["families"]["fa3_missing"] and FA3 not in data["families"]["columns"]
    page = render(data)
    assert "FA3 did not run" in page and "against weaker baselines" in page


def test_best_so_far_follows_the_attempt_logs_rule():
    attempts = [{"number": 1, "status": "correct", "speedup": 1.5, "mode": "bench-quick", "device": "H200"},
                {"number": 2, "status": "correct", "speedup": 1.1, "mode": "bench", "device": "H200"},
                {"number": 3, "status": "compile_error", "speedup": None, "mode": "bench", "device": "H200"},
                {"number": 4, "status": "correct", "speedup": 1.2, "mode": "bench", "device": "H200"},
                {"number": 5, "status": "correct", "speedup": 1.15, "mode": "bench", "device": "H100"}]
    # a quick run leads only while no whole-grid run exists; a move to another device starts over
    assert [p["best_so_far"] for p in attempt_points(attempts)] == [1.5, 1.1, 1.1, 1.2, 1.15]


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)


def test_text_from_attempts_questions_and_results_is_escaped():
    evil = '<img src=x onerror="alert(1)"></script><script>alert(2)</script>'
    attempts = _attempts([1.0, None, 1.3])
    attempts[1]["summary"] = evil
    attempts[2]["remarks"] = [{"text": evil}]
    scenarios = [{"id": evil, "shape": {"kind": evil, "s_k": 64, "causal": False}, "ok": True, "time_ms": 1.0,
                  "speedup": 1.3, "baselines": {evil: 1.3}, "baseline": {"name": evil, "time_ms": 1.3},
                  "speed_of_light": {"bound": evil, "fraction": 0.5}}]
    efficacy = [{"kind": "asked", "ask": "s1:a", "session": "s1", "question": evil, "category": evil, "text": evil,
                 "after_attempt": 1, "chosen_by": "human", "best_before": 1.0},
                {"kind": "outcome", "ask": "s1:a", "session": "s1", "question": evil, "best_before": 1.0,
                 "best_after": 1.3, "attempts": 2}]
    page = render(page_data({"id": "s1", "task": evil, "branch": evil}, [], attempts, {"scenarios": scenarios},
                            efficacy))
    parser = _Tags()
    parser.feed(page)
    assert "img" not in parser.tags
    assert parser.tags.count("script") == 1 + 3  # plotly, then one per figure (timeline, speedup, SoL)
    assert "<img" not in page and "alert(2)</script>" not in page
    assert page.count("&lt;img src=x") >= 3  # the efficacy table, the families table, the header


def _attempts(speedups: list[float | None]) -> list[dict]:
    return [{"number": i + 1, "status": "correct" if s is not None else "compile_error", "speedup": s,
             "mode": "bench", "device": "cpu", "summary": f"attempt {i + 1}",
             "best": s == max(x for x in speedups if x)}
            for i, s in enumerate(speedups)]


def test_the_families_table_takes_the_paired_ratio_per_baseline_where_there_is_one():
    scenarios = results_for("attention_cpu", {"fa3": 0.9, "torch_sdpa": 1.3})
    for s in scenarios[::2]:  # half of them took turns, each paired ratio 1% off the medians' ratio
        s["timing"] = {"paired": {n: bt / s["time_ms"] * 1.01 for n, bt in s["baselines"].items()}}
    t = family_table(scenarios, scenario_grid(scenarios), {})
    want = statistics.geometric_mean((s.get("timing") or {}).get("paired", {}).get("fa3") or
                                     s["baselines"]["fa3"] / s["time_ms"] for s in scenarios)
    assert math.isclose(t["overall"][FA3], want)
