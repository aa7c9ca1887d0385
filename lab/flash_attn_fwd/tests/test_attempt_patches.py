"""Every prepared attempt (`attempts/NAME.patch`) still applies to best/kernel.cu and names its summary and a bank
question that exists, so a device call that names it cannot stop at its plan check (session.sh exits 2 there)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

LAB = Path(__file__).resolve().parents[1]
REPO = LAB.parents[1]
BEST = REPO / "kernels" / "flash_attn_fwd" / "best" / "kernel.cu"
PATCHES = sorted((LAB / "attempts").glob("*.patch"))
QUESTIONS = {q["id"] for q in yaml.safe_load((REPO / "question_bank.yaml").read_text())["questions"]}


def test_there_are_prepared_attempts():
    assert {"pingpong", "pingpong2", "pingc128", "pingc2128", "gqa4mb", "narrow2", "lanes"} <= {p.stem for p in PATCHES}


@pytest.mark.parametrize("patch", PATCHES, ids=lambda p: p.stem)
def test_each_patch_applies_and_names_its_summary_and_question(patch, tmp_path):
    head = patch.read_text().split("\n--- ", 1)[0].splitlines()
    fields = dict(line.split(": ", 1) for line in head if ": " in line)
    assert fields.get("Summary"), f"{patch.name}: no Summary line"
    assert fields.get("Question") in QUESTIONS, f"{patch.name}: question {fields.get('Question')!r} not in the bank"
    shutil.copy(BEST, tmp_path / "kernel.cu")
    r = subprocess.run(["git", "apply", "--check", str(patch)], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, f"{patch.name} no longer applies to best/kernel.cu: {r.stderr}"
