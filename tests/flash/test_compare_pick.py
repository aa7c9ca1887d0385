"""compare.py --pick: which candidate a device call benches on the full grid after its A/B.

The A/B results are files like those compare.py writes; the pick runs as device_run.sh runs it
(a child process reading $OUT/work).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "kernels" / "flash_attn_fwd" / "scripts" / "compare.py"


def write(work: Path, tag: str, label: str, name: str, geomean: float, status: str = "correct") -> None:
    (work / f"{tag}{label}-{name}.json").write_text(json.dumps({"status": status, "geomean_speedup": geomean}))


def pick(out: Path, *args: str, min_gain: str | None = None) -> subprocess.CompletedProcess:
    env = {"OUT": str(out), "PATH": "/usr/bin:/bin"}
    if min_gain:
        env["KS_MIN_GAIN"] = min_gain
    return subprocess.run([sys.executable, str(SCRIPT), "--pick", *args], capture_output=True, text=True,
                          env=env, timeout=60)


@pytest.fixture
def work(tmp_path):
    (tmp_path / "work").mkdir()
    return tmp_path


def test_the_best_candidate_that_beats_the_reference_by_the_margin(work):
    w = work / "work"
    write(w, "g1-", "nomask_long", "v13", 1.031)
    write(w, "g1-", "nomask_long", "a", 1.012)
    write(w, "g1-", "nomask_long", "b", 1.055)
    write(w, "g1-", "nomask_long", "c", 1.060, status="incorrect")  # faster but wrong: never picked
    out = pick(work, "g1-", "nomask_long,short", "v13=k.cu", "a=a.cu", "b=b.cu", "c=c.cu")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "b.cu"
    assert "min gain 1.01" in out.stderr


def test_nothing_when_no_candidate_clears_the_margin_or_the_reference_failed(work):
    w = work / "work"
    write(w, "g2-", "quick", "ref", 1.040)
    write(w, "g2-", "quick", "x", 1.045)
    assert pick(work, "g2-", "quick", "ref=r.cu", "x=x.cu").stdout == ""           # +0.5% < 1%
    assert pick(work, "g2-", "quick", "ref=r.cu", "x=x.cu", min_gain="1.004").stdout == "x.cu"
    write(w, "g3-", "quick", "ref", 1.0, status="timeout")
    write(w, "g3-", "quick", "x", 1.2)
    assert pick(work, "g3-", "quick", "ref=r.cu", "x=x.cu").stdout == ""           # no reference
    assert pick(work, "g4-", "quick", "ref=r.cu", "x=x.cu").stdout == ""           # no results at all


def test_a_long_id_list_is_found_under_its_hashed_label(work):
    spec = importlib.util.spec_from_file_location("flash_compare", SCRIPT)
    compare = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(compare)
    ids = "+".join(f"d128-h16-16-s{n}" for n in (512, 1024, 2048, 4096, 8192))
    label = compare.label_of(ids)
    assert label.startswith("ids-") and len(label) < 20
    write(work / "work", "g1-", label, "ref", 1.0)
    write(work / "work", "g1-", label, "x", 1.1)
    assert pick(work, "g1-", ids, "ref=r.cu", "x=x.cu").stdout == "x.cu"
