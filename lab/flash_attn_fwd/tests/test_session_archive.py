"""The kept `ks session export` archive still imports: a clone of this repository takes the session back with every
attempt, and `ks log` reads it as the committed attempts log does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
RESULTS = REPO / "lab" / "flash_attn_fwd" / "results"
SESSION = "20261203-194412-15bf"
BASE = "23887a6cd3b7"  # the commit the session started from; a shallow clone lacks it


def _git(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.mark.timeout(600)
def test_the_session_export_imports_into_a_clone(tmp_path):
    if _git("cat-file", "-e", f"{BASE}^{{commit}}", cwd=REPO).returncode != 0:
        pytest.skip("this checkout lacks the session's base commit (a shallow clone)")
    clone = tmp_path / "clone"
    assert _git("clone", "-q", "--shared", str(REPO), str(clone), cwd=tmp_path).returncode == 0
    env = dict(os.environ, PYTHONPATH=str(REPO))

    def ks(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "ks_tui", *args], cwd=clone, env=env, capture_output=True,
                              text=True, timeout=300)

    out = ks("session", "import", str(RESULTS / f"ks_session_{SESSION}.tar.gz"))
    assert out.returncode == 0, out.stderr
    log = ks("log", "-s", SESSION, "--json")
    assert log.returncode == 0, log.stderr
    now = json.loads(log.stdout)
    then = json.loads((RESULTS / f"attempts_log_{SESSION}.json").read_text())
    assert [a["number"] for a in now["attempts"]] == [a["number"] for a in then["attempts"]]
    assert [a["sha"] for a in now["attempts"]] == [a["sha"] for a in then["attempts"]]
    assert now["best"] == then["best"]
