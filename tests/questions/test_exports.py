"""The package's lazy exports: each name is what its module defines, whatever was imported first."""

from __future__ import annotations

import subprocess
import sys

# In a fresh interpreter: import every submodule first (as `ks log` imports questions.plateau), then ask the package
# for every exported name. A name equal to a submodule's would then be that module, not the function (session 29:
# `plateau` was both, and `ks log --json` failed with "'module' object is not callable").
CHECK = """
import importlib, types
import ks_tui.questions as q
for module in q._EXPORTS:
    importlib.import_module(f"ks_tui.questions.{module}")
bad = [name for name in q.__all__ if isinstance(getattr(q, name), types.ModuleType)]
assert not bad, bad
"""


def test_no_export_is_shadowed_by_a_submodule():
    done = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
