"""The flash_attn_fwd speed-of-light table per family: the best kernel and FA3, from one bench run.

One `ks bench flash_attn_fwd --source <kernel> --json` times the kernel and every baseline interleaved on
the same inputs and clock; each scenario's speed-of-light limit (compute, memory or the exponentials,
harness/sol.py) does not depend on who runs it, so FA3's fraction is that limit over FA3's time in the same
run. Per family (a head configuration and mask across the seven lengths): geomean fraction of each, and
the kernel's speed over FA3's.

    python benchmarks/sol_table.py                      # the best kernel, all 182 scenarios (GPU)
    python benchmarks/sol_table.py --quick              # the quick subset
    python benchmarks/sol_table.py --from-json R.json   # the table of a saved `ks bench --json` result

Prints a Markdown table and writes it, with the numbers as JSON, to benchmarks/results/ (--out to change).
Exit 2 when the run gives no table (no GPU, no result).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TASK = "flash_attn_fwd"
KERNEL = ROOT / "kernels" / TASK / "best" / "kernel.cu"
LIBRARY = "fa3"


def geomean(values) -> float | None:
    vals = [v for v in values if v]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else None


def table(result: dict, library: str = LIBRARY) -> dict:
    """{families: [{family, n, kernel, library, speed, bounds}], all: {...}, ...} from a bench result."""
    fams: dict[str, dict] = {}
    for s in result.get("scenarios") or []:
        sol = s.get("speed_of_light") or {}
        limit, t = sol.get("limit_ms"), s.get("time_ms")
        if not limit or not t or s.get("invalid"):
            continue
        lib_t = (s.get("baselines") or {}).get(library)
        f = fams.setdefault(s.get("family") or s["id"], {"kernel": [], "library": [], "speed": [], "bounds": {}})
        f["kernel"].append(limit / t)
        if lib_t:
            f["library"].append(limit / lib_t)
            f["speed"].append(lib_t / t)
        f["bounds"][sol["bound"]] = f["bounds"].get(sol["bound"], 0) + 1
    rows = [{"family": name, "n": len(f["kernel"]), "kernel": geomean(f["kernel"]), "library": geomean(f["library"]),
             "speed": geomean(f["speed"]), "bounds": f["bounds"]} for name, f in fams.items()]
    every = {k: [x for f in fams.values() for x in f[k]] for k in ("kernel", "library", "speed")}
    skipped = sorted({why for s in result.get("scenarios") or []
                      for name, why in (s.get("skipped_baselines") or {}).items() if name == library})
    return {"device": result.get("device"), "library": library, "families": rows,
            "all": {"n": len(every["kernel"]), **{k: geomean(v) for k, v in every.items()}},
            "invalid": result.get("invalid", 0), "peaks": result.get("peaks"), "clocks": result.get("clocks"),
            "library_missing": skipped, "geomean_speedup": result.get("geomean_speedup")}


def markdown(t: dict, kernel_name: str = "kernel") -> str:
    def pct(x):
        return "-" if x is None else f"{x * 100:.1f}%"

    def speed(x):
        return "-" if x is None else f"{x:.3f}x"

    lib = t["library"].upper()
    lines = [f"Speed of light per family on {t['device']}: {kernel_name} and {lib} from one run "
             "(time at the limit / measured time; geomean over the family's lengths)", "",
             f"| family | n | bound | {kernel_name} | {lib} | {kernel_name} vs {lib} |",
             "|---|---:|---|---:|---:|---:|"]
    for r in t["families"]:
        bound = ", ".join(f"{b} {n}" if len(r["bounds"]) > 1 else b for b, n in r["bounds"].items())
        lines.append(f"| {r['family']} | {r['n']} | {bound} | {pct(r['kernel'])} | {pct(r['library'])} | "
                     f"{speed(r['speed'])} |")
    a = t["all"]
    lines.append(f"| **all** | {a['n']} | | {pct(a['kernel'])} | {pct(a['library'])} | {speed(a['speed'])} |")
    peaks = t.get("peaks") or {}
    if peaks:
        tf = ", ".join(f"{d} {v:.0f} TFLOP/s" for d, v in (peaks.get("matmul_tflops") or {}).items())
        info = peaks.get("device_info") or {}
        lines += ["", f"Peaks (measured): matmul {tf}; copy {peaks.get('copy_gbps') or 0:.0f} GB/s; exponentials "
                  f"16/clk/SM x {info.get('sm_count')} SMs x {info.get('max_clock_mhz')} MHz."]
    if t.get("library_missing"):
        lines += ["", f"{lib} did not run: {'; '.join(t['library_missing'])[:300]}"]
    if t.get("invalid"):
        lines += ["", f"{t['invalid']} scenario(s) had an invalid timing and are left out."]
    return "\n".join(lines) + "\n"


def run_bench(kernel: Path, quick: bool, scenarios: list[str] | None) -> dict:
    cmd = [sys.executable, "-m", "ks_tui", "bench", TASK, "--source", str(kernel), "--json"]
    if quick:
        cmd.append("--quick")
    if scenarios:
        cmd += ["--scenarios", *scenarios]
    out = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)  # progress stays on stderr
    try:
        return json.loads(out.stdout)
    except ValueError:
        raise SystemExit(f"sol_table: ks bench gave no result (exit {out.returncode})") from None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernel", type=Path, default=KERNEL, help="kernel file (default: the task's best kernel)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--scenarios", nargs="+")
    ap.add_argument("--from-json", type=Path, metavar="RESULT", help="a saved `ks bench --json` result")
    ap.add_argument("--out", type=Path, help="file stem to write .md and .json (default benchmarks/results/...)")
    args = ap.parse_args(argv)
    if args.from_json:
        try:
            result = json.loads(args.from_json.read_text())
        except (OSError, ValueError) as e:
            print(f"sol_table: cannot read {args.from_json}: {e}", file=sys.stderr)
            return 2
    else:
        result = run_bench(args.kernel.resolve(), args.quick, args.scenarios)
    if result.get("error") or not result.get("scenarios"):
        print(f"sol_table: no scenarios in the result: {result.get('error') or result.get('message')}", file=sys.stderr)
        return 2
    t = table(result)
    if not t["families"]:
        print(f"sol_table: no timed scenario with a speed of light (status {result.get('status')}: "
              f"{result.get('message')})", file=sys.stderr)
        return 2
    t["kernel"] = str(args.kernel)
    name = "best" if args.kernel.resolve() == KERNEL.resolve() else args.kernel.stem
    text = markdown(t, name)
    print(text, end="")
    slug = re.sub(r"[^a-z0-9]+", "-", (t["device"] or "device").lower()).strip("-")
    stem = args.out or ROOT / "benchmarks" / "results" / f"sol_{TASK}_{slug}"
    stem.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{stem}.md").write_text(text)
    Path(f"{stem}.json").write_text(json.dumps(t, indent=1) + "\n")
    print(f"written: {stem}.md, {stem}.json", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
