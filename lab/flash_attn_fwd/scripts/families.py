"""Per-family view of full-bench result JSONs: the "What limits" tables of NOTES.md, made by a command.

Usage (repo root):
    python3 -m lab.flash_attn_fwd.scripts.families A.json [B.json ...]
        one row per scenario family (head dim d96/d128 together, d64, d256; mask; s_k <= 2048 or longer):
        n, each file's geomean speedup over the fastest baseline, the kernel-time ratio time(A) / time(X)
        against the first file, and the last file's lowest scenario. Speedups move with the baselines between
        device calls (~1%); the kernel-time ratio of two files from one call is the comparison to trust.
    python3 -m lab.flash_attn_fwd.scripts.families --goal 1.20 A.json [B.json ...]
        the same with one more column: how much the whole grid's geomean would gain if that family alone
        reached the goal (from the last file; 0 where it is there already), and a last line with every
        family at the goal together (issue 8's milestone 4 is 1.20).
    python3 -m lab.flash_attn_fwd.scripts.families --rows A.json [B.json ...]
        the d96/d128 families split by tile height (128 or 192 rows, best/kernel.cu's dispatch, `rows_of`):
        the functions a change to the 128-row or the 192-row code touches, so one full-grid A/B of a file that
        changes disjoint functions reads each change on its own rows.
    python3 -m lab.flash_attn_fwd.scripts.families --against fa3 A.json
        per task family (head configuration and mask, the grid's own names): the geomean of the paired ratio
        against that library, the kernel's and the library's fraction of the speed of light (the harness's
        roofline time over the measured time) and the ceiling (the library's time over the roofline time: the
        speedup a kernel at the speed of light would have), with the family's lowest scenario.
    python3 -m lab.flash_attn_fwd.scripts.families --by-duration fa3 A.json
        the scenarios whose kernel call takes at least 5 ms, by that time: the kernel's and the library's median
        and TFLOP/s, the paired ratio, the kernel's time alone over its median, its clock range; then the paired
        ratio's geomean per band of call time. Under the power cap a library whose TFLOP/s grows with the call's
        length while the kernel's does not points at the order of the calls (what ran just before each), not at
        the code: the harness's order before Successions put the kernel always right after FA3, FA3 right after
        torch's flash. Runs that kept each function's median by the call before it (`timing.after`, since then)
        add, per band, each side's median after each predecessor over its own.
    python3 -m lab.flash_attn_fwd.scripts.families --fit A.json [B.json ...]
        per tile kind of the unmasked launches, a least-squares fit of the time a tile takes per wave,
        t = a + b x key blocks: b is a key block's cost, a what a tile costs besides its blocks (start,
        first softmax, last P V, epilogue). Tiles and key blocks follow best/kernel.cu's dispatch (v33):
        d64 192 rows; d96/d128 192 rows where ceil(tiles / 132) x rows is within 3.5% of 128-row tiles'
        (v45: a 192-row tile counted in live 64-row units), else 128; d256 128; 128-key blocks, but 160 on
        128-row d96/d128 tiles at s_k > 2048. If the dispatch changes, change `tile_kind` with it. The last
        column is the largest residual, a share of t:
        where it is large the line does not fit (long launches: a key block costs less the longer the launch,
        which the intercept then absorbs).

A file may be a result JSON or a `ks try --json` document (the attempt and its result). A file that cannot be read,
or holds no scenarios, gives one line and exit code 2.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

SMS = 132  # the H200's SM count: one persistent CTA an SM
SHORT_SK = 2048  # the short / long split of the families (best/kernel.cu's kTmaEpilogueMaxSk, for d64 and d256)


class InputError(Exception):
    pass


def load(path: str) -> dict[str, dict]:
    """Scenario id -> scenario of one result JSON (correct, timed scenarios only)."""
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as ex:
        raise InputError(f"{path}: not a result JSON ({ex})") from None
    if isinstance(data, dict) and isinstance(data.get("result"), dict):  # `ks try --json`: the attempt and its result
        data = data["result"]
    scenarios = data.get("scenarios") if isinstance(data, dict) else None
    if not isinstance(scenarios, list):
        raise InputError(f"{path}: not a result JSON (no scenario list)")
    out = {}
    for s in scenarios:
        if not (isinstance(s, dict) and isinstance(s.get("shape"), dict) and s.get("ok")):
            continue
        if s.get("time_ms") and s.get("speedup"):
            out[s["id"]] = s
    if not out:
        raise InputError(f"{path}: no correct, timed scenario")
    return out


def family(shape: dict, by_rows: bool = False) -> str:
    d = shape["d"]
    dims = "d96/d128" if d in (96, 128) else f"d{d}"
    if by_rows and d in (96, 128):
        dims += f" {rows_of(shape)}r"
    mask = "causal" if shape["causal"] else "unmasked"
    keys = f"s_k <= {SHORT_SK}" if shape["s_k"] <= SHORT_SK else f"s_k > {SHORT_SK}"
    return f"{dims} {mask} {keys}"


def rows_of(shape: dict) -> int:
    """Rows a tile for either mask, as best/kernel.cu's dispatch picks them: unmasked by the wave rule (`tile_kind`);
    causal d96/d128 on 192 rows only past s_k 2048, where they pad s_q at most 1% more than 128-row tiles (v29) or
    s_q = s_k (v45: the padding is dead warpgroups, which skip)."""
    if not shape["causal"]:
        return tile_kind(shape)[0]
    d, s_q = shape["d"], shape["s_q"]
    if d <= 64:
        return 192
    if d > 128 or shape["s_k"] <= SHORT_SK:
        return 128
    if s_q == shape["s_k"]:
        return 192
    return 192 if -(-s_q // 192) * 192 * 100 <= -(-s_q // 128) * 128 * 101 else 128


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def grid_gain(speedups: list[float], total: int, goal: float) -> float:
    """What a grid of `total` scenarios gains in geomean if these scenarios' geomean rose to `goal` (0 if it is
    there already): exp(n / total x ln(goal / geomean)) - 1."""
    g = geomean(speedups)
    return math.exp(len(speedups) / total * math.log(goal / g)) - 1 if g < goal else 0.0


def family_rows(runs: list[tuple[str, dict[str, dict]]], goal: float | None = None, by_rows: bool = False) -> list[str]:
    first = runs[0][1]
    last = runs[-1][1]
    common = [sid for sid in first if all(sid in r for _, r in runs)]
    groups: dict[str, list[str]] = {}
    for sid in common:
        groups.setdefault(family(first[sid]["shape"], by_rows), []).append(sid)
    w = max([30] + [len(name) + 2 for name in groups])  # the name column: 30, wider for the --rows names
    head = f"{'family':{w}s}{'n':>4s}" + "".join(f"{'speedup[' + str(i) + ']':>12s}" for i in range(len(runs)))
    head += "".join(f"{'kt0/kt' + str(i):>9s}" for i in range(1, len(runs)))
    head += f"{'grid at ' + format(goal, '.2f'):>14s}" if goal else ""
    lines = [head + "   lowest (last file)"]

    def row(name: str, ids: list[str]) -> str:
        text = f"{name:{w}s}{len(ids):4d}"
        text += "".join(f"{geomean([r[i]['speedup'] for i in ids]):12.4f}" for _, r in runs)
        text += "".join(f"{geomean([first[i]['time_ms'] / r[i]['time_ms'] for i in ids]):9.3f}" for _, r in runs[1:])
        if goal:
            text += f"{grid_gain([last[i]['speedup'] for i in ids], len(common), goal):+14.2%}"
        low = min(ids, key=lambda i: last[i]["speedup"])
        return text + f"   {low} {last[low]['speedup']:.3f}"

    for name in sorted(groups):
        lines.append(row(name, groups[name]))
    lines.append(row("all", common))
    if goal:
        # every family at the goal at once: the gains multiply (each is a factor on the grid's geomean)
        together = math.prod(1 + grid_gain([last[i]["speedup"] for i in ids], len(common), goal)
                             for ids in groups.values()) - 1
        lines.append(f"every family at {goal:.2f} together: the grid {together:+.2%}")
    return lines


def paired_ratio(s: dict, lib: str) -> float:
    """The scenario's ratio against library `lib`: its call over the kernel's of the same turn (the medians' ratio
    where the run has no pairs)."""
    paired = (s.get("timing") or {}).get("paired") or {}
    return paired.get(lib) or s["baselines"][lib] / s["time_ms"]


def against_rows(run: dict[str, dict], lib: str) -> list[str]:
    """Per task family (the grid's own `family` names: head configuration and mask): the geomean of the paired ratio
    against library `lib` (its call over the kernel's of the same turn; the medians' ratio where a run has no pairs),
    the kernel's and the library's fraction of the scenario's speed of light (the harness's roofline time over the
    measured time), and the ceiling: the speedup over `lib` of a kernel at the speed of light."""
    groups: dict[str, list[dict]] = {}
    for s in run.values():
        lib_ms = (s.get("baselines") or {}).get(lib)
        limit = (s.get("speed_of_light") or {}).get("limit_ms")
        if lib_ms and limit:
            groups.setdefault(s.get("family") or family(s["shape"]), []).append(s)
    if not groups:
        raise InputError(f"no scenario has a {lib} time and a speed-of-light limit")

    head = f"{'family':28s}{'n':>4s}{'vs ' + lib:>10s}{'ours/SoL':>10s}{lib + '/SoL':>10s}{'ceiling':>9s}   lowest vs {lib}"
    lines = [head]

    def row(name: str, ss: list[dict]) -> str:
        low = min(ss, key=lambda s: paired_ratio(s, lib))
        return (f"{name:28s}{len(ss):4d}{geomean([paired_ratio(s, lib) for s in ss]):10.4f}"
                f"{geomean([s['speed_of_light']['limit_ms'] / s['time_ms'] for s in ss]):10.3f}"
                f"{geomean([s['speed_of_light']['limit_ms'] / s['baselines'][lib] for s in ss]):10.3f}"
                f"{geomean([s['baselines'][lib] / s['speed_of_light']['limit_ms'] for s in ss]):9.3f}"
                f"   {low['id']} {paired_ratio(low, lib):.3f}")

    for name in sorted(groups, key=lambda n: (int(n.split("-")[0][1:]), n)):
        lines.append(row(name, groups[name]))
    lines.append(row("all", [s for ss in groups.values() for s in ss]))
    return lines


LONG_MS = 5.0  # --by-duration: calls shorter than this see the power cap's clock for a few ms at most
BANDS_MS = (5.0, 10.0, 20.0, 40.0)


def tflops(s: dict, ms: float) -> float:
    """TFLOP/s of a call of `ms` on the scenario, from the harness's own count (the kernel's `tflops` at its median)."""
    return s["tflops"] * s["time_ms"] / ms


def duration_rows(run: dict[str, dict], lib: str) -> list[str]:
    """The long calls, by the kernel's median time, against library `lib` (see the module's usage)."""
    long = sorted((s for s in run.values()
                   if s["time_ms"] >= LONG_MS and s.get("tflops") and (s.get("baselines") or {}).get(lib)),
                  key=lambda s: s["time_ms"])
    if not long:
        raise InputError(f"no scenario of at least {LONG_MS:g} ms has a {lib} time")

    lines = [f"{'scenario':32s}{'ours ms':>9s}{'TF':>6s}{lib + ' ms':>9s}{'TF':>6s}{'paired':>8s}"
             f"{'alone/med':>10s}  clock MHz"]
    for s in long:
        lib_ms, timing = s["baselines"][lib], s.get("timing") or {}
        alone = f"{timing['alone_ms'] / s['time_ms']:.3f}" if timing.get("alone_ms") else "-"
        clock = "-".join(str(c) for c in s.get("clock_mhz") or []) or "-"
        lines.append(f"{s['id']:32s}{s['time_ms']:9.3f}{tflops(s, s['time_ms']):6.0f}{lib_ms:9.3f}"
                     f"{tflops(s, lib_ms):6.0f}{paired_ratio(s, lib):8.3f}{alone:>10s}  {clock}")
    lines.append("paired ratio by the kernel's call time:")
    edges = (*BANDS_MS, math.inf)
    for lo, hi in zip(edges, edges[1:]):
        band = [s for s in long if lo <= s["time_ms"] < hi]
        if band:
            name = f"{lo:g}-{hi:g} ms" if hi != math.inf else f">= {lo:g} ms"
            lines.append(f"  {name:12s}{len(band):4d} scenarios  {geomean([paired_ratio(s, lib) for s in band]):.4f}"
                         f"  ours {geomean([tflops(s, s['time_ms']) for s in band]):.0f} TF,"
                         f" {lib} {geomean([tflops(s, s['baselines'][lib]) for s in band]):.0f} TF")
    lines += carryover_rows(long, lib, edges)
    return lines


def carryover_rows(long: list[dict], lib: str, edges: tuple[float, ...]) -> list[str]:
    """Where the run kept each function's median by the call just before it (the harness's `timing.after` and
    `timing.baselines_after`, since the seventh stop): per band, the geomean of that median over the function's
    own, for the kernel and for `lib`, by predecessor (`sync`: a block's first call). A predecessor that moves one
    side and not the other is the carry-over the balanced order spreads evenly."""
    def side(s: dict, who: str) -> tuple[dict, float] | None:
        timing = s.get("timing") or {}
        after = timing.get("after") if who == "kernel" else (timing.get("baselines_after") or {}).get(who)
        median = s["time_ms"] if who == "kernel" else s["baselines"][who]
        return (after, median) if after else None

    if not any(side(s, "kernel") for s in long):
        return []
    lines = ["each side's median by the call just before it, over its own median (timing.after):"]
    for lo, hi in zip(edges, edges[1:]):
        band = [s for s in long if lo <= s["time_ms"] < hi]
        for who in ("kernel", lib):
            got = [x for x in (side(s, who) for s in band) if x]
            if not got:
                continue
            before = sorted({b for after, _ in got for b in after})
            cells = []
            for b in before:
                ratios = [after[b] / median for after, median in got if b in after]
                cells.append(f"{b} {geomean(ratios):.3f}")
            name = f"{lo:g}-{hi:g} ms" if hi != math.inf else f">= {lo:g} ms"
            lines.append(f"  {name:12s}{who:>12s} after: " + ", ".join(cells))
    return lines


def tile_kind(shape: dict) -> tuple[int, int]:
    """(rows a tile, keys a block) of best/kernel.cu's dispatch (v36: 128-key blocks everywhere; v15-v35 ran 160 on
    d96/d128's long 128-row tiles) for an unmasked launch."""
    d, s_q = shape["d"], shape["s_q"]
    if d <= 64:
        return 192, 128
    if d > 128:
        return 128, 128
    bh = shape["b"] * shape["h_q"]
    # v45: a 192-row tile's dead warpgroups skip, so it counts in live 64-row units, three a tile
    waves192 = -(-bh * -(-s_q // 64) // (3 * SMS)) * 192
    waves128 = -(-bh * -(-s_q // 128) // SMS) * 128
    if waves192 * 1000 <= waves128 * 1035:
        return 192, 128
    return 128, 128


def work_items(shape: dict) -> int:
    """Work items a launch hands its consumer warpgroups under best/kernel.cu's dispatch: one a tile, except (v46)
    an unmasked 192-row d96/d128 launch whose last wave holds k tiles with 3k <= the grid: those k tiles go out as
    3k pieces of 64 rows, less the pieces wholly past s_q (the producer skips them). Unmasked tiles run bh-major,
    so tile t is query block t % (tiles a head)."""
    rows = rows_of(shape)
    per_head = -(-shape["s_q"] // rows)
    tiles = shape["b"] * shape["h_q"] * per_head
    grid = min(tiles, SMS)
    k = tiles % grid
    if shape["causal"] or rows != 192 or not 64 < shape["d"] <= 128 or k == 0 or 3 * k > grid:
        return tiles
    pieces = sum(1 for t in range(tiles - k, tiles) for part in range(3)
                 if (t % per_head) * rows + 64 * part < shape["s_q"])
    return tiles - k + pieces


def fit(points: list[tuple[int, float]]) -> tuple[float, float] | None:
    """Least squares t = a + b x over (x, t); None without two distinct x."""
    xs = [x for x, _ in points]
    if len(set(xs)) < 2:
        return None
    mx = sum(xs) / len(xs)
    my = sum(t for _, t in points) / len(points)
    b = sum((x - mx) * (t - my) for x, t in points) / sum((x - mx) ** 2 for x in xs)
    return my - b * mx, b


def fit_rows(runs: list[tuple[str, dict[str, dict]]]) -> list[str]:
    lines = [f"{'file':28s}{'tiles':24s}{'n':>4s}{'a (us)':>9s}{'b (us)':>9s}{'a / b':>7s}{'resid':>8s}"]
    for name, r in runs:
        groups: dict[tuple, list[tuple[int, float]]] = {}
        for s in r.values():
            sh = s["shape"]
            if sh["causal"]:
                continue  # causal tiles differ in cost: no single t(blocks) per launch
            rows, bn = tile_kind(sh)
            tiles = sh["b"] * sh["h_q"] * -(-sh["s_q"] // rows)
            waves = -(-tiles // SMS)
            short = "short" if sh["s_k"] <= SHORT_SK else "long"
            dims = "d96" if sh["d"] == 96 else f"d{sh['d']}"
            key = (dims, rows, bn, short)
            groups.setdefault(key, []).append((-(-sh["s_k"] // bn), s["time_ms"] * 1000.0 / waves))
        for key in sorted(groups, key=lambda k: (int(k[0][1:]), k[1], k[2], k[3])):
            dims, rows, bn, short = key
            got = fit(groups[key])
            label = f"{dims} {rows}x{bn} {short}"
            if got is None:
                lines.append(f"{name[:27]:28s}{label:24s}{len(groups[key]):4d}   (one key length: no fit)")
                continue
            a, b = got
            resid = max(abs(t - (a + b * x)) / t for x, t in groups[key])
            lines.append(f"{name[:27]:28s}{label:24s}{len(groups[key]):4d}{a:9.2f}{b:9.2f}{a / b:7.2f}{resid:8.1%}")
    return lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="families.py", description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+", metavar="RESULT.json")
    parser.add_argument("--fit", action="store_true", help="per-tile cost fit of the unmasked launches")
    parser.add_argument("--rows", action="store_true", help="split the d96/d128 families by tile height (128 / 192)")
    parser.add_argument("--against", metavar="LIB",
                        help="per task family of the last file: the paired ratio against library LIB (e.g. fa3) and "
                             "each side's fraction of the speed of light")
    parser.add_argument("--by-duration", metavar="LIB",
                        help="the last file's calls of at least 5 ms by their length, against library LIB (e.g. fa3)")
    parser.add_argument("--goal", type=float, metavar="G",
                        help="add what the grid gains if a family alone reached speedup G (the last file's)")
    args = parser.parse_args(argv)
    if args.goal is not None and not args.goal > 0:
        print("families.py: --goal must be a positive speedup (e.g. 1.20)", file=sys.stderr)
        return 2
    try:
        runs = [(Path(f).name.removesuffix(".json"), load(f)) for f in args.files]
    except InputError as ex:
        print(f"families.py: {ex}", file=sys.stderr)
        return 2
    try:
        if args.by_duration:
            lines = duration_rows(runs[-1][1], args.by_duration)
        elif args.against:
            lines = against_rows(runs[-1][1], args.against)
        else:
            lines = fit_rows(runs) if args.fit else family_rows(runs, args.goal, args.rows)
    except InputError as ex:
        print(f"families.py: {ex}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
