"""A/B of kernel files on named scenario subsets in one device call; print a table per subset.

Usage (repo root, GPU machine):
    python3 -m lab.flash_attn_fwd.scripts.compare SUBSET[,SUBSET] NAME=FILE [NAME=FILE ...]
Subsets: quick (the task's), short, d64, d64c, d256, long128, nomask_long, causal_long, short128,
nomask_mid, d64_192, d256c, d256s, d256ul, d256all, d256c4k, d64causal, causal_gqa, d96, or any comma-free scenario id
list joined by '+'.

The files are benched as `ks compare` benches them (its run order and summary, imported): one
`ks bench --json --seed S --scenarios <all subsets' ids>` run per file and round, the order
reversed every other round, the same inputs for every file of a round. KS_ROUNDS sets the
rounds (default 1). The decision is the speedup row ('vs' the first file): each scenario's
baselines are timed right beside the kernel, at the same clock. Session 8 measured why that
matters: under sustained load the H200's clocks drop, and the same kernel ran its long d128
scenarios ~10% faster in the first run of a call than in the eighth, so kernel times of
different runs do not compare (the kernel-time row is printed as information). A cell marked '!' is
one whose run timed the baseline >10% off its median over the call's runs (`ks compare`'s table):
read the kernel times the note under the table gives (session 20's next_l2pf read +46% there, and
was 18% slower).
KS_BY=d,causal adds the summary rows per group of scenarios with equal values of those task parameters
(`ks compare --by`): groups a candidate leaves alone read the noise of the others. KS_TIMES=1 adds the
per-scenario kernel-time table and the median time saved (`ks compare --times`). KS_CACHED_BASELINES=1
reuses the first run's baseline timings (faster; the speedup row then
equals the kernel-time row). Each run's JSON goes to $OUT/work/<KS_TAG><name>-r<k>.json as soon
as it ends and the summary per subset to $OUT/work/<KS_TAG>summary.json, so a call cut short
keeps what it measured. KS_DEADLINE (epoch seconds) is when the runs must be done: a run starts
only if it can end by then, judged by the longest run so far in this process, or by KS_RUN_SECONDS
(an estimate, e.g. ~210 for a full-grid run) before the first; a run cut off by the deadline
would measure nothing (session 9 lost one that way). A round starts only if all its runs can end by
then, and the summary holds whole rounds only (a round cut short would give one file a run more).
The harness kills a run after KS_RUN_TIMEOUT seconds (default 300), so a hanging candidate costs
one run, not the call.

`compare.py --pick TAG SUBSETS NAME=FILE ...` prints the path of the file whose speedup beat the
first file's by KS_MIN_GAIN (default 1.01) on the first subset, from the summary a run with
KS_TAG=TAG left.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

# best/kernel.cu's dispatch of an unmasked launch, as families.py models it; the causal launches next_tail reorders
from lab.flash_attn_fwd.scripts.families import tile_kind
from lab.flash_attn_fwd.scripts.section_model import Launch, rule_cut, tail_cut

REPO = Path(__file__).resolve().parents[3]
WORK = Path(os.environ.get("OUT", "/tmp")) / "work"
DEADLINE = float(os.environ.get("KS_DEADLINE", time.time() + 540))
TASK = os.environ.get("KS_TASK", "flash_attn_fwd")  # another task only for the script's own tests
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
    # 8 of nomask_long's 32 (each head layout, d96, prefill, odd length): a quarter of its time, for many files
    "nomask8": ["d96-h16-16-s8192", "d128-h16-16-s8192", "d128-h16-16-s32768", "d128-h32-8-s16384",
                "d128-h64-8-s8192", "d128-h32-1-s16384", "d128-h16-16-q2048-k8192", "d128-h16-16-s16367"],
    # session 28: 8 unmasked and 8 causal d96/d128 launches with s_k > 4096 (192-row tiles, and the prefill shapes on
    # 128-row tiles): the launches next_tmaall moves to the TMA epilogue past next_tma4k's
    "long16": ["d96-h16-16-s8192", "d128-h16-16-s8192", "d128-h32-8-s16384", "d128-h64-8-s8192",
               "d128-h16-16-q2048-k8192", "d128-h16-16-s16367", "d128-h16-16-q8192-k32768", "d128-h32-1-s16384",
               "d96-h16-16-s8192-causal", "d128-h16-16-s8192-causal", "d128-h32-8-s16384-causal",
               "d128-h64-8-s8192-causal", "d128-h16-16-s32768-causal", "d128-h16-16-s8175-causal",
               "d128-h16-16-q2048-k8192-causal", "d128-h16-16-q4096-k16384-causal"],
    # session 28: the unmasked prefill shapes (one to four query tiles a head, K/V mostly from HBM) and the short
    # subset: where next_tileahead's earlier tile index should show
    "prefill_short": ["d128-h16-16-q128-k512", "d128-h16-16-q256-k1024", "d128-h16-16-q512-k2048",
                      "d128-h16-16-s512", "d128-h32-8-s1024-causal", "d256-h8-8-s512", "d96-h16-16-s1024",
                      "d128-h16-16-s1007-causal", "d64-h32-8-s512", "d128-h64-8-s512-causal", "d128-h16-16-s512-fp16"],
    # session 28: v36's d96/d128 launches with s_k > 2048 on 128-row tiles (192 rows pad or fill the waves worse), the
    # ones next_tma160 / next_tma160u move to 160-key blocks, and two 192-row controls
    # session 29: causal launches over every head dim and length (the section size of the causal tile order:
    # next_sec4 / next_sec48), with two unmasked controls
    "sections": ["d64-h32-32-s512-causal", "d64-h32-8-s2048-causal", "d64-h32-32-s8192-causal", "d64-h32-8-s32768-causal",
                 "d96-h16-16-s1024-causal", "d96-h16-16-s8192-causal", "d128-h16-16-s512-causal",
                 "d128-h32-8-s1024-causal", "d128-h64-8-s2048-causal", "d128-h16-16-s4096-causal",
                 "d128-h32-8-s8192-causal", "d128-h32-1-s16384-causal", "d128-h16-16-s32768-causal",
                 "d128-h16-16-q1024-k4096-causal", "d128-h16-16-q4096-k16384-causal", "d256-h8-8-s512-causal",
                 "d256-h16-4-s2048-causal", "d256-h8-8-s8192-causal", "d256-h16-4-s32768-causal", "d128-h16-16-s2048",
                 "d64-h32-8-s4096"],
    "long128rows": ["d96-h16-16-s4096-causal", "d128-h16-16-s4096-causal", "d128-h32-8-s4096-causal",
                    "d128-h64-8-s4096-causal", "d128-h32-1-s4096-causal", "d128-h16-16-s4079-causal",
                    "d128-h16-16-s4096-fp16-causal", "d128-h16-16-q1024-k4096", "d128-h16-16-q1024-k4096-causal",
                    "d128-h16-16-q2048-k8192", "d128-h16-16-q2048-k8192-causal", "d128-h16-16-q4096-k16384",
                    "d128-h16-16-q4096-k16384-causal", "d128-h16-16-q8192-k32768", "d128-h16-16-s4096",
                    "d128-h16-16-s8192-causal"],
}

# Subsets picked by a rule over the scenario parameters (resolved with `ks scenarios --json`).
FILTERS = {
    "all": lambda p: True,  # the whole grid: one full bench per file and round
    # d96/d128 with s_k > 2048: the launches that run 160-key blocks in v15 (32 scenarios each)
    "nomask_long": lambda p: p["d"] in (96, 128) and not p["causal"] and p["s_k"] > 2048,
    "causal_long": lambda p: p["d"] in (96, 128) and p["causal"] and p["s_k"] > 2048,
    # session 31: causal launches with s_k <= 1024 (26 scenarios): where next_sec4's 4 MB sections gained 10%
    "causal_short": lambda p: p["causal"] and p["s_k"] <= 1024,
    # session 31: the causal launches whose order next_tail changes (section_model.tail_cut > 0: 68 scenarios)
    "tail": lambda p: p["causal"] and tail_cut(Launch.of(p)) > 0,
    # session 32: those that next_tail8k (and v40) reorders (s_k > 4096, where next_tail gained 0.8%: 36 scenarios)
    "tail_long": lambda p: p["causal"] and rule_cut(Launch.of(p), "tail8k") > 0,
    # causal_long's launches that next_cluster2dc pairs by head (an even GQA group): 12 scenarios
    "causal_gqa": lambda p: p["d"] in (96, 128) and p["causal"] and p["s_k"] > 2048 and p["h_q"] // p["h_kv"] % 2 == 0,
    # d96/d128 with s_k <= 2048, both masks: the 128-key tiles with the TMA epilogue
    "short128": lambda p: p["d"] in (96, 128) and p["s_k"] <= 2048,
    # session 6: d96/d128 without a mask at 1024 < s_k <= 2048 (8 scenarios)
    "nomask_mid": lambda p: p["d"] in (96, 128) and not p["causal"] and 1024 < p["s_k"] <= 2048,
    # session 7: the d64 launches on 192-row tiles (all but causal with s_q <= 1024; 24 scenarios)
    "d64_192": lambda p: p["d"] == 64 and not (p["causal"] and p["s_q"] <= 1024),
    # session 12: d256 causal with s_k <= 2048 (9 scenarios; the tiles where a diagonal block is a large share)
    "d256c": lambda p: p["d"] == 256 and p["causal"] and p["s_k"] <= 2048,
    # session 12: both masks (18): d256's functions serve causal and unmasked launches alike, and v25's causal-only
    # change cost the unmasked ones 3%, which the causal subset alone did not show
    "d256s": lambda p: p["d"] == 256 and p["s_k"] <= 2048,
    # session 13: every d64 causal launch (14; all on 192-row tiles since v28, the functions next_bottom192 changes)
    "d64causal": lambda p: p["d"] == 64 and p["causal"],
    # session 16: the d96 scenarios (14, both masks): the functions next_d96n96 changes
    "d96": lambda p: p["d"] == 96,
    # session 17: every unmasked launch with s_k > 2048 (52: the register epilogue, every head dim), the launches
    # next_tailsplit splits where their last wave is at most half full
    "nomask_reg": lambda p: not p["causal"] and p["s_k"] > 2048,
    # session 19: d256 with s_k > 2048 (24, both masks): the register-epilogue launches next_d256tma moves to v33's
    # TMA epilogue
    "d256l": lambda p: p["d"] == 256 and p["s_k"] > 2048,
    # session 35: every d256 launch (42): next_d256n80c moves 20 of them to 80-key blocks
    "d256all": lambda p: p["d"] == 256,
    # session 37: causal d256 with s_k <= 4096 (12): the 64-key launches whose masked diagonal block next_d256skip
    # skips, and the 128-key ones next_d256skipall moves to 64 keys
    "d256c4k": lambda p: p["d"] == 256 and p["causal"] and p["s_k"] <= 4096,
    # session 35: unmasked d256 with s_k > 2048 (12): the launches next_d256n80 moves to 128x80 tiles
    "d256ul": lambda p: p["d"] == 256 and not p["causal"] and p["s_k"] > 2048,
    # session 28: d64 with s_k > 2048 (16, both masks): the register-epilogue launches next_d64tma moves to the TMA one
    "d64long": lambda p: p["d"] == 64 and p["s_k"] > 2048,
    # session 28: d96/d128 at 2048 < s_k <= 4096 (both masks), where v35's speedup dips against s2048 and s8192, and
    # the causal prefill launches on 128-row tiles above it: the launches next_tma4k / next_tmac move to the TMA
    # epilogue
    "tma4k": lambda p: p["d"] in (96, 128) and (2048 < p["s_k"] <= 4096 or (p["causal"] and p["s_q"] < p["s_k"])),
    # session 29: the unmasked launches of the functions next_vtmore37 gives the V thread (31): d256 with s_k > 2048
    # (the register epilogue) and d128 on 128-row tiles (where the dispatch's wave rule keeps them off 192 rows)
    "vtmore": lambda p: not p["causal"] and ((p["d"] == 256 and p["s_k"] > 2048)
                                             or (p["d"] == 128 and tile_kind(p)[0] == 128)),
}


def grid() -> list[dict]:
    """The task's scenarios as `ks scenarios --json` lists them (id, quick, params)."""
    out = subprocess.run([sys.executable, "-m", "ks_tui", "scenarios", TASK, "--json"],
                         capture_output=True, text=True, check=True, env=dict(os.environ, PYTHONPATH=str(REPO)))
    return json.loads(out.stdout)["scenarios"]


def scenario_ids(subset: str) -> list[str]:
    if subset in SUBSETS:
        return SUBSETS[subset]
    if subset in FILTERS or subset == "quick":
        return [s["id"] for s in grid() if (s["quick"] if subset == "quick" else FILTERS[subset](s["params"]))]
    return subset.split("+")


def label_of(subset: str) -> str:
    """The subset's name in result file names: an ad-hoc id list can be longer than a file name
    may be, so a long one is named by a hash."""
    return subset if len(subset) <= 60 else "ids-" + hashlib.sha1(subset.encode()).hexdigest()[:10]


def pick_winner(work: Path, tag: str, subset: str, cands: list[tuple[str, str]],
                min_gain: float) -> tuple[str, str]:
    """(path of the best candidate, why): the file among cands[1:] with the largest speedup gain
    over cands[0] (the reference) on `subset`, if that gain is at least `min_gain` and the file
    ran correctly; ("", why) when none does or the summary is missing."""
    try:
        summary = json.loads((work / f"{tag}summary.json").read_text())[label_of(subset)]
    except (OSError, ValueError, KeyError):
        return "", f"no summary for {subset[:60]} under {tag}: none"
    gains = summary.get("vs_first") or {}
    scored = [(g, path) for (name, path) in cands[1:]
              if name not in summary.get("failed", {}) and isinstance(g := gains.get(name), (int, float))]
    best = max(scored, default=None)
    why = f"speedup candidate / {cands[0][0]} {scored}, min gain {min_gain}"
    if cands[0][0] in summary.get("failed", {}) or best is None or best[0] < min_gain:
        return "", f"{why}: none"
    return best[1], f"{why}: {best[1]}"


# A run needs at least this long (a small subset: compile, check, time, a few baselines).
MIN_RUN_SECONDS = 40.0


def run_fits(now: float, deadline: float, durations: list[float], estimate: float | None) -> tuple[bool, float]:
    """(whether a run started now ends by `deadline`, the seconds it is expected to take): the longest run so
    far, else the caller's estimate, and never less than MIN_RUN_SECONDS."""
    expected = max(durations) if durations else (estimate or 0.0)
    need = max(MIN_RUN_SECONDS, expected)
    return deadline - now >= need, need


def round_fits(now: float, deadline: float, durations: list[float], estimate: float | None,
               runs: int) -> tuple[bool, float]:
    """(whether a round of `runs` runs started now ends by `deadline`, the seconds it is expected to take). A round
    starts only whole: a round cut short leaves one file with a run more than the other, and the A/B unbalanced
    (session 17's calls 3 and 6 read "2 rounds" over three runs)."""
    need = runs * run_fits(now, deadline, durations, estimate)[1]
    return deadline - now >= need, need


def bench(name: str, src: str, ids: list[str], seed: int, k: int, pair: str = "") -> dict:
    """One `ks bench` run of one file; its JSON is kept under WORK at once. `pair` tags the runs of
    one round (`ks bench --pair`), so attempts recorded from them are judged against each other."""
    # A hanging candidate must not eat the whole call: the harness kills a run after this long.
    run_limit = int(min(float(os.environ.get("KS_RUN_TIMEOUT", 300)), max(30, DEADLINE - time.time() - 15)))
    args = [sys.executable, "-m", "ks_tui", "bench", TASK, "--source", src, "--json",
            "--timeout", str(run_limit), "--seed", str(seed), "--scenarios", ",".join(ids)]
    if os.environ.get("KS_CACHED_BASELINES"):
        args.append("--cached-baselines")
    if pair:
        args += ["--pair", pair]
    t0 = time.monotonic()
    p = subprocess.run(args, capture_output=True, text=True, timeout=run_limit + 30,
                       env=dict(os.environ, PYTHONPATH=str(REPO)))
    try:
        r = json.loads(p.stdout)
    except ValueError:
        r = {"status": "no_json", "message": f"rc={p.returncode}: {p.stderr[-800:]}", "scenarios": []}
    (WORK / f"{os.environ.get('KS_TAG', '')}{name}-r{k}.json").write_text(json.dumps(r, indent=1))
    print(f"[{k}] {name}: {r.get('status')} {r.get('correct')} geomean {r.get('geomean_speedup')} "
          f"({time.monotonic() - t0:.0f}s) {(r.get('message') or r.get('error') or '')[:200]}", flush=True)
    for s in r.get("scenarios", []):
        if not s.get("ok"):
            print(f"   FAIL {s['id']}: {(s.get('error') or {}).get('what')}", flush=True)
    return r


def only(run: dict, ids: set[str]) -> dict:
    return dict(run, scenarios=[s for s in run.get("scenarios") or [] if s["id"] in ids])


def main() -> None:
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__)
        return
    if sys.argv[1:2] == ["--pick"]:  # --pick TAG SUBSETS NAME=FILE ...: the winner's path, or nothing
        tag, subset = sys.argv[2], sys.argv[3].split(",")[0]
        path, why = pick_winner(WORK, tag, subset, [a.split("=", 1) for a in sys.argv[4:]],
                                float(os.environ.get("KS_MIN_GAIN", "1.01")))
        print(f"auto pick: {why}", file=sys.stderr)
        print(path, end="")
        return
    # The arguments and the settings from the environment, checked before any work: bad input is one clear error
    # (exit 2).
    if len(sys.argv) < 3:
        print("usage: compare.py SUBSET[,SUBSET] NAME=FILE NAME=FILE [...] (compare.py --help: the whole text)",
              file=sys.stderr)
        sys.exit(2)
    from ks_tui.harness import compare as kc

    try:
        cands = kc.parse_candidates(sys.argv[2:])
    except ValueError as e:
        print(f"compare.py: {e}", file=sys.stderr)
        sys.exit(2)
    try:
        estimate = float(os.environ["KS_RUN_SECONDS"]) if os.environ.get("KS_RUN_SECONDS") else None
    except ValueError:
        print(f"compare.py: KS_RUN_SECONDS={os.environ['KS_RUN_SECONDS']!r} is not a number of seconds",
              file=sys.stderr)
        sys.exit(2)
    rounds_text = os.environ.get("KS_ROUNDS", "1")
    if not rounds_text.strip().isdigit() or int(rounds_text) < 1:
        print(f"compare.py: KS_ROUNDS={rounds_text!r} is not a whole number of rounds >= 1", file=sys.stderr)
        sys.exit(2)
    rounds = int(rounds_text)

    groups = None
    if os.environ.get("KS_BY"):  # the summary rows per group too, e.g. KS_BY=d,causal (as `ks compare --by`)
        try:
            groups = kc.group_labels({s["id"]: s["params"] for s in grid()},
                                     [k.strip() for k in os.environ["KS_BY"].split(",") if k.strip()])
        except ValueError as e:
            print(f"compare.py: KS_BY: {e}", file=sys.stderr)
            sys.exit(2)

    WORK.mkdir(parents=True, exist_ok=True)
    subsets = sys.argv[1].split(",")
    by_subset = {s: scenario_ids(s) for s in subsets}
    union = list(dict.fromkeys(i for ids in by_subset.values() for i in ids))
    first_seed = random.randrange(2**31 - rounds)
    run_id = f"{random.getrandbits(48):012x}"  # this compare's runs, round by round: pair tags
    order = kc.run_order(len(cands), rounds)
    n = len(cands)
    durations: list[float] = []
    done = 0  # whole rounds: only they enter the summary
    for r in range(rounds):
        fits, need = round_fits(time.time(), DEADLINE, durations, estimate, n)
        if not fits:
            print(f"skipping round {r + 1} of {rounds}: deadline (needs ~{need:.0f}s, "
                  f"{max(0.0, DEADLINE - time.time()):.0f}s left)", flush=True)
            break
        results = []
        for k, i in enumerate(order[r * n:(r + 1) * n], r * n + 1):
            fits, need = run_fits(time.time(), DEADLINE, durations, estimate)
            if not fits:  # the round's runs took longer than the ones before: stop inside it
                print(f"skipping run {k} ({cands[i].name}): deadline (needs ~{need:.0f}s, "
                      f"{max(0.0, DEADLINE - time.time()):.0f}s left)", flush=True)
                break
            t0 = time.monotonic()
            results.append((i, bench(cands[i].name, str(cands[i].source), union, first_seed + r, k,
                                     pair=f"{run_id}:{r + 1}")))
            durations.append(time.monotonic() - t0)
        if len(results) < n:
            print(f"round {r + 1} left out of the summary: {len(results)} of its {n} runs ran "
                  f"(their files are kept)", flush=True)
            break
        for i, result in results:
            cands[i].runs.append(result)
        done += 1
    for c in cands:
        if not c.runs:
            c.runs.append({"status": "not_run", "message": "deadline", "scenarios": []})
    summaries = {}
    of = "" if done == rounds else f" of {rounds}"
    print(f"\nspeedup vs fastest baseline per scenario; the 'vs' row is the decision "
          f"({done}{of} round(s), seeds from {first_seed})")
    for subset, ids in by_subset.items():
        part = [kc.Candidate(c.name, c.source, [only(r, set(ids)) for r in c.runs]) for c in cands]
        summary = kc.summarize(part, groups)
        summaries[label_of(subset)] = summary
        print(f"[{subset[:60]}]")
        print(kc.render(part, summary, done, [first_seed + r for r in range(done)],
                        times=bool(os.environ.get("KS_TIMES"))).split("\n", 1)[1])
    (WORK / f"{os.environ.get('KS_TAG', '')}summary.json").write_text(json.dumps(summaries, indent=1))


if __name__ == "__main__":
    main()
