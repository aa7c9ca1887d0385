"""The agent's run_harness with `candidates`: two files the agent wrote, measured side by side on
the workers of a running scheduler (KS_CLUSTER), each recorded as its own attempt."""

from __future__ import annotations

import pytest

from ks_tui import events as ev
from ks_tui.config import load_config
from ks_tui.engine import Session
from tests.harness import planted
from tests.support.fake_messages_api import reply, text, tool_use

pytestmark = pytest.mark.timeout(240)


@pytest.mark.slow
def test_candidates_run_side_by_side_and_each_becomes_an_attempt(workspace, fake_api, external, base_env):
    base_env.setenv("KS_CLUSTER", external.address)
    kernel = (workspace / "kernels" / "attention_cpu" / "kernel.cpp").read_text()
    good = kernel + "\n// candidate a: the seed kernel, renamed\n"
    api = fake_api([reply(tool_use("write_file", {"path": "candidates/a.cpp", "content": good}),
                          tool_use("write_file", {"path": "candidates/b.cpp", "content": planted.source("zeros")})),
                    reply(tool_use("run_harness", {"mode": "check", "quick": True,
                                                   "candidates": ["candidates/a.cpp", "candidates/b.cpp"]})),
                    reply(text("Measured both."))])
    session = Session.create(workspace, "attention_cpu", load_config(workspace).with_overrides(max_turns=3),
                             autonomous=True, human_present=False)
    seen: list[ev.Event] = []
    session.subscribe(seen.append)
    session.run_forever()

    assert not api.rejected
    out = api.requests[2]["messages"][-1]["content"][0]["content"]
    assert "candidates/a.cpp on tcp://" in out and "candidates/b.cpp on tcp://" in out
    assert "the kernel file now holds the best candidate: a.cpp" in out
    recorded = [e for e in seen if isinstance(e, ev.AttemptRecorded)]
    # the failing candidate is recorded first, the best last: the kernel file ends holding it
    assert [e.attempt["status"] for e in recorded] == ["incorrect", "correct"]
    assert {e.result["worker"] for e in recorded} == set(external.workers)  # one per worker
    assert session.files.kernel.read_text() == good
    progress = [e for e in seen if isinstance(e, ev.HarnessProgress)]
    assert {e.worker for e in progress} >= set(external.workers)  # the screen hears each worker


def test_the_agent_may_write_candidate_files_and_nothing_else_new(tmp_path):
    from ks_tui.agent.files import TaskFiles, ToolRefused

    (tmp_path / "kernel.cpp").write_text("// seed\n")
    files = TaskFiles(tmp_path, tmp_path / "kernel.cpp", [tmp_path / "reference.py"])
    assert files.write("candidates/a.cpp", "// a\n").startswith("wrote candidates/a.cpp")
    assert (tmp_path / "candidates" / "a.cpp").read_text() == "// a\n"
    for path in ("candidates/a.py", "candidates/deeper/a.cpp", "other/a.cpp", "reference.py"):
        with pytest.raises(ToolRefused):
            files.write(path, "x")


def test_a_run_across_device_kinds_reports_the_geomean_per_kind():
    from ks_tui.cluster.merge import geomean_by_device

    result = {"workers": [{"address": "a", "device": "H100"}, {"address": "b", "device": "H200"},
                          {"address": "c", "device": "H100"}],
              "scenarios": [{"worker": "a", "speedup": 2.0}, {"worker": "c", "speedup": 0.5},
                            {"worker": "b", "speedup": 1.5}]}
    assert geomean_by_device(result) == {"H100": 1.0, "H200": 1.5}
    result["workers"][1]["device"] = "H100"
    assert geomean_by_device(result) is None  # one kind: the headline geomean says it all


@pytest.mark.slow
def test_with_a_cluster_configured_the_agents_run_is_sharded_over_it(workspace, fake_api, external, base_env):
    base_env.setenv("KS_CLUSTER", external.address)
    old = "std::vector<float> acc(d);"
    api = fake_api([reply(tool_use("edit_file", {"path": "kernel.cpp", "old_string": old,
                                                 "new_string": old + "  // one output row"})),
                    reply(tool_use("run_harness", {"mode": "check", "quick": True})),
                    reply(text("Checked."))])
    session = Session.create(workspace, "attention_cpu", load_config(workspace).with_overrides(max_turns=3),
                             autonomous=True, human_present=False)
    seen: list[ev.Event] = []
    session.subscribe(seen.append)
    session.run_forever()

    assert not api.rejected
    [recorded] = [e for e in seen if isinstance(e, ev.AttemptRecorded)]
    assert recorded.attempt["status"] == "correct" and recorded.result["correct"] == "4/4"
    assert sorted(w["address"] for w in recorded.result["workers"]) == sorted(external.workers)
    assert {s["worker"] for s in recorded.result["scenarios"]} == set(external.workers)
    assert "status: correct, correct 4/4" in api.requests[2]["messages"][-1]["content"][0]["content"]
