"""Where a session stands against its own best, shared by `ks log` and the TUI's history screen.

The best mark is the fastest reading; it moves on any rise, and one kernel read in two device
calls can differ by ~1%. So the plateau is counted from the last real gain (`points.last_gain`),
and when the mark sits on a run that was no gain, `best_lead` says by how much it leads and
against which bar.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ks_tui.questions.points import Bar, Gain, Lead, Round, best_lead, effective_noise, standing
from ks_tui.questions.thresholds import DecisionConfig
from ks_tui.questions.views import AttemptView


@dataclass(frozen=True)
class Plateau:
    noise: float                 # the bar between device calls (the bank's floor or the measured spread)
    gain: Gain                   # the last real gain, the attempts since, and the same-call run it beat if any
    paired_noise: float | None = None  # the bar of a same-call pair
    lead: Lead | None = None     # the best mark's lead, when its run was no gain and leads inside its bar
    bar: float | None = None     # that bar: paired_noise for a run beside it, else noise
    needs: Bar | None = None     # what the next full-grid run must beat to count (gain_bar)
    last_round: Round | None = None  # the latest round beside the best kernel (standing)
    elsewhere: tuple[Bar, ...] = ()  # the bars of the session's other devices (device_bars)

    @property
    def last_gain(self) -> int | None:
        return self.gain.number

    @property
    def since_gain(self) -> int | None:
        return self.gain.since

    def to_dict(self) -> dict:
        lead = None if self.lead is None else {"over": self.lead.over, "ratio": round(self.lead.ratio, 6),
                                                "paired": self.lead.paired, "bar": self.bar}
        g = self.gain
        paired = None if g.over is None or g.ratio is None else {
            "over": g.over, "ratio": round(g.ratio, 6), "bar": self.paired_noise, "declared": g.declared}
        needs = None if self.needs is None else self._bar_dict(self.needs)
        r = self.last_round
        last_round = None if r is None else {"attempt": r.number, "beside": r.over, "kernel_of": r.holder,
                                             "ratio": round(r.ratio, 6), "won": r.won}
        return {"noise": self.noise, "last_gain": self.last_gain, "attempts_since_gain": self.since_gain,
                "last_gain_paired": paired, "best_lead": lead, "gain_needs": needs, "last_paired_round": last_round,
                "gain_needs_elsewhere": [self._bar_dict(b) for b in self.elsewhere]}

    def _bar_dict(self, bar: Bar) -> dict:
        return {"device": bar.device, "beside_kernel_of": bar.holder, "paired_noise": self.paired_noise,
                "alone_above": bar.plain}


def plateau_of(history: Sequence[AttemptView], config: DecisionConfig, best: int | None) -> Plateau:
    """The plateau of `history` (oldest first) whose best mark is on attempt `best` (None: no mark)."""
    noise = effective_noise(history, config)
    gain, needs, last, bars = standing(history, noise, config.paired_noise)
    elsewhere = tuple(b for b in bars if b is not needs)
    if best is None or best == gain.number:
        return Plateau(noise, gain, config.paired_noise, needs=needs, last_round=last, elsewhere=elsewhere)
    lead = best_lead(history, best)
    bar = config.paired_noise if lead and lead.paired else noise
    if lead is None or lead.ratio > 1 + bar:  # above it the mark moved for another reason (a re-measure)
        return Plateau(noise, gain, config.paired_noise, needs=needs, last_round=last, elsewhere=elsewhere)
    return Plateau(noise, gain, config.paired_noise, lead, bar, needs, last, elsewhere)


def gain_needs_lines(p: Plateau) -> list[str]:
    """What the next full-grid run must do to count, for `ks log` (the paired bar names the best kernel, not the
    fastest reading's): the latest device's bar first (the one the next run on that machine meets), then each other
    device's the session has a full-grid run on."""
    return [_bar_line(b, p.paired_noise) for b in ((p.needs,) if p.needs else ()) + p.elsewhere]


def _bar_line(n: Bar, paired_noise: float | None) -> str:
    paired = "" if paired_noise is None else (f"beat #{n.holder}'s kernel by {paired_noise:.1%} in one call "
                                              f"(`ks show {n.holder} --kernel`) or ")
    return f"(a gain on {n.device} must {paired}read above {n.plain:.4f}x alone)"


def plateau_lines(p: Plateau, best: int | None) -> list[str]:
    """The lines `ks log` prints under its table (and the history screen under its title)."""
    lines = []
    g = p.gain
    if g.number is not None:
        n = f"{g.since} attempt{'' if g.since == 1 else 's'} since"
        if g.over is None or g.ratio is None:  # (a same-call gain has both)
            lines.append(f"(last gain above the {p.noise:.1%} noise: #{g.number}; {n})")
        else:  # inside the bar between calls, above the same-call one
            how = "declared timed in the same call (a remark)" if g.declared else "timed in the same call"
            lines.append(f"(last gain: #{g.number}, {g.ratio - 1:+.2%} over #{g.over}, {how}, above the "
                         f"{p.paired_noise:.1%} same-call noise; {n})")
    if p.lead is not None and best is not None:
        beside = ", timed in the same call," if p.lead.paired else ""
        kind = "same-call noise" if p.lead.paired else "noise between calls"
        lines.append(f"(#{best} leads #{p.lead.over}{beside} by {p.lead.ratio - 1:+.2%}: inside the {p.bar:.1%} "
                     f"{kind}, so no gain)")
    line = lost_round_line(p)
    if line:
        lines.append(line)
    return lines


def lost_round_line(p: Plateau) -> str | None:
    """The latest lost round beside the best kernel, when it came after the last gain and is not the best mark's
    lead line already: that kernel's paired chance is spent, so timing it beside the same kernel again cannot
    count."""
    r, g = p.last_round, p.gain
    if r is None or r.won or p.paired_noise is None or (g.number is not None and r.number < g.number):
        return None
    if p.lead is not None and p.lead.paired and p.lead.over == r.over:
        return None
    return (f"(#{r.number}'s round beside #{r.holder}'s kernel (#{r.over}, same call): {r.ratio - 1:+.2%}, not above the "
            f"{p.paired_noise:.1%} same-call noise; that kernel's one round beside #{r.holder}'s is spent)")
