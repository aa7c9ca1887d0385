"""The prepared candidates (candidates/*/kernel.cu), their dispatch model and the device script's CPU side:
each candidate changes only host code, the model agrees with the lab's own copy of best's tile rule, each changes
the scenarios its notes name, the script's plan holds, and the summary reads a compare file as the notes say."""

from __future__ import annotations

import copy
import json
import os
import subprocess
from pathlib import Path

import pytest

from lab.flash_attn_fwd.candidates import dispatch_model
from lab.flash_attn_fwd.device import candidates_summary
from lab.flash_attn_fwd.scripts import families

REPO = Path(__file__).resolve().parents[3]
BEST = REPO / "kernels/flash_attn_fwd/best/kernel.cu"
SCRIPT = REPO / "lab/flash_attn_fwd/device/candidates.sh"
HOST = "// ---- host side"


def test_every_modelled_candidate_has_a_patch():
    from lab.flash_attn_fwd.candidates import names

    assert names() == sorted(dispatch_model.CANDIDATES)


@pytest.mark.parametrize("name", dispatch_model.CANDIDATES)
def test_a_candidate_changes_host_code_only(name, tmp_path):
    """Everything above the host side is best's text, so every device function is best's (tested instantiations)."""
    from lab.flash_attn_fwd.candidates import write

    best, cand = BEST.read_text(), write(name, tmp_path).read_text()
    assert best.count(HOST) == 1 and cand.count(HOST) == 1
    assert cand.split(HOST)[0] == best.split(HOST)[0]
    assert cand != best
    includes = [ln.split()[1] for ln in cand.splitlines() if ln.startswith("#include")]
    assert not any(b in i for i in includes for b in ("cutlass", "cute", "cublas", "cudnn", "torch", "ATen"))


def test_the_model_picks_best_s_tile_heights_as_the_lab_does():
    for p in dispatch_model.scenarios():
        inst, _ = dispatch_model.plan("best", p)
        rows = 192 if inst[1] == 192 or inst[0] == 64 else 128
        assert rows == families.rows_of(p), p["id"]


def test_each_candidate_moves_the_launches_its_notes_name():
    c128 = dispatch_model.changed("c128")
    assert len(c128) == 25
    for p, a, c in c128:
        assert p["d"] == 128 and p["causal"] and p["s_k"] > 2048 and a[0][1] == 192 and c[0][1] == 128
    d256 = dispatch_model.changed("d256n64")
    assert len(d256) == 12
    for p, a, c in d256:
        assert p["d"] == 256 and a[0][4] == 80 and c[0][4] == 64 and c[0][3]  # 80 keys -> 64 keys, TMA epilogue
        assert (1024 < p["s_k"] <= 4096) if not p["causal"] else (4096 < p["s_k"] <= 16384)
    gqa = dispatch_model.changed("gqasec")
    assert len(gqa) == 9
    for p, a, c in gqa:
        assert p["h_q"] > p["h_kv"] and p["causal"] and p["s_k"] <= 2048 and a[0] == c[0]  # same function
        assert c[1][0] < a[1][0]  # narrower sections only
    pre = dispatch_model.changed("pre192")
    assert [p["id"] for p, _, _ in pre] == ["d128-h16-16-q2048-k8192", "d128-h16-16-q4096-k16384",
                                            "d128-h16-16-q8192-k32768"]
    for p, a, c in pre:
        tiles = p["b"] * p["h_q"] * -(-p["s_q"] // 192)
        assert c[0][1] == 192 and c[1][2] == tiles + 2 * (tiles % 132)  # the split tail is taken


def _dry_run(tmp_path, **env):
    return subprocess.run(["bash", str(SCRIPT)], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "OUT": str(tmp_path), "KS_DRY_RUN": "1", **env})


def test_the_device_script_plans_each_candidate_with_one_control(tmp_path):
    out = _dry_run(tmp_path)
    assert out.returncode == 0, out.stderr
    for name in dispatch_model.CANDIDATES:
        lines = (tmp_path / "work" / f"plan-{name}.txt").read_text().splitlines()
        assert sum(ln.endswith("control") for ln in lines) == 1, lines
        assert sum(ln.endswith("changed") for ln in lines) >= 3, lines
    assert "plan: d256n64 8+1 x 3 rounds; pre192 3+1 x 2 rounds; gqasec 9+1 x 2 rounds; c128 7+1 x 3 rounds" in out.stdout


def test_the_device_script_refuses_an_unknown_candidate(tmp_path):
    out = _dry_run(tmp_path, KS_CANDIDATES="c128 c256")
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == ["candidates.sh: no candidate c256 (known: "
                                               + out.stderr.split("(known: ")[1].strip()]


def test_the_device_script_runs_through_on_stand_ins(tmp_path):
    """KS_DRY_RUN=2: no build, `ks check` / `ks lab compare` replaced by a stand-in printing a committed H100 grid's
    readings; the script's own logic (the checks' verdicts, the budgets, the files, the table) runs as on the GPU."""
    out = _dry_run(tmp_path, KS_DRY_RUN="2", KS_CANDIDATES="pre192 gqasec")
    assert out.returncode == 0, out.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clock.txt", "runs.tgz", "summary.json", "summary.txt"]
    assert "check pre192: rc 0, correct" in out.stdout and "compare gqasec: rc 0" in out.stdout
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert [r["candidate"] for r in summary] == ["gqasec", "pre192"]
    (pre,) = [r for r in summary[1]["rows"] if r["family"] == "all changed"]
    assert pre["n"] == 3 and pre["time_best_over_cand"] == pytest.approx(1.0)
    assert pre["best_vs_fa3"] == pytest.approx(0.960, abs=0.001)  # the three unmasked prefill launches in that grid
    last = out.stdout.rstrip().splitlines()[-1].split()
    assert last == ["pre192", "control", "(unchanged)", "1", "1.000", "1.000..1.000", "0.973", "0.973"]


def _compare_doc(name: str, faster: float) -> dict:
    """A `ks lab compare --json` document of two files over a committed full grid with FA3: the candidate's
    run is best's with its changed scenarios `faster` times quicker, two rounds."""
    grid = json.loads((REPO / "lab/flash_attn_fwd/results/2026-12-07-h100-fa3/best-full-fa3.json").read_text())
    changed = {p["id"] for p, _, _ in dispatch_model.changed(name)}
    keep = [s for s in grid["scenarios"] if s["id"] in changed or s["id"] == "d128-h16-16-s8192"]
    best_run = {"status": "correct", "scenarios": keep}
    cand_run = copy.deepcopy(best_run)
    for s in cand_run["scenarios"]:
        if s["id"] in changed:
            s["time_ms"] /= faster
    return {"rounds": 2, "seeds": [1, 2], "order": ["best", name, name, "best"], "failed": {},
            "candidates": [{"name": "best", "runs": [best_run, best_run]}, {"name": name, "runs": [cand_run, cand_run]}]}


def test_the_summary_reads_a_compare_file(tmp_path):
    (tmp_path / "cmp-c128.json").write_text(json.dumps(_compare_doc("c128", 1.05)))
    (tmp_path / "cmp-gqasec.json").write_text("{\"rounds\": 1")  # cut off mid-write
    (tmp_path / "check-c128.json").write_text(json.dumps({"status": "correct", "scenarios": [{"id": "x", "ok": True}]}))
    results = candidates_summary.summary(tmp_path)
    c128, gqa = results
    assert gqa["candidate"] == "gqasec" and "unreadable" in gqa["error"]
    assert c128["check"] == "correct" and c128["rounds"] == 2
    rows = {r["family"]: r for r in c128["rows"]}
    assert rows["all changed"]["n"] == 25 and rows["all changed"]["time_best_over_cand"] == pytest.approx(1.05)
    assert rows["control (unchanged)"]["n"] == 1 and rows["control (unchanged)"]["time_best_over_cand"] == pytest.approx(1)
    # FA3 over our time, as the grid file has it: d128-h16-16-s4096-causal read 0.927 there
    fam = rows["d128-h16-16 causal S<=4k"]
    assert fam["scenarios"] == ["d128-h16-16-s4096-causal"]
    assert fam["best_vs_fa3"] == pytest.approx(0.927, abs=0.001)
    assert fam["cand_vs_fa3"] == pytest.approx(0.927 * 1.05, abs=0.002)
    text = candidates_summary.render(results)
    assert "unreadable" in text and "check correct" in text and "2 rounds" in text


def test_the_summary_flags_a_wrong_result(tmp_path):
    doc = _compare_doc("pre192", 1.0)
    (wrong,) = [s for s in doc["candidates"][1]["runs"][0]["scenarios"] if s["id"] == "d128-h16-16-q2048-k8192"]
    wrong["ok"] = False
    (tmp_path / "cmp-pre192.json").write_text(json.dumps(doc))
    (row,) = [r for r in candidates_summary.summary(tmp_path)[0]["rows"] if r["family"] == "all changed"]
    assert not row["all_ok"]
    assert "NOT CORRECT" in candidates_summary.render(candidates_summary.summary(tmp_path))
