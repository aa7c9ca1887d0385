"""The question bank: loading and checking it, decision points, selection, efficacy.

Knows nothing of the UI, the LLM or git: it takes a history of attempts (AttemptView) and
the event that just happened, and returns decision points and ranked questions; it records
which questions were asked and what followed them.

Names are imported lazily so that `ks --help` (which only needs the vocabularies) does
not pay for yaml and the rest.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the same names, eagerly, for type checkers and editors
    from ks_tui.questions.bank import (
        BANK_FILE,
        Bank,
        BankError,
        Question,
        default_bank_path,
        human_question,
        load_bank,
        parse_bank,
    )
    from ks_tui.questions.conditions import build_context
    from ks_tui.questions.efficacy import (
        EfficacyStats,
        EfficacyStore,
        Tally,
        compute_stats,
    )
    from ks_tui.questions.plateau import (
        Plateau,
        gain_needs_lines,
        plateau_lines,
        plateau_of,
    )
    from ks_tui.questions.points import (
        Bar,
        DecisionPoint,
        Gain,
        Lead,
        best_lead,
        detect,
        device_bars,
        effective_noise,
        gain_bar,
        gain_of,
        gains,
        last_gain,
        measured_noise,
    )
    from ks_tui.questions.selection import rank, select
    from ks_tui.questions.thresholds import DecisionConfig, check_thresholds
    from ks_tui.questions.views import (
        AttemptView,
        best_speedup,
        from_attempt_dict,
        views_of,
    )
    from ks_tui.questions.vocab import CATEGORIES, HUMAN_CATEGORY, POINTS, REQUIREMENTS

_EXPORTS = {
    "bank": ("BANK_FILE", "Bank", "BankError", "Question", "default_bank_path", "human_question",
             "load_bank", "parse_bank"),
    "thresholds": ("DecisionConfig", "check_thresholds"),
    "conditions": ("build_context",),
    "efficacy": ("EfficacyStats", "EfficacyStore", "Tally", "compute_stats"),
    "views": ("AttemptView", "best_speedup", "from_attempt_dict", "views_of"),
    "points": ("Bar", "DecisionPoint", "Gain", "Lead", "best_lead", "detect", "device_bars", "effective_noise",
               "gain_bar", "gain_of", "gains", "last_gain", "measured_noise"),
    # no name "plateau": the submodule would shadow it
    "plateau": ("Plateau", "gain_needs_lines", "plateau_lines", "plateau_of"),
    "selection": ("rank", "select"),
    "vocab": ("CATEGORIES", "HUMAN_CATEGORY", "POINTS", "REQUIREMENTS"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_MODULE_OF)


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
