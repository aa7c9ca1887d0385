"""nvcc's host optimisation level on the best kernel: wall and phases, pairs taking turns, device code compared.

    python3 lab/flash_attn_fwd/scripts/nvcc_host_level.py --pairs 4 --out DIR

Runs the harness's own nvcc command (ks_tui.harness.build.compile_command with the task's flags) in a fresh temp
folder, once with the host at -O1 (the harness's level) and once with -O3 appended, alternating, with
`nvcc --time` for the phases; then compares the .nv_fatbin sections (objcopy). Writes DIR/nvcc_host_level.json.
CPU only.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from ks_tui.harness.build import compile_command
from ks_tui.task import load_task

ROOT = Path(__file__).resolve().parents[3]


def one(cmd: list[str], src: Path, d: Path) -> dict:
    """One cold build in folder `d` (always the same one: nvcc names the module after the source's path, so the
    device code of builds in different folders differs by those names)."""
    for f in d.iterdir():
        f.unlink()
    (d / "kernel.cu").write_bytes(src.read_bytes())
    t0 = time.perf_counter()
    r = subprocess.run([*cmd, "--time", "t.csv"], cwd=d, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode:
        raise SystemExit(f"nvcc failed:\n{r.stderr[-2000:]}")
    phases: dict[str, float] = {}
    with open(d / "t.csv") as f:
        for raw in csv.DictReader(f, skipinitialspace=True):
            row = {k.strip(): v for k, v in raw.items() if k}
            name = row["phase name"].strip()
            if name == "nvcc (driver)":
                continue
            key = name if name not in phases else name + " (link)"
            phases[key] = round(float(row["metric"]) / 1e3, 3)
    fb = d / "fb.bin"
    subprocess.run(["objcopy", "-O", "binary", "--only-section=.nv_fatbin", "kernel.so", str(fb)], cwd=d,
                   check=True)
    return {"wall_s": round(wall, 3), "phases_s": phases,
            "device_sha256": hashlib.sha256(fb.read_bytes()).hexdigest()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--source", default=str(ROOT / "kernels/flash_attn_fwd/best/kernel.cu"))
    ap.add_argument("--out", default=".")
    a = ap.parse_args()
    task = load_task(ROOT / "kernels/flash_attn_fwd", ROOT)
    base = compile_command(task.language, task.build.compiler, task.build.flags, task.build.arch,
                           "kernel.cu", "kernel.so")
    variants = {"O1": base, "O3": base[:-3] + ["-O3"] + base[-3:]}  # before "-o kernel.so kernel.cu"
    runs: dict[str, list[dict]] = {k: [] for k in variants}
    folder = Path(tempfile.mkdtemp(prefix="ks-nvcc-"))
    for i in range(a.pairs):
        for name in (list(variants) if i % 2 == 0 else list(variants)[::-1]):
            runs[name].append(one(variants[name], Path(a.source), folder))
            print(name, runs[name][-1]["wall_s"], runs[name][-1]["phases_s"].get("gcc (compiling)"), flush=True)
    summary = {name: {"wall_median_s": statistics.median(r["wall_s"] for r in rs),
                      "host_gcc_median_s": statistics.median(r["phases_s"]["gcc (compiling)"] for r in rs),
                      "cicc_median_s": statistics.median(r["phases_s"]["cicc"] for r in rs),
                      "ptxas_median_s": statistics.median(r["phases_s"]["ptxas"] for r in rs)}
               for name, rs in runs.items()}
    same = len({r["device_sha256"] for rs in runs.values() for r in rs}) == 1
    out = {"command": " ".join(variants["O1"]), "cpus": os.cpu_count(), "pairs": a.pairs,
           "device_code_identical": same, "summary": summary, "runs": runs}
    Path(a.out).mkdir(parents=True, exist_ok=True)
    (Path(a.out) / "nvcc_host_level.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps({"device_code_identical": same, **summary}, indent=1))


if __name__ == "__main__":
    main()
