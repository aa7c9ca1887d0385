"""device/session.sh, the device call that runs a KernelSeek session, on the CPU task: real `ks init`, `ks session new`,
`ks try` (g++, the harness child), git, and the workspace carried from one call to the next."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "lab" / "flash_attn_fwd" / "device" / "session.sh"
KERNEL = "kernels/attention_cpu/kernel.cpp"


def _patch(folder: Path, name: str, text: str, question: str) -> None:
    """NAME.patch: KERNEL with one line put first, in the script's format (summary and question, then the diff)."""
    base = (REPO / KERNEL).read_text().splitlines(keepends=True)
    hunk = "".join(f" {line}" for line in base[:3])
    (folder / f"{name}.patch").write_text(
        f"Summary: {text}\nQuestion: {question}\n\n--- a/kernel.cpp\n+++ b/kernel.cpp\n@@ -1,3 +1,4 @@\n+// {text}\n{hunk}"
    )


def _run(tmp_path: Path, out: str, attempts: str, **env: str) -> subprocess.CompletedProcess:
    full = dict(
        os.environ,
        OUT=str(tmp_path / out),
        KS_WORKSPACE=str(tmp_path / "ws"),
        KS_TASK="attention_cpu",
        KS_BASE_KERNEL=KERNEL,
        KS_PATCH_DIR=str(tmp_path / "patches"),
        KS_TRY_ARGS="--quick",
        KS_TRY_SECONDS="5",
        KS_ATTEMPTS=attempts,
        KS_STANDBY="0",
        **env,
    )
    return subprocess.run(["bash", str(SCRIPT)], cwd=REPO, env=full, capture_output=True, text=True, timeout=600)


@pytest.mark.timeout(900)
def test_a_session_runs_its_tries_and_goes_on_in_the_next_call(tmp_path):
    (tmp_path / "patches").mkdir()
    _patch(tmp_path / "patches", "note", "a first line", "limit-floor")
    # KS_PROFILE on the CPU task: `ks profile` refuses (no CUDA kernel), which the call records and goes past
    first = _run(tmp_path, "call1", "best note", KS_PROFILE="d64-h4-4-q128-k128-b2")
    assert first.returncode == 0, first.stderr
    assert "profile of attempt 1 on d64-h4-4-q128-k128-b2: rc 2" in first.stdout
    # What a call returns: the log, the session, and one archive of the rest
    assert sorted(p.name for p in (tmp_path / "call1").iterdir()) == ["log.txt", "run.tgz", "session.tgz"]
    with tarfile.open(tmp_path / "call1" / "run.tgz") as tar:
        tar.extractall(tmp_path / "call1", filter="data")
    run = tmp_path / "call1" / "run"
    attempts = [json.loads((run / f"try-{i}-{n}.json").read_text()) for i, n in ((1, "best"), (2, "note"))]
    assert all(a["result"]["status"] == "correct" for a in attempts), attempts
    assert "no decision point fires" in (run / "next.txt").read_text()
    assert "attention_cpu is a CPU task" in (run / "profile-1-d64-h4-4-q128-k128-b2.err").read_text()
    log = (tmp_path / "call1" / "log.txt").read_text()
    assert "note: a first line [q:limit-floor]" in log
    assert f"{KERNEL} as it is" in log

    # The next call starts from a fresh workspace and imports the session the first exported (whole): attempt 3
    second = _run(tmp_path, "call2", "best", KS_SESSION_FILE=str(tmp_path / "call1" / "session.tgz"))
    assert second.returncode == 0, second.stderr
    log = (tmp_path / "call2" / "log.txt").read_text()
    numbers = [int(m.group(1)) for m in re.finditer(r"^\*?\s+(\d+)\s+[0-9a-f]{8}\s", log, re.M)]
    assert numbers == [1, 2, 3], log


def test_a_patch_that_does_not_apply_stops_the_call_before_any_try(tmp_path):
    (tmp_path / "patches").mkdir()
    bad = "Summary: x\n\n--- a/kernel.cpp\n+++ b/kernel.cpp\n@@ -1,1 +1,1 @@\n-no such line\n+x\n"
    (tmp_path / "patches" / "bad.patch").write_text(bad)
    out = _run(tmp_path, "call", "best bad")
    assert out.returncode == 2
    assert "bad.patch does not apply" in out.stderr
    assert not (tmp_path / "ws").exists()  # nothing made, nothing tried
    missing = _run(tmp_path, "call", "nosuch")
    assert missing.returncode == 2 and "no attempt nosuch" in missing.stderr
