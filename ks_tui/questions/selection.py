"""Ranking the questions that apply at a decision point.

Rules, in order of precedence:
1. Only questions listing the point, whose `requires` all hold in the context.
2. Within a category, a question already asked this session is left out while the category
   still has one that was not; once all were asked, the one asked longest ago comes first.
3. Categories take turns: one never asked leads, then the one asked longest ago; the list
   interleaves categories so the top few offered to a person differ in kind.
4. Within a category, questions rank by weight x expected new-best rate, a rate shrunk toward
   a prior (config.prior_rate, prior_weight) so an unseen question is still asked.
5. A question among the last `recent_n` asked goes to the end of the list.
"""

from __future__ import annotations

from typing import Any, Sequence

from ks_tui.questions.bank import Bank, Question
from ks_tui.questions.efficacy import EfficacyStats
from ks_tui.questions.thresholds import DecisionConfig


def score(question: Question, stats: EfficacyStats, config: DecisionConfig) -> float:
    return question.weight * stats.tally(question.id).expected_rate(config.prior_rate, config.prior_weight)


def rank(bank: Bank, point: str, asked: Sequence[str], stats: EfficacyStats | None,
         context: dict[str, Any], config: DecisionConfig | None = None) -> list[Question]:
    config = config or bank.config
    stats = stats or EfficacyStats()
    order = {q.id: i for i, q in enumerate(bank.questions)}
    last_asked = {qid: i for i, qid in enumerate(asked)}  # later asks overwrite earlier ones
    recent = set(asked[len(asked) - config.recent_n:]) if config.recent_n else set()

    by_category: dict[str, list[Question]] = {}
    for q in bank.questions:
        if q.applies(point, context):
            by_category.setdefault(q.category, []).append(q)

    lanes: list[tuple[tuple, list[Question]]] = []
    for category, qs in by_category.items():
        fresh = [q for q in qs if q.id not in last_asked]
        pool = fresh or qs
        pool.sort(key=lambda q: (q.id in recent, last_asked.get(q.id, -1),
                                 -score(q, stats, config), order[q.id]))
        # The category's last ask at any point, not only among the questions this point offers.
        cat_last = max((i for qid, i in last_asked.items()
                        if getattr(bank.get(qid), "category", None) == category), default=-1)
        lane_key = (not fresh, cat_last, -score(pool[0], stats, config), order[pool[0].id])
        lanes.append((lane_key, pool))
    lanes.sort(key=lambda lane: lane[0])

    ranked: list[Question] = []
    depth = max((len(pool) for _, pool in lanes), default=0)
    for r in range(depth):
        ranked.extend(pool[r] for _, pool in lanes if r < len(pool))
    return [q for q in ranked if q.id not in recent] + [q for q in ranked if q.id in recent]


def select(bank: Bank, point: str, asked: Sequence[str], stats: EfficacyStats | None,
           context: dict[str, Any], k: int = 3, config: DecisionConfig | None = None) -> list[Question]:
    """The top `k` questions to offer at `point`; autonomous mode asks the first."""
    return rank(bank, point, asked, stats, context, config)[:k]
