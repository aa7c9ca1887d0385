"""The tables after candidates.sh: per candidate and scenario family, the best kernel's time over the candidate's
(> 1: the candidate is faster) and each one against FA3 (FA3's time over the kernel's, > 1: ours faster), read from
the `ks lab compare --json` files the script wrote (one per candidate, best first in each).

    python3 lab/flash_attn_fwd/device/candidates_summary.py summary WORK_DIR [--json OUT.json]
    python3 lab/flash_attn_fwd/device/candidates_summary.py plan NAME ID [ID ...]
    python3 lab/flash_attn_fwd/device/candidates_summary.py fake check|lab compare ...   (KS_DRY_RUN=2's stand-in)

`plan` says, per scenario id, whether the candidate's dispatch changes it (candidates/dispatch_model.py) or it is a
control (the same machine code and host parameters in both files); exit 2 on an id that is no scenario.
Families: head configuration, mask, and S <= 4096 or above; unchanged scenarios form the control row, whose reading
is the call's noise.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root, run as a plain script

from lab.flash_attn_fwd.candidates import dispatch_model  # noqa: E402


def geomean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def length(sid: str) -> int:
    m = re.search(r"-k(\d+)", sid) or re.search(r"-s(\d+)", sid)
    return 1 << round(math.log2(int(m.group(1))))


def family(sid: str, changed: set[str]) -> str:
    """'d128-h16-16 causal S>4k' (prefill / ragged / fp16 named), or 'control' for an unchanged scenario."""
    if sid not in changed:
        return "control (unchanged)"
    head = re.match(r"(d\d+-h\d+-\d+)", sid).group(1)
    if re.search(r"-q\d+-k\d+", sid):
        head += "-prefill"
    elif (m := re.search(r"-s(\d+)", sid)) and int(m.group(1)) % 512:
        head += "-ragged"
    if "-fp16" in sid:
        head += "-fp16"
    mask = "causal" if sid.endswith("-causal") else "full"
    return f"{head} {mask} {'S<=4k' if length(sid) <= 4096 else 'S>4k'}"


def per_scenario(cmp: dict) -> dict[str, dict]:
    """Scenario id -> {'best', 'cand', 'fa3': geomean ms over the rounds, 'best_runs'/'cand_runs': ms per run, 'ok'}.
    FA3's time is the geomean over every run of the scenario (it is timed beside each)."""
    cands = cmp.get("candidates") or []
    out: dict[str, dict] = {}
    for role, c in zip(("best", "cand"), cands[:2]):
        for run in c.get("runs") or []:
            for s in run.get("scenarios") or []:
                e = out.setdefault(s["id"], {"best_runs": [], "cand_runs": [], "fa3_runs": [], "ok": True})
                if not s.get("ok"):
                    e["ok"] = False
                    continue
                if isinstance(s.get("time_ms"), (int, float)) and s["time_ms"] > 0:
                    e[f"{role}_runs"].append(float(s["time_ms"]))
                fa3 = (s.get("baselines") or {}).get("fa3")
                if isinstance(fa3, (int, float)) and fa3 > 0:
                    e["fa3_runs"].append(float(fa3))
    for e in out.values():
        e["best"], e["cand"], e["fa3"] = geomean(e["best_runs"]), geomean(e["cand_runs"]), geomean(e["fa3_runs"])
    return out


def _ratio(a, b):
    return a / b if a and b else None


def rows_of(name: str, cmp: dict) -> list[dict]:
    """One row per family of this candidate's scenarios, then 'all changed' and the control row."""
    changed = {p["id"] for p, _, _ in dispatch_model.changed(name)} if name in dispatch_model.CANDIDATES else set()
    per = per_scenario(cmp)
    groups: dict[str, list[str]] = {}
    for sid in per:
        groups.setdefault(family(sid, changed), []).append(sid)
    labels = sorted(g for g in groups if not g.startswith("control"))
    moved = [sid for g in labels for sid in groups[g]]
    order = [(g, groups[g]) for g in labels] + [("all changed", moved)] + \
        [(g, groups[g]) for g in groups if g.startswith("control")]
    rows = []
    for label, ids in order:
        if not ids:
            continue
        speed = [_ratio(per[i]["best"], per[i]["cand"]) for i in ids]
        speed = [x for x in speed if x]
        rows.append({"candidate": name, "family": label, "n": len(ids),
                     "time_best_over_cand": geomean(speed),
                     "min": min(speed) if speed else None, "max": max(speed) if speed else None,
                     "best_vs_fa3": geomean([_ratio(per[i]["fa3"], per[i]["best"]) for i in ids]),
                     "cand_vs_fa3": geomean([_ratio(per[i]["fa3"], per[i]["cand"]) for i in ids]),
                     "all_ok": all(per[i]["ok"] for i in ids), "scenarios": ids})
    return rows


def _fmt(v) -> str:
    return f"{v:.3f}" if isinstance(v, float) else "-"


def render_scenarios(results: list[dict]) -> str:
    """Per candidate and scenario: both kernels' ms, best/cand (geomean) and its range over the rounds, vs FA3."""
    lines = [f"{'candidate':9} {'scenario':34} {'best ms':>8} {'cand ms':>8} {'best/cand':>9} {'rounds':>13} "
             f"{'best:FA3':>8} {'cand:FA3':>8}"]
    for r in results:
        for sid, e in (r.get("scenarios") or {}).items():
            per_round = [b / c for b, c in zip(e["best_runs"], e["cand_runs"])]
            span = f"{min(per_round):.3f}..{max(per_round):.3f}" if per_round else "-"
            lines.append(f"{r['candidate']:9} {sid:34} {_fmt(e['best']):>8} {_fmt(e['cand']):>8} "
                         f"{_fmt(_ratio(e['best'], e['cand'])):>9} {span:>13} {_fmt(_ratio(e['fa3'], e['best'])):>8} "
                         f"{_fmt(_ratio(e['fa3'], e['cand'])):>8}{'' if e['ok'] else '  NOT CORRECT'}")
    return "\n".join(lines)


def render(results: list[dict]) -> str:
    lines = ["best/cand: the best kernel's time over the candidate's (> 1: candidate faster, geomean over the family);"
             " vs FA3: FA3's time over the kernel's",
             f"{'candidate':9} {'family':34} {'n':>2} {'best/cand':>9} {'min..max':>13} {'best:FA3':>8} "
             f"{'cand:FA3':>8}  note"]
    for r in results:
        if r.get("error"):
            lines.append(f"{r['candidate']:9} {'-':34} {'':>2} {'':>9} {'':>13} {'':>8} {'':>8}  {r['error']}")
            continue
        for row in r["rows"]:
            note = [] if row["all_ok"] else ["NOT CORRECT in a run"]
            if row["family"] == "all changed":
                note.append(f"{r.get('rounds', '?')} rounds{', interrupted' if r.get('interrupted') else ''}")
                if r.get("check"):
                    note.append(f"check {r['check']}")
            span = f"{_fmt(row['min'])}..{_fmt(row['max'])}"
            lines.append(f"{row['candidate']:9} {row['family'][:34]:34} {row['n']:>2} "
                         f"{_fmt(row['time_best_over_cand']):>9} {span:>13} {_fmt(row['best_vs_fa3']):>8} "
                         f"{_fmt(row['cand_vs_fa3']):>8}  {'; '.join(note)}")
    return "\n".join(lines)


def check_status(path: Path) -> str | None:
    """'correct' / the status of a `ks check --json` file, or why it is missing or unreadable."""
    if not path.exists():
        return "not run"
    try:
        doc = json.loads(path.read_text())
    except ValueError:
        return "unreadable (the check was cut off?)"
    bad = [s["id"] for s in doc.get("scenarios") or [] if not s.get("ok")]
    return str(doc.get("status")) + (f" (wrong: {', '.join(bad[:4])})" if bad else "")


def summary(work: Path) -> list[dict]:
    results = []
    for f in sorted(work.glob("cmp-*.json")):
        name = f.stem[len("cmp-"):]
        entry: dict = {"candidate": name, "file": f.name, "check": check_status(work / f"check-{name}.json")}
        try:
            cmp = json.loads(f.read_text())
        except ValueError:
            entry["error"] = "compare JSON unreadable (cut off before its summary?)"
            results.append(entry)
            continue
        entry.update(rounds=cmp.get("rounds"), interrupted=bool(cmp.get("interrupted")), failed=cmp.get("failed"),
                     seeds=cmp.get("seeds"), order=cmp.get("order"))
        if not cmp.get("rounds"):
            entry["error"] = "no complete round"
        entry["rows"] = rows_of(name, cmp)
        entry["scenarios"] = {sid: {k: v for k, v in e.items()} for sid, e in per_scenario(cmp).items()}
        results.append(entry)
    return results


def plan(name: str, ids: list[str]) -> int:
    known = {p["id"] for p in dispatch_model.scenarios()}
    bad = [i for i in ids if i not in known]
    if bad:
        print(f"plan: not a scenario of flash_attn_fwd: {', '.join(bad)}", file=sys.stderr)
        return 2
    if name not in dispatch_model.CANDIDATES:
        print(f"plan: no candidate {name!r} (known: {', '.join(dispatch_model.CANDIDATES)})", file=sys.stderr)
        return 2
    changed = {p["id"] for p, _, _ in dispatch_model.changed(name)}
    for i in ids:
        print(f"{name:9} {i:34} {'changed' if i in changed else 'control'}")
    return 0


GRID = Path(__file__).resolve().parents[1] / "results/2026-12-07-h100-fa3/best-full-fa3.json"


def fake(argv: list[str]) -> int:
    """`fake check ...` / `fake lab compare ...`, for candidates.sh's KS_DRY_RUN=2: the JSON the real command would
    print, made from a committed H100 grid with FA3 (every file reads as best did there), so the script's own logic
    (budgets, file names, the tables, the tarball) runs without a GPU."""
    ap = argparse.ArgumentParser(prog="fake")
    ap.add_argument("words", nargs="+")
    ap.add_argument("--source")
    ap.add_argument("--scenarios", nargs="+", default=[])
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--times", action="store_true")
    a = ap.parse_args(argv)
    grid = {s["id"]: s for s in json.loads(GRID.read_text())["scenarios"]}
    missing = [i for i in a.scenarios if i not in grid]
    if missing:
        print(f"fake: not a scenario: {', '.join(missing)}", file=sys.stderr)
        return 2
    run = {"status": "correct", "scenarios": [grid[i] for i in dict.fromkeys(a.scenarios)]}
    if a.words[0] == "check":
        print(json.dumps(run))
        return 0
    files = [w.split("=", 1) for w in a.words[3:]]
    order = [n for r in range(a.rounds) for n, _ in (files if r % 2 == 0 else files[::-1])]
    print(json.dumps({"rounds": a.rounds, "seeds": list(range(a.rounds)), "order": order, "failed": {},
                      "candidates": [{"name": n, "source": f, "runs": [run] * a.rounds} for n, f in files]}))
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["fake"]:
        return fake(argv[1:])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("summary")
    s.add_argument("work", type=Path)
    s.add_argument("--json", type=Path)
    p = sub.add_parser("plan")
    p.add_argument("name")
    p.add_argument("ids", nargs="+")
    a = ap.parse_args(argv)
    if a.cmd == "plan":
        return plan(a.name, a.ids)
    if not a.work.is_dir():
        print(f"summary: {a.work} is not a folder", file=sys.stderr)
        return 2
    results = summary(a.work)
    if a.json:
        a.json.write_text(json.dumps(results, indent=1))
    # per scenario first, the family table last (the end of the log is what a device call's reply shows)
    print(render_scenarios(results) + "\n\n" + render(results) if results else f"summary: no cmp-*.json in {a.work}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
