"""From a noise_probe.py JSON: how far each estimator of a scenario's speedup moves across the repeats (issue 63).

    python3 lab/flash_attn_fwd/scripts/probe_estimators.py results/2026-12-07-h100-standby-noise/noise_probe.json.gz

Takes the turn-taking variant's raw samples (V3: the kernel's and the libraries' calls alternating inside each
block) and compares, per repeat, the harness's estimator (the fastest library's median over the kernel's median)
with the median and the 10%-trimmed mean of the ratios of adjacent pairs (the kernel's j-th call and that library's
j-th call of the same block), which share whatever the clock did between them.
"""

from __future__ import annotations

import gzip
import json
import statistics as st
import sys


def estimates(blocks: list[dict], best: str) -> dict[str, float] | None:
    kernel, library, pairs = [], [], []
    for block in blocks:
        k = [ms for name, ms in zip(block["f"], block["ms"]) if name == ""]
        b = [ms for name, ms in zip(block["f"], block["ms"]) if name == best]
        kernel += k
        library += b
        pairs += [y / x for x, y in zip(k, b)]
    if not kernel or not library:
        return None
    cut = len(pairs) // 10
    trimmed = sorted(pairs)[cut:len(pairs) - cut] or pairs
    return {"ratio_of_medians": st.median(library) / st.median(kernel), "median_of_pairs": st.median(pairs),
            "trimmed_mean_of_pairs": st.mean(trimmed)}


def spread_pct(values: list[float]) -> float:
    return (max(values) - min(values)) / st.mean(values) * 100


def main(path: str) -> None:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        probe = json.load(f)
    spreads: dict[str, list[float]] = {}
    for scenario in probe["scenarios"]:
        per: dict[str, list[float]] = {}
        for repeat in scenario["repeats"]:
            v3 = repeat["variants"].get("V3")
            got = estimates(v3["blocks"], v3["best"]) if v3 else None
            for name, value in (got or {}).items():
                per.setdefault(name, []).append(value)
        for name, values in per.items():
            if len(values) >= 2:
                spreads.setdefault(name, []).append(spread_pct(values))
    for name, values in spreads.items():
        v = sorted(values)
        print(f"{name:22} spread median {st.median(v):.2f}%  p95 {v[int(0.95 * (len(v) - 1))]:.2f}%  "
              f"max {v[-1]:.2f}%  over 3%: {sum(x > 3 for x in v)} of {len(v)}")


if __name__ == "__main__":
    main(sys.argv[1])
