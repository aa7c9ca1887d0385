"""Ranking: applicable only, no repeats inside a category while others remain, categories take
turns, efficacy shifts the order, and recently asked questions go last."""

from ks_tui.questions import EfficacyStats, compute_stats, load_bank, parse_bank, select
from ks_tui.questions.bank import default_bank_path
from ks_tui.questions.selection import rank

SMALL_BANK = """
thresholds: {recent_n: 0}
questions:
  - {id: a1, category: layer, points: [plateau], text: "A1?"}
  - {id: a2, category: layer, points: [plateau], text: "A2?"}
  - {id: a3, category: layer, points: [plateau], text: "A3?"}
  - {id: b1, category: limit, points: [plateau], text: "B1?"}
  - {id: b2, category: limit, points: [plateau], text: "B2?"}
  - {id: c1, category: measurement, points: [plateau, failure_streak], text: "C1?"}
  - {id: c2, category: measurement, points: [plateau], text: "C2?", requires: [has_spills]}
  - {id: d1, category: correctness, points: [failure_streak], text: "D1?"}
"""


def ids(questions):
    return [q.id for q in questions]


def small(recent_n=0):
    return parse_bank(SMALL_BANK.replace("{recent_n: 0}", "{recent_n: %d}" % recent_n))


def test_only_questions_for_the_point_and_whose_conditions_hold():
    bank = small()
    assert set(ids(rank(bank, "failure_streak", [], None, {}))) == {"c1", "d1"}
    assert "c2" not in ids(rank(bank, "plateau", [], None, {"has_spills": False}))
    assert "c2" in ids(rank(bank, "plateau", [], None, {"has_spills": True}))


def test_categories_take_turns_in_the_top_k():
    top = select(small(), "plateau", [], None, {}, k=3)
    assert len({q.category for q in top}) == 3


def test_asking_top_one_repeatedly_never_repeats_inside_a_category_while_others_remain():
    bank = small()
    applicable = rank(bank, "plateau", [], None, {})
    asked: list[str] = []
    for _ in range(len(applicable)):
        q = select(bank, "plateau", asked, None, {}, k=1)[0]
        assert q.id not in asked
        asked.append(q.id)
    assert sorted(asked) == sorted(ids(applicable))
    # Every question asked once: repeats begin in the category whose last ask is oldest.
    category = {q.id: q.category for q in applicable}
    last_ask = {category[qid]: i for i, qid in enumerate(asked)}
    stalest = min(last_ask, key=last_ask.get)
    first_of_stalest = next(qid for qid in asked if category[qid] == stalest)
    assert select(bank, "plateau", asked, None, {}, k=1)[0].id == first_of_stalest


def test_no_asked_question_is_offered_while_its_category_has_fresh_ones():
    bank = small()
    for asked in (["a1"], ["a1", "a2"], ["b1", "a3"], ["c1", "a2", "b2"]):
        offered = rank(bank, "plateau", asked, None, {})
        for q in offered:
            fresh_in_category = [o for o in offered if o.category == q.category and o.id not in asked]
            assert q.id not in asked or not fresh_in_category


def test_a_category_with_nothing_fresh_comes_after_those_with_fresh_questions():
    # measurement's only applicable question (c1) was asked first, yet it ranks last
    top = select(small(), "plateau", ["c1", "b1", "a1"], None, {}, k=3)
    assert [q.id for q in top] == ["b2", "a2", "c1"]


def test_the_category_asked_last_comes_last():
    bank = small()
    # layer was asked most recently, so it should not lead
    top = select(bank, "plateau", ["b1", "c1", "a1"], None, {"has_spills": True}, k=3)
    assert [q.category for q in top] == ["limit", "measurement", "layer"]
    assert top[0].category != "layer"
    assert top[-1].category == "layer"


def test_efficacy_reorders_questions_inside_a_category():
    bank = small()
    records = []
    for n, (qid, after) in enumerate([("a2", 1.5), ("a2", 1.4), ("a1", 1.0), ("a1", 1.0)]):
        ask = f"s:{n}"
        records += [{"kind": "asked", "ask": ask, "question": qid, "category": "layer", "best_before": 1.0},
                    {"kind": "outcome", "ask": ask, "best_before": 1.0, "best_after": after}]
    stats = compute_stats(records)
    layer = [q.id for q in rank(bank, "plateau", [], stats, {}) if q.category == "layer"]
    # a2 paid off twice, a3 is unseen (prior 0.5), a1 never paid off
    assert layer == ["a2", "a3", "a1"]
    assert [q.id for q in rank(bank, "plateau", [], EfficacyStats(), {}) if q.category == "layer"] == ["a1", "a2", "a3"]


def test_weight_scales_the_rank():
    bank = parse_bank(SMALL_BANK.replace('{id: a3, category: layer, points: [plateau], text: "A3?"}',
                                         '{id: a3, category: layer, points: [plateau], text: "A3?", weight: 3}'))
    assert select(bank, "plateau", [], None, {}, k=1)[0].id == "a3"


def test_recently_asked_questions_go_last_even_when_their_category_is_spent():
    bank = small(recent_n=2)
    ranked = ids(rank(bank, "failure_streak", ["d1", "c1"], None, {}))
    assert ranked == ["d1", "c1"]  # both spent and recent: the one asked longer ago first
    ranked = ids(rank(bank, "plateau", ["b1", "b2"], None, {}))
    assert ranked[-2:] == ["b1", "b2"]


def test_every_point_has_questions_in_the_shipped_bank():
    bank = load_bank(default_bank_path(None))
    everything = {k: True for k in ("is_cuda", "has_correct_attempt", "has_failures", "has_failing_scenarios",
                                    "has_losing_scenarios", "has_spills", "has_sass")}
    for point in ("session_start", "plateau", "failure_streak", "agent_stop", "suspicious_gain", "every_n_steps"):
        top = select(bank, point, [], None, everything, k=3)
        assert len(top) == 3, point
        assert len({q.category for q in top}) >= 2, point
    # the CPU task too: questions needing CUDA facts drop out, others remain
    assert select(bank, "plateau", [], None, {"is_cpu": True}, k=3)


def test_the_serialised_wgmma_question_needs_ptxas_to_have_said_so():
    bank = load_bank(default_bank_path(None))
    said = {"is_cuda": True, "has_serialized_wgmma": True}
    assert "measure-serialized-wgmma" in ids(rank(bank, "plateau", [], None, said))
    assert "measure-serialized-wgmma" not in ids(rank(bank, "plateau", [], None, {"is_cuda": True}))


def test_a_category_asked_at_another_point_still_waits_its_turn():
    # m2 (measurement) applies only at a failure streak and was asked last. At the next plateau
    # measurement is the category asked most recently, so its plateau question m1 comes after
    # layer's and limit's, although m1 itself was never asked.
    bank = parse_bank("""
thresholds: {recent_n: 0}
questions:
  - {id: a1, category: layer, points: [plateau], text: "A1?"}
  - {id: a2, category: layer, points: [plateau], text: "A2?"}
  - {id: b1, category: limit, points: [plateau], text: "B1?"}
  - {id: b2, category: limit, points: [plateau], text: "B2?"}
  - {id: m1, category: measurement, points: [plateau], text: "M1?"}
  - {id: m2, category: measurement, points: [failure_streak], text: "M2?"}
""")
    assert ids(rank(bank, "plateau", ["a1", "b1", "m2"], None, {}))[:3] == ["a2", "b2", "m1"]
    assert ids(rank(bank, "plateau", ["m2", "a1", "b1"], None, {}))[0] == "m1"  # asked longest ago: first
