"""Bench several kernel files on named scenario subsets in one device call; print a table.

Usage (repo root, GPU machine):
    python3 kernels/flash_attn_fwd/scripts/compare.py SUBSET[,SUBSET] NAME=FILE [NAME=FILE ...]
Subsets: quick (the task's), short, d64, d64c, d256, long128, nomask_long, causal_long, short128,
nomask_mid, d64_192, or any comma-free scenario id list joined by '+'.
`compare.py --pick TAG SUBSETS NAME=FILE ...` prints the path of the file that beat the first
by KS_MIN_GAIN (default 1.01) on the first subset, from the JSONs a run with KS_TAG=TAG left.
Each run is `python3 -m ks_tui bench flash_attn_fwd --source FILE --json [--quick |
--scenarios IDS]`; its JSON goes to $OUT/work/<subset>-<name>.json. Stops starting runs
when KS_DEADLINE (epoch seconds) is near; each run is killed by the harness after KS_RUN_TIMEOUT
seconds (default 150), so a hanging candidate costs one run, not the call.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
WORK = Path(os.environ.get("OUT", "/tmp")) / "work"
DEADLINE = float(os.environ.get("KS_DEADLINE", time.time() + 540))
SUBSETS = {
    "short": ["d128-h16-16-s512", "d128-h32-8-s1024-causal", "d256-h8-8-s512", "d96-h16-16-s1024",
              "d128-h16-16-s1007-causal", "d64-h32-8-s512", "d128-h64-8-s512-causal",
              "d128-h16-16-s512-fp16"],
    "d64": ["d64-h32-32-s512", "d64-h32-32-s2048", "d64-h32-8-s4096-causal", "d64-h32-32-s8192",
            "d64-h32-8-s1024", "d64-h32-32-s16384-causal"],
    "long128": ["d128-h16-16-s8192", "d128-h32-8-s16384", "d128-h32-1-s16384", "d128-h64-8-s8192",
                "d128-h16-16-s32768-causal", "d128-h16-16-s16384-fp16", "d128-h64-8-s16384-causal",
                "d128-h16-16-s16367"],
    "d64c": ["d64-h32-32-s512-causal", "d64-h32-8-s512-causal", "d64-h32-32-s1024-causal",
             "d64-h32-8-s1024-causal", "d64-h32-32-s2048-causal", "d64-h32-8-s2048-causal"],
    "d256": ["d256-h8-8-s1024", "d256-h16-4-s2048-causal", "d256-h8-8-s4096", "d256-h16-4-s8192",
             "d256-h8-8-s16384-causal", "d256-h8-8-s1007-causal"],
}

# Subsets picked by a rule over the scenario parameters (resolved with `ks scenarios --json`).
FILTERS = {
    # d96/d128 with s_k > 2048: the launches that run 160-key blocks in v15 (32 scenarios each)
    "nomask_long": lambda p: p["d"] in (96, 128) and not p["causal"] and p["s_k"] > 2048,
    "causal_long": lambda p: p["d"] in (96, 128) and p["causal"] and p["s_k"] > 2048,
    # d96/d128 with s_k <= 2048, both masks: the 128-key tiles with the TMA epilogue
    "short128": lambda p: p["d"] in (96, 128) and p["s_k"] <= 2048,
    # session 6: d96/d128 without a mask at 1024 < s_k <= 2048 (8 scenarios)
    "nomask_mid": lambda p: p["d"] in (96, 128) and not p["causal"] and 1024 < p["s_k"] <= 2048,
    # session 7: the d64 launches on 192-row tiles (all but causal with s_q <= 1024; 24 scenarios)
    "d64_192": lambda p: p["d"] == 64 and not (p["causal"] and p["s_q"] <= 1024),
}


def scenario_ids(subset: str) -> list[str]:
    if subset in SUBSETS:
        return SUBSETS[subset]
    if subset in FILTERS:
        out = subprocess.run([sys.executable, "-m", "ks_tui", "scenarios", "flash_attn_fwd", "--json"],
                             capture_output=True, text=True, check=True, env=dict(os.environ, PYTHONPATH=str(REPO)))
        return [s["id"] for s in json.loads(out.stdout)["scenarios"] if FILTERS[subset](s["params"])]
    return subset.split("+")


def label_of(subset: str) -> str:
    """The subset's name in result file names: an ad-hoc id list can be longer than a file name
    may be, so a long one is named by a hash."""
    return subset if len(subset) <= 60 else "ids-" + hashlib.sha1(subset.encode()).hexdigest()[:10]


def pick_winner(work: Path, tag: str, subset: str, cands: list[tuple[str, str]],
                min_gain: float) -> tuple[str, str]:
    """(path of the best candidate, why): the file among cands[1:] with the highest correct
    geomean on `subset` in `work`, if it beats cands[0] (the reference) by `min_gain`; ("", why)
    when none does, or when the reference has no correct result."""
    def geomean(name: str) -> float | None:
        try:
            r = json.loads((work / f"{tag}{label_of(subset)}-{name}.json").read_text())
        except (OSError, ValueError):
            return None
        return r.get("geomean_speedup") if r.get("status") == "correct" else None

    ref = geomean(cands[0][0])
    scored = [(g, path) for (name, path) in cands[1:] if (g := geomean(name)) is not None]
    best = max(scored, default=None)
    if ref is None or best is None or best[0] < ref * min_gain:
        return "", f"reference {ref}, candidates {scored}, min gain {min_gain}: none"
    return best[1], f"reference {ref}, candidates {scored}, min gain {min_gain}: {best[1]}"


def run(subset: str, name: str, src: str) -> dict | None:
    # A hanging candidate must not eat the whole call: the harness kills a run after this long.
    run_limit = int(min(float(os.environ.get("KS_RUN_TIMEOUT", 150)), max(30, DEADLINE - time.time() - 15)))
    args = [sys.executable, "-m", "ks_tui", "bench", "flash_attn_fwd", "--source", src, "--json",
            "--timeout", str(run_limit)]
    if subset == "quick":
        args.append("--quick")
    else:
        args += ["--scenarios", ",".join(scenario_ids(subset))]
    t0 = time.monotonic()
    p = subprocess.run(args, capture_output=True, text=True, timeout=run_limit + 30,
                       env=dict(os.environ, PYTHONPATH=str(REPO)))
    try:
        r = json.loads(p.stdout)
    except ValueError:
        print(f"{subset}/{name}: no JSON, rc={p.returncode}: {p.stderr[-800:]}", flush=True)
        return None
    label = label_of(subset)
    (WORK / f"{os.environ.get('KS_TAG', '')}{label}-{name}.json").write_text(json.dumps(r, indent=1))
    print(f"{label}/{name}: {r.get('status')} {r.get('correct')} geomean {r.get('geomean_speedup')} "
          f"({time.monotonic() - t0:.0f}s) {r.get('message', '')[:200]}", flush=True)
    for s in r.get("scenarios", []):
        if not s.get("ok"):
            print(f"   FAIL {s['id']}: {(s.get('error') or {}).get('what')}", flush=True)
    return r


def main() -> None:
    if sys.argv[1:2] == ["--pick"]:  # --pick TAG SUBSETS NAME=FILE ...: the winner's path, or nothing
        tag, subset = sys.argv[2], sys.argv[3].split(",")[0]
        path, why = pick_winner(WORK, tag, subset, [a.split("=", 1) for a in sys.argv[4:]],
                                float(os.environ.get("KS_MIN_GAIN", "1.01")))
        print(f"auto pick: {why}", file=sys.stderr)
        print(path, end="")
        return
    WORK.mkdir(parents=True, exist_ok=True)
    subsets = sys.argv[1].split(",")
    cands = [a.split("=", 1) for a in sys.argv[2:]]
    results: dict = {}
    for subset in subsets:
        for name, src in cands:
            if DEADLINE - time.time() < 40:
                print(f"skipping {subset}/{name}: deadline", flush=True)
                continue
            results[(subset, name)] = run(subset, name, src)
    print("\nspeedup vs fastest baseline (per scenario; geomean last)")
    for subset in subsets:
        rows: dict = {}
        for name, _ in cands:
            r = results.get((subset, name)) or {}
            for s in r.get("scenarios", []):
                rows.setdefault(s["id"], {})[name] = s.get("speedup") if s.get("ok") else "FAIL"
        print(f"[{subset[:60]}] " + " ".join(f"{n:>10s}" for n, _ in cands))
        for sid, by in rows.items():
            cells = " ".join(f"{by.get(n):>10.3f}" if isinstance(by.get(n), float) else f"{str(by.get(n)):>10s}"
                             for n, _ in cands)
            print(f"  {sid:34s} {cells}")
        g = []
        for name, _ in cands:
            r = results.get((subset, name)) or {}
            g.append(f"{r['geomean_speedup']:>10.3f}" if r.get("geomean_speedup") and r.get("status") == "correct"
                     else f"{'-':>10s}")
        print(f"  {'geomean':34s} {' '.join(g)}")


if __name__ == "__main__":
    main()
