"""How far two bench results of the same kernel differ: the noise between two runs in one device call.

    python3 lab/flash_attn_fwd/device/noise.py A.json B.json [--json OUT]

Per scenario it compares the speedup vs the fastest baseline and the kernel's own time; the goals are the
inner loop issue's: geomean within 0.5% between the two, every scenario within 3%. Where the bench took turns
it also compares the paired speedup (`timing.paired`: the median of the turns' library/kernel ratios, against
the same fastest baseline) and its geomean.
"""

from __future__ import annotations

import json
import math
import sys


def _load(path):
    with open(path) as f:
        return json.load(f)


def paired(r: dict) -> dict[str, float]:
    """Per scenario, the paired speedup against the fastest baseline (by medians), where the bench has one."""
    out = {}
    for s in r.get("scenarios") or []:
        best = (s.get("baseline") or {}).get("name")
        ratio = ((s.get("timing") or {}).get("paired") or {}).get(best)
        if ratio and not s.get("invalid"):
            out[s["id"]] = ratio
    return out


def _medians(s: dict) -> float:
    """The ratio of the medians (the harness's `speedup` before it took the paired ratio where calls took turns)."""
    return s.get("speedup_of_medians") or s["speedup"]


def _geomean(xs: list[float]) -> float | None:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def compare(a: dict, b: dict) -> dict:
    sa = {s["id"]: s for s in a.get("scenarios") or []}
    sb = {s["id"]: s for s in b.get("scenarios") or []}
    both = [i for i in sa if i in sb and sa[i].get("speedup") and sb[i].get("speedup")]
    speed = {i: _medians(sb[i]) / _medians(sa[i]) - 1 for i in both}
    ktime = {i: sb[i]["time_ms"] / sa[i]["time_ms"] - 1 for i in both}
    ga, gb = _geomean([_medians(sa[i]) for i in both]), _geomean([_medians(sb[i]) for i in both])
    pa, pb = paired(a), paired(b)
    pboth = [i for i in both if i in pa and i in pb]
    pspeed = {i: pb[i] / pa[i] - 1 for i in pboth}
    pga, pgb = _geomean([pa[i] for i in pboth]), _geomean([pb[i] for i in pboth])

    def spread(d):
        vals = sorted(abs(v) for v in d.values())
        if not vals:
            return {}
        worst = max(d, key=lambda i: abs(d[i]))
        return {"max_pct": 100 * vals[-1], "p95_pct": 100 * vals[int(0.95 * (len(vals) - 1))],
                "median_pct": 100 * vals[len(vals) // 2], "over_3pct": sum(v > 0.03 for v in vals),
                "worst": worst}

    return {"scenarios": len(both),
            "geomean": [ga, gb], "geomean_diff_pct": 100 * (gb / ga - 1) if ga and gb else None,
            "speedup": spread(speed), "kernel_time": spread(ktime),
            "paired_scenarios": len(pboth), "paired_geomean": [pga, pgb],
            "paired_geomean_diff_pct": 100 * (pgb / pga - 1) if pga and pgb else None,
            "paired_speedup": spread(pspeed),
            "bench_s": [(r.get("timings") or {}).get("bench_s") for r in (a, b)],
            "check_s": [(r.get("timings") or {}).get("check_s") for r in (a, b)],
            "wall_s": [(r.get("timings") or {}).get("wall_s") for r in (a, b)]}


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__)
        return 2
    out = compare(_load(argv[0]), _load(argv[1]))
    g = out["geomean"]
    print(f"noise over {out['scenarios']} scenarios: geomean {g[0]:.4f} vs {g[1]:.4f} "
          f"({out['geomean_diff_pct']:+.2f}%, goal within 0.5%)" if g[0] and g[1] else "no geomean")
    if out["paired_geomean"][0]:
        pg = out["paired_geomean"]
        print(f"  paired over {out['paired_scenarios']}: geomean {pg[0]:.4f} vs {pg[1]:.4f} "
              f"({out['paired_geomean_diff_pct']:+.2f}%)")
    for key in ("speedup", "paired_speedup", "kernel_time"):
        s = out[key]
        if s:
            print(f"  {key:12} per scenario |diff|: median {s['median_pct']:.2f}%, p95 {s['p95_pct']:.2f}%, "
                  f"max {s['max_pct']:.2f}% ({s['worst']}), over 3%: {s['over_3pct']}")
    print(f"  wall {out['wall_s']} s, check {out['check_s']} s, bench {out['bench_s']} s")
    if "--json" in argv:
        with open(argv[argv.index("--json") + 1], "w") as f:
            json.dump(out, f, indent=1)
    return 0 if math.isfinite(out.get("geomean_diff_pct") or 0) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
