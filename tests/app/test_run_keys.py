"""The run keys and the first seconds of a session: keys pressed while the session opens are carried
out once it is open, `r` runs the quick subset on a large task and the full grid on a small one, and a
quick run that passes with a new best offers the full grid. The session open is held by a gate (an
Event the test sets), not by a timed race; the engine, the harness (g++) and git are real."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import yaml

from ks_tui.app import keymap as km
from ks_tui.app.app import KernelSeekApp
from ks_tui.app.connect import SessionOpener
from ks_tui.app.screens.history import HistoryScreen
from ks_tui.config import load_config
from ks_tui.run_plan import DEFAULT, OTHER, QUICK_FIRST_ABOVE, full_grid_offer, plan_for
from tests.app.conftest import screen_text, shown, wait_for
from tests.support.workspace import git


class GatedOpener:
    """The real SessionOpener, held until the test sets `gate`; it subscribes `seen` to the engine
    before the app does, so no event of the session is missed."""

    def __init__(self, opener: SessionOpener):
        self.opener = opener
        self.gate = threading.Event()
        self.seen: list = []

    def __getattr__(self, name):
        return getattr(self.opener, name)

    def __call__(self, session_id):
        if not self.gate.wait(120):
            raise TimeoutError("the test never opened the gate")
        backend = self.opener(session_id)
        backend.engine.subscribe(self.seen.append)
        return backend


def notices(app) -> list[str]:
    told: list[str] = []
    notify = app.notify
    app.notify = lambda message, **kw: (told.append(message), notify(message, **kw))[1]
    return told


def footer(app) -> str:
    return screen_text(app).splitlines()[-1]


def started(seen) -> list:
    return [e for e in seen if e.kind == "harness_started"]


# ---- the plan ---------------------------------------------------------------------------------

def test_a_large_task_runs_the_quick_subset_first_and_a_small_one_the_full_grid():
    large = plan_for(182, 13)  # flash_attn_fwd
    assert large.quick_first and large.is_quick(DEFAULT) and not large.is_quick(OTHER)
    assert large.describe(DEFAULT) == "the quick subset (13 scenarios)"
    assert large.describe(OTHER) == "the full grid (182 scenarios)"
    small = plan_for(20, 4)  # attention_cpu
    assert not small.quick_first and not small.is_quick(DEFAULT) and small.is_quick(OTHER)
    assert not plan_for(QUICK_FIRST_ABOVE, 4).quick_first  # "more than" the threshold
    assert not plan_for(60, 60).quick_first  # a quick subset that is the whole grid is no shortcut


def attempt(n, mode="bench-quick", status="correct", speedup=1.0, author="human", device="cpu", **kw):
    return dict(number=n, mode=mode, status=status, speedup=speedup, author=author, device=device,
                correct="13/13", rollback_of=None, **kw)


def test_the_full_grid_is_offered_after_a_quick_run_that_passes_with_a_new_best():
    first = [attempt(1, speedup=0.34)]
    assert "the first correct quick run" in full_grid_offer(first)
    assert "fastest quick run so far" in full_grid_offer(first + [attempt(2, speedup=0.5)])
    assert full_grid_offer(first + [attempt(2, speedup=0.3)]) is None  # slower: no new best
    assert full_grid_offer(first + [attempt(2, status="incorrect", speedup=0.9)]) is None
    assert full_grid_offer(first + [attempt(2, mode="bench", speedup=0.9)]) is None  # it was the full grid
    assert full_grid_offer(first + [attempt(2, author="agent", speedup=0.9)]) is None  # the agent's own run
    # Quick geomeans compare only on one machine: a slower card's earlier run does not count.
    assert full_grid_offer([attempt(1, speedup=2.0, device="H200"), attempt(2, speedup=0.5, device="H100")])


def test_every_key_has_an_id_and_the_session_keys_are_marked():
    ids = km.binding_ids()
    assert {"run", "run-other", "edit", "history", "ask", "quit"} <= set(ids)
    assert all(k.binding().id == k.id for k in km.ALL_KEYS)
    assert km.NEEDS_SESSION == {"history", "ask", "run", "edit_kernel"}
    assert km.check_keymap({"run": "ctrl+r"}) is None
    assert "unknown key binding id 'runn'" in km.check_keymap({"runn": "x"})


# ---- keys pressed while the session opens -----------------------------------------------------

@pytest.mark.slow
async def test_keys_pressed_before_the_session_opens_are_carried_out_when_it_opens(workspace):
    gated = GatedOpener(SessionOpener(workspace, load_config(workspace), "attention_cpu"))
    app = KernelSeekApp(opener=gated)
    async with app.run_test(size=(120, 36), notifications=True) as pilot:
        told = notices(app)
        await wait_for(pilot, lambda: "opening session…" in shown(app, "#status"), "the opening status")
        assert "idle" not in shown(app, "#status")
        await wait_for(pilot, lambda: "r Run full" in footer(app) and "R Run quick" in footer(app),
                       "the footer naming the full grid on r (attention_cpu: 20 scenarios)")

        await pilot.press("a", *"why so slow", "enter")
        await pilot.press("r", "r", "h")
        assert app.backend is None
        assert told == ["the question goes out once the session is open",
                        "run the full grid (20 scenarios) once the session is open",
                        "run the full grid (20 scenarios): already waiting for the session to open",
                        "the history opens once the session is open"]
        assert not any(m.startswith("running") for m in told)  # no run has started

        gated.gate.set()
        await wait_for(pilot, lambda: started(gated.seen), "the run pressed before the session opened", timeout=120)
        assert [(e.mode, e.quick, e.total) for e in started(gated.seen)] == [("bench", False, 20)]
        assert "running the full grid (20 scenarios): check and bench" in told
        await wait_for(pilot, lambda: isinstance(app.screen, HistoryScreen), "the history pressed before it opened")
        await pilot.press("escape")
        await wait_for(pilot, lambda: any(e.kind == "question" and e.text == "why so slow" for e in gated.seen),
                       "the question typed before the session opened")
        await wait_for(pilot, lambda: "r Run full" in footer(app), "the footer")
        assert "p Pause" not in footer(app)  # human mode: no agent to pause
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, "the app to quit")
    assert len(started(gated.seen)) == 1  # r r queued one run


def wide_task(workspace: Path) -> str:
    """attention_cpu with more than QUICK_FIRST_ABOVE scenarios and a quick subset of four tiny ones, committed."""
    import shutil

    src, dst = workspace / "kernels" / "attention_cpu", workspace / "kernels" / "attention_cpu_wide"
    shutil.copytree(src, dst)
    doc = yaml.safe_load((dst / "task.yaml").read_text())
    doc["name"] = "attention_cpu_wide"
    shapes = doc["scenarios"]["grid"]["shape"]
    shapes += [{"b": 1, "s_q": 8 + i, "s_k": 16 + i, "h_q": 2, "h_kv": 1, "d": 16} for i in range(12)]
    doc["quick"] = [f"d16-h2-1-q{8 + i}-k{16 + i}-b1" for i in range(4)]  # the smallest: a fast test
    (dst / "task.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    git(workspace, "add", "kernels/attention_cpu_wide")
    git(workspace, "commit", "-qm", "a task with a large grid")
    return "attention_cpu_wide"


@pytest.mark.slow
async def test_on_a_large_task_r_runs_the_quick_subset_then_offers_the_full_grid(workspace):
    task = wide_task(workspace)
    opener = GatedOpener(SessionOpener(workspace, load_config(workspace), task))
    opener.gate.set()
    app = KernelSeekApp(opener=opener)
    async with app.run_test(size=(120, 36), notifications=True) as pilot:
        told = notices(app)
        await wait_for(pilot, lambda: app.agent_state == "human", "human mode")
        assert app.run_plan.scenarios == 44 and app.run_plan.quick == 4
        await wait_for(pilot, lambda: "r Run quick" in footer(app) and "R Run full" in footer(app),
                       "the footer naming the quick run on r and the full grid on R")
        kernel = Path(app.backend.kernel_path())
        kernel.write_text(kernel.read_text() + "\nstatic int touched_by_hand = 1;\n")

        await pilot.press("r")
        await wait_for(pilot, lambda: app.main_screen.attempts, "the quick run's attempt", timeout=240)
        assert [(e.quick, e.total) for e in started(opener.seen)] == [(True, 4)]
        first = app.main_screen.attempts[-1]
        assert (first["mode"], first["status"]) == ("bench-quick", "correct")
        await wait_for(pilot, lambda: "R Run full ◀" in footer(app), "the footer's offer of the full grid")
        offer = next(m for m in told if "correct on the quick subset" in m)
        assert offer.endswith("R runs the full grid (44 scenarios)")
        assert "R runs the full grid" in shown(app, "#conversation")

        await pilot.press("R")
        await wait_for(pilot, lambda: len(started(opener.seen)) == 2, "the full grid's run")
        assert (started(opener.seen)[1].quick, started(opener.seen)[1].total) == (False, 44)
        await wait_for(pilot, lambda: "R Run full" in footer(app) and "◀" not in footer(app), "the offer taken")
        await pilot.press("q")  # stops the run: the test needs only its start
        await wait_for(pilot, lambda: not app.is_running, "the app to quit")


async def test_a_keymap_moves_a_key(base_env):
    app = KernelSeekApp(keymap={"run": "f5"})  # no session: the key's move is all this looks at
    async with app.run_test(size=(120, 36), notifications=True) as pilot:
        told = notices(app)
        await wait_for(pilot, lambda: "f5 run full" in footer(app).lower(), "f5 in the footer")
        await pilot.press("r")  # no longer a run key
        await pilot.press("f5")
        assert told == ["no session is open"]
        await pilot.press("q")
