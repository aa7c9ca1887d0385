"""The `ks` entry point starts as a real child process and answers --help."""

import subprocess
import sys


def test_ks_help_runs_in_a_child_process():
    out = subprocess.run([sys.executable, "-m", "ks_tui", "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "KernelSeek" in out.stdout


def test_unknown_subcommand_is_bad_usage():
    out = subprocess.run([sys.executable, "-m", "ks_tui", "no-such-command"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
