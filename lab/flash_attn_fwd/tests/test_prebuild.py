"""scripts/prebuild.py: kernel files built side by side into the harness cache before a device script times them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
RUN = [sys.executable, "-m", "lab.flash_attn_fwd.scripts.prebuild"]  # from the repository root (cwd or PYTHONPATH)


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*RUN, *args], capture_output=True, text=True, timeout=600)


def test_a_file_that_does_not_build_is_named_and_exit_2(tmp_path):
    broken = tmp_path / "broken.cu"
    broken.write_text("this is not CUDA\n")
    out = run(str(broken), str(tmp_path / "missing.cu"))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith("FAILED") for line in lines)
    assert "broken.cu" in lines[0] and "missing.cu" in lines[1]


def test_no_files_is_a_usage_error():
    out = run()
    assert out.returncode == 2 and "give the kernel files" in out.stderr


def test_a_prebuilt_file_is_found_in_the_cache_by_the_bench_build(tmp_path, monkeypatch):
    """The bench builds a candidate under the task's kernel name; prebuild must fill that very cache entry,
    whatever the file is called (session 20: under its own name each candidate compiled twice on the device)."""
    from ks_tui.harness.build import build
    from ks_tui.task import load_task

    monkeypatch.setenv("KS_CACHE_DIR", str(tmp_path / "cache"))
    cand = tmp_path / "next_candidate.cu"
    cand.write_text('extern "C" __global__ void probe(float* x) { x[threadIdx.x] *= 2.f; }\n')
    out = subprocess.run([*RUN, str(cand)], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "KS_CACHE_DIR": str(tmp_path / "cache")})
    assert out.returncode == 0, out.stdout + out.stderr
    task = load_task("flash_attn_fwd", REPO)
    record, lib = build(cand, language=task.language, compiler=task.build.compiler, flags=task.build.flags,
                        arch=task.build.arch, shown_name=task.kernel.name, timeout=600)
    assert record["ok"] and lib is not None
    assert record["cached"] is True
