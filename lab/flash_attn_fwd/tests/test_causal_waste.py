"""causal_waste.py: the causal tiles' work above the diagonal, counted by hand on shapes of one and two tiles."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from lab.flash_attn_fwd.scripts import causal_waste as cw

REPO = Path(__file__).resolve().parents[3]
NEEDED_256 = 256 * 257 // 2  # square s 256: row i keeps i + 1 keys


def test_one_block_is_twice_the_triangle():
    assert cw.waste(128, 128, 128) == pytest.approx(2 * 128 * 64 / (128 * 129 / 2))
    assert cw.waste(128, 128, 128, half_diag=True) == cw.waste(128, 128, 128)  # one block: no half-width block


def test_half_width_diagonal_block_and_dead_warpgroups():
    # 128 rows: tile 0 one block (2 warpgroups x 128 keys); tile 1 two blocks, warpgroup 0 runs the second 64 wide
    assert cw.waste(256, 256, 128, half_diag=True) == pytest.approx((2 * 128 + 192 + 256) * 64 / NEEDED_256)
    assert cw.waste(256, 256, 128) == pytest.approx((2 * 128 + 2 * 256) * 64 / NEEDED_256)
    # 192 rows: tile 0 two blocks for 3 warpgroups; tile 1 two blocks for its one live warpgroup (rows 192-255)
    assert cw.waste(256, 256, 192) == pytest.approx((3 * 256 + 256) * 64 / NEEDED_256)


def test_waste_falls_with_length_and_192_rows_waste_more():
    for s in (2048, 8192):
        assert cw.waste(s, s, 192) > cw.waste(s, s, 128, half_diag=True) > 1.0
    assert cw.waste(8192, 8192, 192) < cw.waste(2048, 2048, 192)
    assert cw.waste(100, 50, 128) >= 1.0  # rows that see no key need nothing and are computed anyway


def test_cli():
    run = [sys.executable, "-m", "lab.flash_attn_fwd.scripts.causal_waste"]
    out = subprocess.run([*run, "--s-q", "4096", "--s-k", "4096"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[1].split()[:2] == ["4096", "4096"]
    bad = subprocess.run([*run, "--s-q", "5"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "give both" in bad.stderr and "Traceback" not in bad.stderr
