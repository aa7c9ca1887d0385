"""The lab's tests run the scripts as `python3 -m lab.flash_attn_fwd.scripts.NAME`: children import this tree."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

# No standby harness server (ks_tui/harness/standby.py) outlives a test's `ks bench` or `ks try`.
os.environ["KS_STANDBY"] = "0"


@pytest.fixture(autouse=True)
def _children_import_this_tree(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p))
