"""Where a session stands against its own best, shared by `ks log` and the TUI's history screen.

The best mark is the fastest reading; it moves on any rise, and one kernel read in two device
calls can differ by ~1%. So the plateau is counted from the last real gain (`points.last_gain`),
and when the mark sits on a run that was no gain, `best_lead` says by how much it leads and
against which bar.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ks_tui.questions.config import DecisionConfig
from ks_tui.questions.history import AttemptView
from ks_tui.questions.points import Lead, best_lead, effective_noise, last_gain


@dataclass(frozen=True)
class Plateau:
    noise: float                 # the bar between device calls (the bank's floor or the measured spread)
    last_gain: int | None        # the last attempt that was a real gain
    since_gain: int | None       # measured attempts after it
    lead: Lead | None = None     # the best mark's lead, when its run was no gain and leads inside its bar
    bar: float | None = None     # that bar: paired_noise for a run beside it, else noise

    def to_dict(self) -> dict:
        lead = None if self.lead is None else {"over": self.lead.over, "ratio": round(self.lead.ratio, 6),
                                                "paired": self.lead.paired, "bar": self.bar}
        return {"noise": self.noise, "last_gain": self.last_gain, "attempts_since_gain": self.since_gain,
                "best_lead": lead}


def plateau_of(history: Sequence[AttemptView], config: DecisionConfig, best: int | None) -> Plateau:
    """The plateau of `history` (oldest first) whose best mark is on attempt `best` (None: no mark)."""
    noise = effective_noise(history, config)
    number, since = last_gain(history, noise, config.paired_noise)
    if best is None or best == number:
        return Plateau(noise, number, since)
    lead = best_lead(history, best)
    bar = config.paired_noise if lead and lead.paired else noise
    if lead is None or lead.ratio > 1 + bar:  # above it the mark moved for another reason (a re-measure)
        return Plateau(noise, number, since)
    return Plateau(noise, number, since, lead, bar)


def plateau_lines(p: Plateau, best: int | None) -> list[str]:
    """The lines `ks log` prints under its table (and the history screen under its title)."""
    lines = []
    if p.last_gain is not None:
        n = p.since_gain
        lines.append(f"(last gain above the {p.noise:.1%} noise: #{p.last_gain}; "
                     f"{n} attempt{'' if n == 1 else 's'} since)")
    if p.lead is not None and best is not None:
        beside = ", timed in the same call," if p.lead.paired else ""
        kind = "same-call noise" if p.lead.paired else "noise between calls"
        lines.append(f"(#{best} leads #{p.lead.over}{beside} by {p.lead.ratio - 1:+.2%}: inside the {p.bar:.1%} "
                     f"{kind}, so no gain)")
    return lines
