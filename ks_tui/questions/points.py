"""Decision points: moments in a session when a question is worth asking.

`detect` looks at the attempts so far (oldest first) and the event that just happened:
"attempt" (or None) after an attempt was recorded, "session_start", or "agent_stop".
History-based points are only evaluated after an attempt, so a history is judged once.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

from ks_tui import best_rule
from ks_tui.pairs import DECLARED
from ks_tui.questions.thresholds import DecisionConfig
from ks_tui.questions.views import AttemptView
from ks_tui.questions.vocab import POINTS

EVENTS = (None, "attempt", "session_start", "agent_stop")


@dataclass(frozen=True)
class DecisionPoint:
    point: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"point": self.point, "reason": self.reason}


def measured_noise(history: Sequence[AttemptView]) -> float:
    """Relative spread of speedups measured more than once for the same kernel source (`AttemptView.identity`:
    a comment-only edit is the same kernel).

    A rollback or a re-run of an unchanged kernel is a free repeat measurement; the largest
    (max - min) / min over such groups is the noise the session has actually seen. With three
    groups or more the single largest is left out: one disturbed re-measure (a throttled GPU)
    must not set the floor for the rest of the session, while two that agree still do.
    """
    groups: dict[tuple[str, str, str], list[float]] = {}
    for a in history:
        # Only runs over the same scenarios repeat a measurement (two --scenarios selections may
        # differ), and only on the same device (another GPU is another speed, not noise).
        if a.identity and a.timed_speedup is not None and a.scope != "subset":
            groups.setdefault((a.identity, a.scope, a.device), []).append(a.timed_speedup)
    # Relative to the smallest, as a gain is judged (s > best * (1 + noise)): with the median a
    # re-measure that drifted up by the spread would still clear it.
    spreads = sorted((max(v) - min(v)) / min(v) for v in groups.values() if len(v) > 1 and min(v) > 0)
    if len(spreads) >= 3:
        spreads.pop()
    return max(spreads, default=0.0)


def effective_noise(history: Sequence[AttemptView], config: DecisionConfig) -> float:
    return max(config.noise, measured_noise(history))


@dataclass(frozen=True)
class Gain:
    """The last real gain (`gain_of`): which attempt, how many came after it, and, when only a run of the best
    kernel timed beside it showed the gain (not the bar between calls), that run and the lead over it."""
    number: int | None
    since: int | None
    over: int | None = None    # the partner's attempt number, for a gain by a same-call pair
    ratio: float | None = None  # the gain's speedup over the partner's
    declared: bool = False     # the pair was declared by a remark (`ks remark --same-call`), not tagged by its runs


@dataclass(frozen=True)
class Bar:
    """What the next run on a device must do to count as a gain (`gain_bar`): beat a run of attempt `holder`'s kernel
    timed in the same call by the paired noise, or read above `plain` on its own."""
    device: str
    holder: int    # the attempt whose kernel is that device's best kernel (the last gain's, or its reference)
    plain: float   # the speedup a run alone must exceed: the best reading so far times (1 + noise)


@dataclass(frozen=True)
class Round:
    """A kernel's one round beside the device's best kernel (the paired rule's chance, `gains`): whose it was, the
    fastest run of the best kernel in it, the lead over that run, and whether it counted. A lost round is spent: the
    same kernel beside the same best kernel again is drift, so the next try must be another kernel or the plain bar."""
    number: int    # the attempt whose round it was
    over: int      # the best kernel's fastest run in the round
    ratio: float   # the attempt's speedup over that run's
    holder: int    # the attempt whose kernel was the best kernel then (`Bar.holder`)
    won: bool


def last_gain(history: Sequence[AttemptView], noise: float,
              paired_noise: float | None = None) -> tuple[int | None, int | None]:
    """(the number of the last attempt that was a real gain, the attempts after it); see gain_of."""
    g = gain_of(history, noise, paired_noise)
    return g.number, g.since


def gain_of(history: Sequence[AttemptView], noise: float, paired_noise: float | None = None) -> Gain:
    """The last attempt that was a real gain and the attempts after it; the count is
    None before the first correct timed attempt, the number None while no attempt was a gain
    (see gains)."""
    return gain_and_bar(history, noise, paired_noise)[0]


def gains(history: Sequence[AttemptView], noise: float, paired_noise: float | None = None) -> list[Gain]:
    """Every real gain of `history`, oldest first, each with the measured attempts after it up to the next gain
    (the last one: to the end).

    A gain is a correct attempt whose speedup beats the best so far over the same scenarios
    (full grid with full grid, quick with quick) on the same device by more than `noise`
    (relative). A rise inside the noise is not a gain and does not move the best. A --scenarios
    subset run is a probe of a few scenarios, never a gain; it counts as an attempt. The first run
    on another device (the session moved machines) is that device's reference, not a gain.

    With `paired_noise`, a run timed side by side with a run of the best kernel (one pair tag: a
    `ks compare` round) is also a gain when it beats that run by more than `paired_noise`: the two
    share the call's clock and inputs, so the drift between calls that `noise` allows for is not
    in their difference. A kernel has one such chance per best kernel: its first round beside a run of that kernel.
    Earlier runs of it that had no such partner (timed alone, or beside another kernel) do not use the chance up, as
    a re-measure uses up the plain bar's.
    """
    return _walk(history, noise, paired_noise)[0]


def gain_bar(history: Sequence[AttemptView], noise: float, paired_noise: float | None = None) -> Bar | None:
    """The bar for the next full-grid run on the device of the latest full-grid run (gains' rule); None before any.

    The paired rule names a kernel, not a reading: the one whose run set the device's best (its reference or its last
    gain). A same-call A/B meant to count must time that kernel's file (`ks show N --kernel`), not the fastest."""
    return gain_and_bar(history, noise, paired_noise)[1]


def device_bars(history: Sequence[AttemptView], noise: float, paired_noise: float | None = None) -> list[Bar]:
    """gain_bar for every device with a full-grid run, the latest full-grid run's device first, then by name. A
    session that moved machines keeps each device's bar, since its next run may land on either."""
    return standing(history, noise, paired_noise)[3]


def _bars(history: Sequence[AttemptView], holders: dict[tuple[str, str], tuple[int, float]],
          noise: float) -> tuple[Bar | None, list[Bar]]:
    """(the bar of the latest full-grid run's device, None if it has none; every device's full-grid bar, that one
    first, then by name) from `_walk`'s holders."""
    latest = next((a.device for a in reversed(history) if a.measured and a.timed_speedup is not None
                   and a.scope == "full"), None)
    bars = sorted((Bar(device, number, best * (1 + noise)) for (scope, device), (number, best) in holders.items()
                   if scope == "full"), key=lambda b: (b.device != latest, b.device))
    return (bars[0] if bars and bars[0].device == latest else None), bars


def gain_and_bar(history: Sequence[AttemptView], noise: float,
                 paired_noise: float | None = None) -> tuple[Gain, Bar | None]:
    """gain_of and gain_bar from one walk of the history (`ks log` and the history screen want both)."""
    gain, bar, _, _ = standing(history, noise, paired_noise)
    return gain, bar


def standing(history: Sequence[AttemptView], noise: float, paired_noise: float | None = None
             ) -> tuple[Gain, Bar | None, Round | None, list[Bar]]:
    """gain_of, gain_bar, the latest round a kernel had beside its device's best kernel (None without
    paired_noise or any) and device_bars, from one walk of the history."""
    found, since, holders, last = _walk(history, noise, paired_noise)
    gain = found[-1] if found else Gain(None, since)
    needs, bars = _bars(history, holders, noise)
    return gain, needs, last, bars


def _walk(history: Sequence[AttemptView], noise: float, paired_noise: float | None
          ) -> tuple[list[Gain], int | None, dict[tuple[str, str], tuple[int, float]], Round | None]:
    """The gains of `history` (gains' rule), the attempts after the last one (None before any timed run), per
    (scope, device) the attempt whose kernel holds the best with the best reading (`gain_bar`), and the latest
    round beside a best kernel (`standing`)."""
    partners: dict[str, list[AttemptView]] = {}
    if paired_noise is not None:
        for a in history:
            if a.pair and a.measured and a.timed_speedup is not None:
                partners.setdefault(a.pair, []).append(a)
    best: dict[tuple[str, str], float] = {}
    best_kernel: dict[tuple[str, str], str] = {}  # whose speed best holds: a partner must have timed it
    holder: dict[tuple[str, str], int] = {}  # the attempt that made best_kernel the best
    since: int | None = None
    found: list[Gain] = []
    counts: list[int] = []  # the attempts after each gain, up to the next
    seen: set[tuple[str, str, str]] = set()  # (kernel, scope, device) timed
    paired: set[tuple[str, str, str]] = set()  # (kernel, scope, best kernel): a round beside that best kernel was had
    last: Round | None = None
    for a in history:
        if not a.measured:
            continue
        s = a.timed_speedup
        # A re-measure of a kernel already timed over the same scenarios on the same device (`ks try --again`, or
        # the same code with only its comments or layout edited) is a repeat measurement: its drift is noise, never
        # a gain. Its first run on another device is not: speeds of two devices are never compared, so that run is
        # the device's reference, not a re-measure.
        kernel = a.identity
        again = bool(kernel) and (kernel, a.scope, a.device) in seen
        if kernel and s is not None:
            seen.add((kernel, a.scope, a.device))
        key = (a.scope, a.device)
        if s is not None and a.scope != "subset" and key not in best and since is not None:
            best[key], best_kernel[key], holder[key] = s, kernel, a.number  # another scope or device
            s = None
        plain = s is not None and (key not in best or s > best[key] * (1 + noise))
        partner = None
        chance = (kernel, a.scope, best_kernel.get(key, ""))
        beside = _best_runs_beside(a, chance[2], partners.get(a.pair, ())) if s is not None else []
        # `beside` holds runs only when `s` is a timed speedup
        if s is not None and beside and not (plain and not again) and chance not in paired:
            partner = _beaten_partner(a, s, beside, paired_noise)
        if s is not None and beside and chance not in paired and paired_noise is not None:
            top = max(beside, key=_timed)
            last = Round(a.number, top.number, s / _timed(top), holder[key],
                         a.scope != "subset" and (partner is not None or (plain and not again)))
        if beside:
            paired.add(chance)  # won or lost, this kernel's round beside that best kernel is spent
        if s is not None and a.scope != "subset" and ((plain and not again) or partner is not None):
            # a paired gain can read below the best's reading from another call: keep the higher bar
            best[key], best_kernel[key], since = max(s, best.get(key, s)), kernel, 0
            holder[key] = a.number
            # `partner`: the run that showed the gain when the bar between calls did not
            found.append(Gain(a.number, 0) if partner is None else
                         Gain(a.number, 0, partner.number, s / _timed(partner), a.pair.startswith(DECLARED)))
            counts.append(0)
        elif since is not None or s is not None:
            since = (since or 0) + 1
            if counts:
                counts[-1] += 1
    return ([replace(g, since=n) for g, n in zip(found, counts, strict=True)], since,
            {k: (holder[k], best[k]) for k in holder}, last)


def _best_runs_beside(a: AttemptView, best_kernel: str, partners: Sequence[AttemptView]) -> list[AttemptView]:
    """The runs of the best kernel timed in `a`'s round (same device and scenarios); none when `a` is that kernel."""
    if not best_kernel or a.identity == best_kernel:
        return []
    return [p for p in partners if p is not a and p.identity == best_kernel and p.device == a.device
            and p.scope == a.scope]


def _beaten_partner(a: AttemptView, s: float, beside: Sequence[AttemptView],
                    paired_noise: float | None) -> AttemptView | None:
    """The fastest of the best kernel's runs `beside` a that `a` (speedup s) beats by more than paired_noise, or None."""
    if paired_noise is None:
        return None
    beaten = [p for p in beside if s > _timed(p) * (1 + paired_noise)]
    return max(beaten, key=_timed, default=None)


def _timed(a: AttemptView) -> float:
    """The speedup of a run already known to be timed (the partners and rivals above are only such runs)."""
    s = a.timed_speedup
    assert s is not None, f"attempt {a.number} is not a timed run"
    return s


@dataclass(frozen=True)
class Lead:
    """How far a run leads the one it is measured against (`best_lead`)."""
    over: int      # that run's attempt number
    ratio: float   # this run's speedup over that run's
    paired: bool   # that run was timed in the same call (one pair tag)


def best_lead(history: Sequence[AttemptView], number: int) -> Lead | None:
    """Attempt `number`'s lead over the fastest run of another kernel timed beside it (its pair tag) if it has one,
    else over the fastest earlier run of another kernel; only runs over the same scenarios on the same device
    compare. None when it is untimed or has no such rival. `ks log` shows it when the best mark moved without a
    gain, so a reader sees by how much, and against which bar (paired_noise or noise)."""
    me = next((a for a in history if a.number == number and a.measured), None)
    if me is None or me.timed_speedup is None:
        return None

    def rival(a: AttemptView) -> bool:
        same_kernel = bool(me.identity) and a.identity == me.identity
        same_scope = a.scope == me.scope or (a.full_grid and me.full_grid)  # "" (an old attempt) is the full grid
        return (a is not me and a.measured and a.timed_speedup is not None and not same_kernel and same_scope
                and best_rule.comparable(a.device, me.device))

    beside = [a for a in history if me.pair and a.pair == me.pair and rival(a)]
    pool = beside or [a for a in history if a.number < number and rival(a)]
    if not pool:
        return None
    top = max(pool, key=_timed)
    return Lead(top.number, me.timed_speedup / _timed(top), bool(beside))


def attempts_since_gain(history: Sequence[AttemptView], noise: float,
                        paired_noise: float | None = None) -> int | None:
    """Attempts after the last real gain (see last_gain); None before the first correct timed attempt."""
    return last_gain(history, noise, paired_noise)[1]


def failure_streak(history: Sequence[AttemptView]) -> int:
    """Failed attempts in a row at the end of the history (unmeasured ones are skipped)."""
    n = 0
    for a in reversed(history):
        if not a.measured:  # a rollback copies its target's status, even a failed one: no new run
            continue
        if a.failed:
            n += 1
        else:
            break
    return n


def _suspicious(history: Sequence[AttemptView], config: DecisionConfig) -> str | None:
    last = history[-1]
    if not last.passed:
        return None
    if last.invalid:
        return (f"attempt {last.number} has {last.invalid} invalid timing(s): faster than the speed of light "
                "or work outside the timed stream (left out of its geomean)")
    peak = config.peak_for(last.device)
    if peak is not None and last.max_tflops is not None and last.max_tflops > peak:
        return (f"attempt {last.number} reports {last.max_tflops:.0f} TFLOP/s, above the "
                f"{peak:.0f} TFLOP/s peak of {last.device}")
    if last.scope == "subset":  # a few chosen scenarios: no earlier run covers the same ones
        return None
    previous = [a.timed_speedup for a in history[:-1] if a.timed_speedup is not None and a.scope == last.scope
                and a.device == last.device]
    first = not any(a.timed_speedup is not None for a in history[:-1])
    if first and last.timed_speedup is not None and last.timed_speedup > config.suspicious_factor:
        # Nothing earlier to jump from: the fastest library baseline (1.0x) is the reference.
        return (f"attempt {last.number}, the session's first timed run, is {last.timed_speedup:.2f}x the "
                f"fastest baseline, more than {config.suspicious_factor:g}x")
    if last.timed_speedup is not None and previous and max(previous) > 0:
        jump = last.timed_speedup / max(previous)
        if jump > config.suspicious_factor:
            return (f"attempt {last.number} is {jump:.2f}x the previous best "
                    f"({last.timed_speedup:.3f} vs {max(previous):.3f}), more than "
                    f"{config.suspicious_factor:g}x")
    return None


def detect(history: Sequence[AttemptView], event: str | None, config: DecisionConfig) -> list[DecisionPoint]:
    """The decision points that fire now, most urgent first (the order of vocab.POINTS)."""
    if event not in EVENTS:
        raise ValueError(f"unknown event {event!r} (expected one of: {', '.join(map(str, EVENTS))})")
    found: dict[str, str] = {}
    if event == "session_start":
        found["session_start"] = "the session starts"
    elif event == "agent_stop":
        found["agent_stop"] = "the agent ended its turn"
    elif history and history[-1].measured:  # a rollback or an unchecked edit measured nothing new
        last = history[-1]
        reason = _suspicious(history, config)
        if reason:
            found["suspicious_gain"] = reason
        streak = failure_streak(history)
        if streak and streak % config.failure_n == 0:
            found["failure_streak"] = f"{streak} failed attempts in a row (latest: {last.status})"
        noise = effective_noise(history, config)
        since = attempts_since_gain(history, noise, config.paired_noise)
        if since and since % config.plateau_n == 0:
            found["plateau"] = (f"no gain above the {noise:.1%} noise in the last {since} attempts")
        if last.number % config.every_n == 0:
            found["every_n_steps"] = f"attempt {last.number} (every {config.every_n})"
    return [DecisionPoint(p, found[p]) for p in POINTS if p in found]
