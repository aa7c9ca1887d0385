"""The main screen as a view over engine events: each panel shows what the events carry.

The events are fed straight into the app (as the engine's thread would) with recorded real
results: the H200 run of the flash_attn_fwd seed and a g++ compile error.
"""

from __future__ import annotations

import json

from ks_tui import events as ev
from ks_tui.app.app import KernelSeekApp
from tests.app.conftest import DATA, shown, wait_for


def load(name: str) -> dict:
    return json.loads((DATA / name).read_text())


async def test_compile_panel_shows_resources_and_errors_first():
    app = KernelSeekApp()
    async with app.run_test(size=(120, 36)) as pilot:
        gpu = load("h200_seed_bench_first6.json")
        app.post_engine_event(ev.AttemptRecorded({"number": 1, "status": "correct", "correct": gpu["correct"],
                                                  "speedup": None, "best": False, "author": "agent"}, gpu))
        await wait_for(pilot, lambda: "HMMA 832" in shown(app, "#compile"), "the SASS summary")
        report = shown(app, "#compile")
        assert "flash_fwd_kernel<bf16, 128>" in report and "178" in report  # registers per kernel
        assert "LDL 0" in report and "STL 0" in report
        assert app.main_screen.query_one("#bench-table").row_count == 6
        assert "correct 6/6" in shown(app, "#bench-headline")

        broken = load("compile_error.json")
        app.post_engine_event(ev.AttemptRecorded({"number": 2, "status": "compile_error", "correct": "",
                                                  "speedup": None, "best": False, "author": "human"}, broken))
        await wait_for(pilot, lambda: "compile failed" in shown(app, "#compile"), "the failed build")
        report = shown(app, "#compile")
        error = report.index("kernel.cpp:14:18")
        assert error < report.index("$ g++")  # the error comes before everything else
        assert "undefined_tile_size" in report[error:]
        assert app.main_screen.query_one("#bench-table").row_count == 0


async def test_compile_panel_shows_serialised_wgmma_in_red():
    # The seed's recorded build with the note ptxas 13 prints (as "info") for a serialised wgmma pipeline added
    # to its first kernel, as the harness now records it (tests/harness/test_build.py makes one for real).
    gpu = load("h200_seed_bench_first6.json")
    first = gpu["compile"]["kernels"][0]
    first["perf_warnings"] = ["C7511: wgmma.mma_async instructions are serialized due to insufficient register "
                              "resources for the wgmma pipeline"]
    app = KernelSeekApp()
    async with app.run_test(size=(120, 40)) as pilot:
        app.post_engine_event(ev.AttemptRecorded({"number": 1, "status": "correct", "correct": gpu["correct"],
                                                  "speedup": None, "best": False, "author": "agent"}, gpu))
        await wait_for(pilot, lambda: "serialized" in shown(app, "#compile"), "the ptxas note")
        report = shown(app, "#compile")
        assert "C7511" in report and report.count("serialized") == 1  # only the kernel that has it


async def test_progress_shows_while_the_harness_runs_and_text_streams_whole():
    app = KernelSeekApp()
    async with app.run_test(size=(120, 36)) as pilot:
        bench = app.main_screen.query_one("#bench")
        app.post_engine_event(ev.HarnessStarted("bench", False, 20))
        for done in range(1, 8):
            app.post_engine_event(ev.HarnessProgress(done, 20, f"scenario-{done}", "bench"))
        await wait_for(pilot, lambda: "bench 7/20 scenario-7" in shown(app, "#bench-progress-label"),
                       "the latest progress")
        assert bench.has_class("-running") and "bench 7/20" in shown(app, "#status")

        words = [f"word{i} " for i in range(400)]
        for w in words:
            app.post_engine_event(ev.TextDelta(w))
        app.post_engine_event(ev.AssistantText("".join(words)))
        await wait_for(pilot, lambda: "word399" in shown(app, "#conversation"), "the whole streamed text")
        assert shown(app, "#conversation").count("word0 ") == 1  # one entry, not one per delta

        app.post_engine_event(ev.AttemptRecorded({"number": 1, "status": "correct", "correct": "4/4",
                                                  "speedup": 1.25, "best": True, "author": "agent"},
                                                 load("bench_kernel_a.json")))
        await wait_for(pilot, lambda: not bench.has_class("-running"), "the progress bar to go")
        assert "best 1.250x (4/4)" in shown(app, "#status")


async def test_a_run_over_a_cluster_shows_each_workers_progress():
    app = KernelSeekApp()
    async with app.run_test(size=(120, 36)) as pilot:
        app.post_engine_event(ev.HarnessStarted("bench", False, 20))
        app.post_engine_event(ev.HarnessProgress(3, 10, "a", "check", worker="tcp://127.0.0.1:4101"))
        app.post_engine_event(ev.HarnessProgress(6, 10, "b", "bench", worker="tcp://127.0.0.1:4102"))
        await wait_for(pilot, lambda: "127.0.0.1:4102 bench 6/10" in shown(app, "#bench-progress-label"),
                       "the second worker's progress")
        label = shown(app, "#bench-progress-label")
        assert "127.0.0.1:4101 check 3/10" in label  # the first worker's line stays beside it
        bar = app.main_screen.query_one("#bench-progress")
        assert bar.total == 20 and bar.progress == 9  # the bar counts every worker's scenarios


async def test_the_status_bar_shows_the_share_of_the_context_window_and_compaction_says_so():
    app = KernelSeekApp()
    async with app.run_test(size=(160, 36)) as pilot:
        assert "ctx" not in shown(app, "#status")  # nothing measured yet
        app.post_engine_event(ev.Usage(1200, 300, 60_000, 2_000, 0.1, 0.1, 63_500, turn=4,
                                       context_tokens=63_200, context_estimate=80_000, context_window=200_000))
        await wait_for(pilot, lambda: "ctx 32%" in shown(app, "#status"), "the window's share")
        app.post_engine_event(ev.ContextCompacted([0, 1], "threshold", 161_000, 70_000, 200_000, 23))
        await wait_for(pilot, lambda: "ctx 35%" in shown(app, "#status"), "the share after compaction")
        assert "older turns compacted (23 items cleared), about 161,000 -> 70,000 of 200,000" in \
            shown(app, "#conversation")


async def test_the_best_mark_follows_the_store_when_a_run_on_another_device_moves_it():
    """Back on the H200 after an H100 run, the store marks the H200's fastest (#1) best, not the new attempt or the
    H100's (#2): the screen takes the event's `best`, where it used to assume only a new attempt could take the mark."""
    result = {"status": "correct", "correct": "2/2", "scenarios": []}
    rows = [({"number": 1, "speedup": 1.30, "device": "NVIDIA H200"}, 1),
            ({"number": 2, "speedup": 1.10, "device": "NVIDIA H100 80GB HBM3"}, 2),
            ({"number": 3, "speedup": 1.20, "device": "NVIDIA H200"}, 1)]
    app = KernelSeekApp()
    async with app.run_test(size=(120, 36)) as pilot:
        for attempt, best in rows:
            attempt = dict(attempt, status="correct", correct="2/2", best=attempt["number"] == best, author="agent")
            app.post_engine_event(ev.AttemptRecorded(attempt, result, best=best))
        await wait_for(pilot, lambda: len(app.main_screen.attempts) == 3, "three attempts")
        assert [a["best"] for a in app.main_screen.attempts] == [True, False, False]
        await wait_for(pilot, lambda: "best 1.300x" in shown(app, "#status"), "the H200's best in the status bar")
