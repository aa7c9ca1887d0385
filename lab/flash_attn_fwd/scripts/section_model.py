"""A model of the causal tile order's sections (best/kernel.cu: `kSectionL2Bytes` on the host, `decode_tile` on the
device), to choose which section rules are worth a device call.

A causal launch's tiles are cut into sections of consecutive heads; inside a section the heaviest query block of
every head goes first. The model runs that order on persistent CTAs that take the next tile when free and reports,
per rule: the heads a section, the makespan, how long a head's tiles are apart (first start to last end), and the
K/V of the heads "open" on average (some tile started, not all finished): the bytes L2 must hold for a head's tiles
to share its K/V.

It is a model, not a measurement: a tile costs its key blocks plus a fixed 1.2 block-times (NOTES.md, the short
tile's fixed cost) and no CTA ever waits on memory, so it shows the order's tail and its L2 footprint, never a
bandwidth effect. Session 31's measurements that it matches in direction: at s512 (b = 64) 4 MB sections ran the d64
and d128 launches 10% faster than 16 MB and 48 MB 12-26% slower, following the open K/V (d64: 8 / 16 / 36 MB),
with d256 s512 level where the open K/V hardly moves; at causal s4096 4 MB lost 2.5%, the model's makespan +2.5%.
The rule `tail` is next_tail's order (v38's sections, then the lightest query blocks of every head last: tail_cut);
`tail8k` is next_tail8k's and v40's (v39's sections, that order only past TAIL_MIN_SK keys). Session 32 measured
next_tail: the long launches gained as the tail predicts (+0.8% past s_k 4096), the short ones lost 1.7% where it
predicted gains: what the order costs in memory is not in the model. The rule `lanes` is next_lanes's: v44's order,
or, where the model makes the launch at least 2% shorter, the lane plan (`lane_order`), which the host code computes
with the same cost model and hands to the kernel as a table (a "heads" of 0 marks it). A launch of few waves whose
tiles cost about the same (a prefill chunk: q8192-k32768 on 192 rows, 5.21 waves) ends on a part-wave of whole
tiles under heaviest-first; the plan gives the CTAs that run one tile more the lightest ones.

    python3 -m lab.flash_attn_fwd.scripts.section_model causal_short
    python3 -m lab.flash_attn_fwd.scripts.section_model d64-h32-32-s512-causal d128-h16-16-s4096-causal
"""

from __future__ import annotations

import argparse
import heapq
import sys
from bisect import bisect_right
from dataclasses import dataclass
from typing import Callable

from lab.flash_attn_fwd.scripts import families  # rows_of: the tile height the dispatch picks

BLOCK_N = 128          # keys a block, every function since v36
TILE_FIXED = 1.2       # a tile's cost besides its key blocks, in block-times
SMS = 132              # the H100's and the H200's SM count (num_sms())
MB = 1 << 20
SHORT_SK = 1024        # next_secs1k / next_secwave: the rule for short launches applies up to this many keys
TAIL_WAVES = 4         # next_tail: the light query blocks that run last over every head, in waves of tiles
TAIL_MIN_SK = 4096     # next_tail8k, v40 (kTailMinSk): that order only past this many keys (s_k <= 2048 lost 1.7%)


@dataclass(frozen=True)
class Launch:
    """What the host code knows when it sizes the sections."""
    num_bh: int
    m_blocks: int
    rows: int
    group: int
    s_q: int
    s_k: int
    kv_bytes: int      # K and V of one kv head

    @classmethod
    def of(cls, p: dict) -> Launch:
        rows = families.rows_of(p)
        return cls(num_bh=p["h_q"] * p["b"], m_blocks=-(-p["s_q"] // rows), rows=rows, group=p["h_q"] // p["h_kv"],
                   s_q=p["s_q"], s_k=p["s_k"], kv_bytes=2 * p["s_k"] * p["d"] * 2)

    @property
    def d(self) -> int:
        return self.kv_bytes // (4 * self.s_k)

    def blocks(self, m_block: int) -> int:
        """Key blocks of query block m_block under the bottom-right causal mask (decode_tile)."""
        kv_end = min(self.s_k, m_block * self.rows + self.rows + self.s_k - self.s_q)
        return -(-kv_end // BLOCK_N) if kv_end > 0 else 0


def _bytes_rule(section_bytes: int) -> Callable[[Launch, int], int]:
    return lambda la, sms: section_bytes // la.kv_bytes


def _short(short: Callable[[Launch, int], int]) -> Callable[[Launch, int], int]:
    """v38's 16 MB past SHORT_SK keys, `short` up to it."""
    return lambda la, sms: short(la, sms) if la.s_k <= SHORT_SK else 16 * MB // la.kv_bytes


def _wave(la: Launch, sms: int) -> int:
    """next_secwave: at most one wave of tiles a section (never more heads than 16 MB gives)."""
    return min(16 * MB // la.kv_bytes, sms // (la.m_blocks * la.group))


# kv heads a section before the clamp to [1, num_bh / group], as each kernel's host code computes it
RULES: dict[str, Callable[[Launch, int], int]] = {
    "4MB": _bytes_rule(4 * MB),          # next_sec4
    "16MB": _bytes_rule(16 * MB),        # v38
    "48MB": _bytes_rule(48 * MB),        # next_sec48
    "secs1k": _short(_bytes_rule(4 * MB)),  # next_secs1k, v39
    "secwave": _short(_wave),
    "tail": _bytes_rule(16 * MB),        # next_tail: v38's sections, and the light query blocks last (tail_cut)
    "tail8k": _short(_bytes_rule(4 * MB)),  # next_tail8k, v40: v39's sections, the light blocks last past TAIL_MIN_SK
}
TAILED = {"tail": 0, "tail8k": TAIL_MIN_SK}  # the rules with next_tail's order, and the keys it needs beyond
# Rules that count a section in query heads rather than K/V bytes (then the launch's other sections as `tail8k`).
# next_sec64t (session 38): the square short causal launches' sections hold ~64 tiles, half a wave (calls 7-8: the
# short causal d256 launches ran fastest so, and v39's 4 MB is 64 tiles for d128-h16-16).
# v44 (session 39): that rule for d256 only, and no v40 tail for d256 (NO_TAIL_D).
def _sec64(la: Launch) -> int | None:
    return max(1, 64 // la.m_blocks) if la.s_k <= SHORT_SK and la.s_q == la.s_k else None


TILE_RULES: dict[str, Callable[[Launch], int | None]] = {
    "sec64t": _sec64,
    "v44": lambda la: _sec64(la) if la.d == 256 else None,
}
NO_TAIL_D = {"v44": 256}  # rules whose launches of this head dim run no tail


def section_heads(la: Launch, rule: str, sms: int = SMS) -> int:
    """Heads (query heads x batch) a section, as `launch` computes `sec`."""
    if rule in TILE_RULES:
        heads = TILE_RULES[rule](la)
        if heads is not None:
            return min(heads, la.num_bh)
        rule = "tail8k"
    kv_heads = max(1, RULES[rule](la, sms))
    return min(kv_heads * la.group, la.num_bh)


def tail_cut(la: Launch, sms: int = SMS, waves: int = TAIL_WAVES) -> int:
    """next_tail's `cut`: how many of the lightest query blocks of every head run last, over all heads at once. As
    many as fill `waves` waves of tiles, while a block holds at most half the heaviest block's keys (so the prefill
    shapes, whose blocks all see most of the keys, keep v38's order), never the heaviest block itself."""
    heaviest = la.blocks(la.m_blocks - 1)
    cut = 0
    while (cut < la.m_blocks - 1 and (cut + 1) * la.num_bh <= waves * sms
           and 2 * la.blocks(cut) <= heaviest):
        cut += 1
    return cut


def rule_cut(la: Launch, rule: str, sms: int = SMS) -> int:
    if NO_TAIL_D.get(rule) == la.d:
        return 0
    rule = "tail8k" if rule in TILE_RULES else rule  # a tile-count rule keeps v40's tail where it applies
    return tail_cut(la, sms) if rule in TAILED and la.s_k > TAILED[rule] else 0


def tile_order(la: Launch, sec: int, cut: int = 0) -> list[tuple[int, int]]:
    """(bh, query block) in the order the tile counter hands them out (decode_tile, causal): the query blocks from
    `cut` up by sections, heaviest first in each; then blocks cut - 1 .. 0 over every head (next_tail)."""
    order: list[tuple[int, int]] = []
    for start in range(0, la.num_bh, sec):
        width = min(sec, la.num_bh - start)
        for m in range(la.m_blocks - 1, cut - 1, -1):
            order.extend((start + j, m) for j in range(width))
    for m in range(cut - 1, -1, -1):
        order.extend((bh, m) for bh in range(la.num_bh))
    return order


@dataclass(frozen=True)
class Schedule:
    makespan: float    # block-times
    head_span: float   # mean time from a head's first tile start to its last tile end (next_tail: last heavy tile)
    open_kv: float     # mean K/V bytes of open heads (a kv head split over its GQA group: low if part of one is open)


def simulate(la: Launch, sec: int, sms: int = SMS, samples: int = 400, cut: int = 0) -> Schedule:
    return simulate_order(la, tile_order(la, sec, cut), sms, samples, cut)


def cost(la: Launch, m: int) -> float:
    """A tile's cost in block-times: its key blocks and the fixed part."""
    return la.blocks(m) + TILE_FIXED


def list_schedule(la: Launch, order: list[tuple[int, int]], sms: int = SMS) -> list[tuple[float, float, int, int]]:
    """(start, end, bh, query block) of each tile: CTA i takes tile i first, then whichever CTA is free first (the
    lowest index among equals) takes the next tile. The host code's plan_makespan, addition for addition."""
    free = [(0.0, i) for i in range(sms)]
    out = []
    for bh, m in order:
        t, cta = heapq.heappop(free)
        end = t + cost(la, m)
        out.append((t, end, bh, m))
        heapq.heappush(free, (end, cta))
    return out


def makespan(la: Launch, order: list[tuple[int, int]], sms: int = SMS) -> float:
    """The list schedule's end."""
    return max((end for _, end, _, _ in list_schedule(la, order, sms)), default=0.0)


def lane_order(la: Launch, sms: int = SMS) -> list[tuple[int, int]]:
    """next_lanes's plan for a launch of few waves: the N mod SMs CTAs that run one tile more than the others
    (N = the tiles) get the lightest tiles, the others the rest, each class head by head and heaviest first in a
    head (a head's tiles run together, for L2); the order hands the tiles out as those two kinds of lane would ask
    for them under the cost model. Where the tiles cost about the same (a prefill chunk), the lanes that run more
    tiles run lighter ones, and the launch does not end on a part-wave of whole tiles."""
    tiles = [(bh, m) for bh in range(la.num_bh) for m in range(la.m_blocks)]
    q, r = divmod(len(tiles), sms)
    by_cost = sorted(tiles, key=lambda x: (la.blocks(x[1]), x[0], x[1]))
    light = sorted(by_cost[:r * (q + 1)], key=lambda x: (x[0], -x[1]))
    heavy = sorted(by_cost[r * (q + 1):], key=lambda x: (x[0], -x[1]))
    queues = (light, heavy)
    lanes = [(0.0, 0, i) for i in range(r)] + [(0.0, 1, i) for i in range(sms - r)]
    heapq.heapify(lanes)
    taken = [0, 0]
    order = []
    while lanes:
        t, kind, i = heapq.heappop(lanes)
        if taken[kind] == len(queues[kind]):
            continue  # this lane has run its share
        bh, m = queues[kind][taken[kind]]
        taken[kind] += 1
        order.append((bh, m))
        heapq.heappush(lanes, (t + cost(la, m), kind, i))
    return order


PLAN_GAIN = 1.02  # next_lanes (kPlanGain): the lane plan where the model makes the launch at least 2% shorter
PLAN_MAX_WAVES = 16  # ... (kPlanMaxWaves) and the launch holds more than one wave of tiles and at most this many


def uses_lanes(la: Launch, rule: str = "v44", sms: int = SMS, sec_cut: tuple[int, int] | None = None) -> bool:
    """Whether next_lanes's host code takes the lane plan for this launch, against `rule`'s order (v44's by default:
    the kernel it edits) or the order of the sections and tail given as `sec_cut`."""
    if not sms < la.num_bh * la.m_blocks <= PLAN_MAX_WAVES * sms:
        return False
    sec, cut = sec_cut or (section_heads(la, rule, sms), rule_cut(la, rule, sms))
    current = makespan(la, tile_order(la, sec, cut), sms)
    return makespan(la, lane_order(la, sms), sms) * PLAN_GAIN <= current


def simulate_order(la: Launch, order: list[tuple[int, int]], sms: int = SMS, samples: int = 400,
                   cut: int = 0) -> Schedule:
    first: dict[int, float] = {}
    last: dict[int, float] = {}
    tiles = list_schedule(la, order, sms)
    for t, end, bh, m in tiles:
        first.setdefault(bh, t)
        if m >= cut:  # the tail's light tiles read the first `cut` blocks only: they do not keep the head open
            last[bh] = max(last.get(bh, 0.0), end)
    span = max(end for _, end, _, _ in tiles)
    starts, ends = sorted(first.values()), sorted(last.values())
    open_heads = [bisect_right(starts, t) - bisect_right(ends, t)
                  for t in (span * (k + 0.5) / samples for k in range(samples))]
    # GQA: a kv head's group shares its K/V; count it once per group of open query heads
    per_head = la.kv_bytes / la.group
    return Schedule(span, sum(last[h] - first[h] for h in first) / len(first),
                    sum(open_heads) / samples * per_head)


def table(ids: list[str], rules: list[str], sms: int) -> list[str]:
    # the task's grid; imported here, not at the top: compare's `tail` subset imports this module
    from lab.flash_attn_fwd.scripts import compare
    params = {s["id"]: s["params"] for s in compare.grid()}
    unknown = [i for i in ids if i not in params]
    if unknown:
        raise ValueError(f"unknown scenario(s): {', '.join(unknown)}")
    lines = [f"{'scenario':34s} {'rule':8s} {'heads':>6s} {'waves':>6s} {'makespan':>9s} {'vs 16MB':>8s} "
             f"{'head span':>9s} {'open K/V':>9s}"]
    for i in ids:
        p = params[i]
        if not p["causal"]:
            continue  # unmasked launches take one head at a time (sec = 1): no section to choose
        la = Launch.of(p)
        ref = simulate(la, section_heads(la, "16MB", sms), sms).makespan
        for r in rules:
            base = "v44" if r == "lanes" else r  # next_lanes: v44's order unless the plan is 2% shorter
            sec = section_heads(la, base, sms)
            if r == "lanes" and uses_lanes(la, base, sms):
                s, sec = simulate_order(la, lane_order(la, sms), sms), 0  # heads a section: none (0)
            else:
                s = simulate(la, sec, sms, cut=rule_cut(la, base, sms))
            lines.append(f"{i:34s} {r:8s} {sec:6d} {sec * la.m_blocks / sms:6.2f} {s.makespan:9.1f} "
                         f"{s.makespan / ref:8.3f} {s.head_span:9.1f} {s.open_kv / MB:7.1f}MB")
    return lines


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenarios", nargs="+", help="scenario ids or a compare.py subset (causal ones are modelled)")
    known = [*RULES, *TILE_RULES, "lanes"]
    ap.add_argument("--rules", default=",".join(known), help=f"comma-separated, of: {', '.join(known)}")
    ap.add_argument("--sms", type=int, default=SMS)
    a = ap.parse_args(argv)
    rules = a.rules.split(",")
    bad = [r for r in rules if r not in known]
    if bad:
        print(f"section_model: unknown rule(s): {', '.join(bad)} (known: {', '.join(known)})", file=sys.stderr)
        return 2
    from lab.flash_attn_fwd.scripts import compare  # compare.py's named subsets
    ids = [i for s in a.scenarios for i in compare.scenario_ids(s)]
    try:
        print("\n".join(table(ids, rules, a.sms)))
    except ValueError as e:
        print(f"section_model: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
