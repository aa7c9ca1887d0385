"""Per-family figures of a flash_attn_fwd bench JSON: geomean vs the fastest baseline, vs FA3 and vs
cuDNN, by head configuration and mask, and by length; how often each library was the fastest.

    python3 lab/flash_attn_fwd/device/families.py RESULT.json [--markdown]
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections import Counter, defaultdict


def gm(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def family(sid: str) -> tuple[str, str]:
    """('d128-h32-8', 'causal') from 'd128-h32-8-s4096-causal'; prefill and ragged named as such."""
    causal = "causal" if sid.endswith("-causal") else "full"
    head = re.match(r"(d\d+-h\d+-\d+)", sid).group(1)
    if re.search(r"-q\d+-k\d+", sid):
        head += " prefill"
    elif (m := re.search(r"-s(\d+)", sid)) and int(m.group(1)) % 512:
        head += " ragged"
    if "-fp16" in sid:
        head += " fp16"
    return head, causal


def length(sid: str) -> int:
    m = re.search(r"-k(\d+)", sid) or re.search(r"-s(\d+)", sid)
    n = int(m.group(1))
    return 1 << round(math.log2(n))


def ratios(s: dict, name: str):
    t, b = s.get("time_ms"), (s.get("baselines") or {}).get(name)
    return b / t if t and b else None


def main(path: str, markdown: bool = False) -> None:
    r = json.load(open(path))
    scen = r["scenarios"]
    fam = defaultdict(lambda: defaultdict(list))
    by_len = defaultdict(list)
    fastest = Counter((s.get("baseline") or {}).get("name") for s in scen)
    for s in scen:
        head, mask = family(s["id"])
        fam[head][mask].append(s)
        by_len[length(s["id"])].append(s)
    print(f"{path}: {r.get('device')}, {r.get('correct')} correct, geomean {r['geomean_speedup']:.4f} vs fastest; "
          + ", ".join(f"vs {k} {v:.4f}" for k, v in sorted(r["geomean_by_baseline"].items()) if v))
    print("fastest library per scenario:", dict(fastest))
    sep = " | " if markdown else "  "
    head = ["family", "full: vs fastest", "vs fa3", "vs cuDNN", "causal: vs fastest", "vs fa3", "vs cuDNN"]
    if markdown:
        print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    else:
        print(f"{'family':26}  {'full: best':>10} {'fa3':>7} {'cudnn':>7}   {'causal: best':>12} {'fa3':>7} {'cudnn':>7}")
    fmt = lambda x: "-" if x is None else f"{x:.3f}"  # noqa: E731
    for h in fam:
        cells = []
        for mask in ("full", "causal"):
            ss = fam[h][mask]
            cells += [fmt(gm([s.get("speedup") for s in ss])), fmt(gm([ratios(s, "fa3") for s in ss])),
                      fmt(gm([ratios(s, "sdpa_cudnn") for s in ss]))]
        if markdown:
            print(f"| {h} | " + " | ".join(cells) + " |")
        else:
            print(f"{h:26}  {cells[0]:>10} {cells[1]:>7} {cells[2]:>7}   {cells[3]:>12} {cells[4]:>7} {cells[5]:>7}")
    print("by length (vs fastest / vs fa3):", sep.join(
        f"S{n} {fmt(gm([s.get('speedup') for s in ss]))}/{fmt(gm([ratios(s, 'fa3') for s in ss]))}"
        for n, ss in sorted(by_len.items())))


if __name__ == "__main__":
    main(sys.argv[1], "--markdown" in sys.argv)
