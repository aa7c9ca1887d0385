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


# A child Python where importing one module fails as if it were not installed.
_BLOCKER = """
import importlib.abc, sys
class _Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == {mod!r} or name.startswith({mod!r} + "."):
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
sys.meta_path.insert(0, _Block())
from ks_tui.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_missing_dependency_is_one_line_not_a_traceback(tmp_path):
    # As on a machine where the package was installed with --no-deps: GitPython is absent.
    out = subprocess.run([sys.executable, "-c", _BLOCKER.format(mod="git"), "init", str(tmp_path / "ws")],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr
    assert "GitPython" in out.stderr and "pip install" in out.stderr


def test_a_missing_module_that_is_no_dependency_keeps_its_traceback(tmp_path):
    # Only declared dependencies are the environment's fault; anything else is a bug and shows where.
    # `ks init` imports ks_tui.workspace inside its handler, inside main's error handling
    out = subprocess.run([sys.executable, "-c", _BLOCKER.format(mod="ks_tui.workspace"), "init", str(tmp_path / "ws")],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert "Traceback" in out.stderr


def test_dependency_modules_cover_pyproject():
    # cli.DEPENDENCY_MODULES repeats pyproject.toml's dependency list by import name: the two must not drift apart.
    import re
    import tomllib
    from pathlib import Path

    from ks_tui.cli import DEPENDENCY_MODULES

    spec = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    declared = {re.split(r"[<>=!~;\[ ]", d, maxsplit=1)[0].lower() for d in spec["project"]["dependencies"]}
    assert declared == {name.lower() for name in DEPENDENCY_MODULES.values()}
