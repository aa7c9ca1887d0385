"""What a launch's tile order asks of L2: each tile's K/V block reads replayed in time on the section model's list
schedule, through an LRU cache of the L2's size, to count the blocks that must come from HBM.

The section model (`section_model.py`) gives every tile a CTA and a start time (its cost model: key blocks + a fixed
part); here a tile reads its key blocks one block-time apart, in the kernel's order (causal: the diagonal block first,
then down to block 0; `--upward`: ascevery's, the diagonal block first, then up from block 0; unmasked: block 0 up),
and its Q block at its start, and writes its O block at its end (both pass through L2 and take room there). Every
read of a K/V block (K and V of 128 keys of one kv head) that is not in the cache is a miss. It is a model: one
LRU of `--l2-mb` (the H100's and H200's 50 MB; their L2 is two partitions, and data from the far one costs more,
which is not here), reads in time order at the model's pace (a miss does not slow its tile), no prefetch, no
eviction priority. It says which orders keep a head's K/V resident and which re-read it, not how long a miss costs.

    python3 -m lab.flash_attn_fwd.scripts.l2_model d128-h16-16-s8192 d128-h16-16-s8192-causal
    python3 -m lab.flash_attn_fwd.scripts.l2_model --orders sections,lanes d128-h16-16-q8192-k32768-causal
"""

from __future__ import annotations

import argparse
import sys
from collections import OrderedDict
from dataclasses import dataclass

from lab.flash_attn_fwd.scripts import section_model as sm

MB = 1 << 20
# causal orders: v44's sections and tail (best/kernel.cu's), the lane plan, or a section model rule's (4MB: gqa4mb's
# sections for GQA launches)
ORDERS = ("sections", "lanes", *sm.RULES)


@dataclass(frozen=True)
class Traffic:
    reads: int       # K/V block reads (one block: K and V of 128 keys of one kv head)
    misses: int      # of them, not in L2
    unique: int      # distinct K/V blocks: the compulsory misses
    block_bytes: int

    @property
    def hit_rate(self) -> float:
        return 1 - self.misses / self.reads if self.reads else 1.0

    @property
    def excess(self) -> float:
        """HBM K/V bytes over the compulsory ones."""
        return self.misses / self.unique if self.unique else 1.0


def replay(la: sm.Launch, order: list[tuple[int, int]], causal: bool, l2_bytes: int, upward: bool = False,
           sms: int = sm.SMS) -> Traffic:
    d = la.d
    block_bytes = 2 * sm.BLOCK_N * d * 2           # K and V of one key block, bf16
    q_bytes = la.rows * d * 2                       # a tile's Q (and its O)
    events: list[tuple[float, int, tuple]] = []     # (time, kind: 0 write O / 1 read Q / 2 read K/V, key)
    for start, end, bh, m in sm.list_schedule(la, order, sms):
        kv = bh // la.group
        n = la.blocks(m) if causal else -(-la.s_k // sm.BLOCK_N)
        if causal:
            blocks = [n - 1, *range(n - 1)] if upward else list(range(n - 1, -1, -1))
        else:
            blocks = list(range(n))
        events.append((start, 1, ("Q", bh, m)))
        t0 = start + sm.TILE_FIXED / 2
        events.extend((t0 + i, 2, ("KV", kv, j)) for i, j in enumerate(blocks))
        events.append((end, 0, ("O", bh, m)))
    events.sort(key=lambda e: (e[0], e[1]))
    cache: OrderedDict[tuple, int] = OrderedDict()
    used = reads = misses = 0
    seen: set = set()
    for _, kind, key in events:
        size = block_bytes if kind == 2 else q_bytes
        if kind == 2:
            reads += 1
            seen.add(key)
        if key in cache:
            cache.move_to_end(key)
            continue
        if kind == 2:
            misses += 1
        cache[key] = size
        used += size
        while used > l2_bytes:
            _, old = cache.popitem(last=False)
            used -= old
    return Traffic(reads, misses, len(seen), block_bytes)


def order_of(la: sm.Launch, name: str) -> list[tuple[int, int]]:
    if name == "lanes":
        return sm.lane_order(la)
    if name == "unmasked":  # the unmasked launches' order: bh outer, query block inner (sec = 1, no tail)
        return [(bh, m) for bh in range(la.num_bh) for m in range(la.m_blocks)]
    rule = "v44" if name == "sections" else name
    return sm.tile_order(la, sm.section_heads(la, rule), sm.rule_cut(la, rule))


def table(ids: list[str], orders: list[str], l2_mb: float, upward: bool) -> list[str]:
    from lab.flash_attn_fwd.scripts import compare  # the task's grid (compare imports section_model)
    params = {s["id"]: s["params"] for s in compare.grid()}
    unknown = [i for i in ids if i not in params]
    if unknown:
        raise ValueError(f"unknown scenario(s): {', '.join(unknown)}")
    lines = [f"{'scenario':34s} {'order':9s} {'rows':>4s} {'K/V reads':>10s} {'hit rate':>8s} {'HBM / compulsory':>17s}"]
    for i in ids:
        p = params[i]
        la = sm.Launch.of(p)
        for name in orders if p["causal"] else ["unmasked"]:
            tr = replay(la, order_of(la, name), p["causal"], int(l2_mb * MB), upward)
            # a lane plan the host would not take (the section order is as short) is shown all the same, marked
            note = "  (the host keeps the sections)" if name == "lanes" and not sm.uses_lanes(la) else ""
            lines.append(f"{i:34s} {name:9s} {la.rows:4d} {tr.reads:10d} {tr.hit_rate:8.4f} {tr.excess:17.2f}{note}")
    return lines


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenarios", nargs="+", help="scenario ids (unmasked ones replay the unmasked order)")
    ap.add_argument("--orders", default="sections", help=f"causal launches: comma-separated, of {', '.join(ORDERS)}")
    ap.add_argument("--l2-mb", type=float, default=50.0)
    ap.add_argument("--upward", action="store_true", help="causal key blocks as ascevery walked them")
    a = ap.parse_args(argv)
    orders = a.orders.split(",")
    bad = [o for o in orders if o not in ORDERS]
    if bad or a.l2_mb <= 0:
        print(f"l2_model: unknown order(s) {', '.join(bad)}" if bad else "l2_model: --l2-mb must be positive",
              file=sys.stderr)
        return 2
    try:
        print("\n".join(table(a.scenarios, orders, a.l2_mb, a.upward)))
    except ValueError as e:
        print(f"l2_model: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
