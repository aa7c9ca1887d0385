"""Run folders a killed process left in the temporary folder are swept once a day old; live ones stay."""

from __future__ import annotations

import os
import time

from ks_tui.harness import scratch


def _folder(root, name, age_s, now):
    folder = root / name
    (folder / "tmp").mkdir(parents=True)
    (folder / "result.json").write_text("{}")
    os.utime(folder, (now - age_s, now - age_s))
    return folder


def test_only_our_old_run_folders_go(tmp_path):
    now = time.time()
    old_run = _folder(tmp_path, "ks-harness-old", 2 * 86400, now)
    old_job = _folder(tmp_path, "ks-job-old", 86400 + 60, now)
    live = _folder(tmp_path, "ks-harness-live", 3600, now)  # an hour: a long run, or a waiting standby child
    other = _folder(tmp_path, "pytest-of-someone", 5 * 86400, now)  # not a run folder
    (tmp_path / "ks-harness-file").write_text("a file, not a folder")
    os.utime(tmp_path / "ks-harness-file", (now - 5 * 86400, now - 5 * 86400))
    link = tmp_path / "ks-job-link"
    link.symlink_to(other)

    removed = scratch.sweep_stale(tmp_path, now=now)
    assert sorted(p.name for p in removed) == ["ks-harness-old", "ks-job-old"]
    assert not old_run.exists() and not old_job.exists()
    assert live.exists() and other.exists() and (tmp_path / "ks-harness-file").exists()
    assert link.is_symlink() and (other / "result.json").exists()  # a link is not followed
    assert scratch.sweep_stale(tmp_path / "missing", now=now) == []  # no folder: nothing, no error


def test_a_run_sweeps_what_a_killed_one_left(tmp_path):
    """`ks check` sweeps the temporary folder it runs with: a day-old job folder goes, its own scratch goes too."""
    import subprocess
    import sys

    now = time.time()
    old = _folder(tmp_path, "ks-job-killed", 2 * 86400, now)
    live = _folder(tmp_path, "ks-harness-live", 60, now)
    env = dict(os.environ, TMPDIR=str(tmp_path), KS_STANDBY="0")
    out = subprocess.run([sys.executable, "-m", "ks_tui", "check", "attention_cpu", "--quick"], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert not old.exists() and live.exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("ks-")) == ["ks-harness-live"]
