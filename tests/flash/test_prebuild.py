"""scripts/prebuild.py: kernel files built side by side into the harness cache before a device script times them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "kernels" / "flash_attn_fwd" / "scripts" / "prebuild.py"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=600)


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
