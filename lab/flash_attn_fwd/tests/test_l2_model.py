"""l2_model.py: K/V block reads replayed through an LRU of the L2's size, on launches small enough to count by hand."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from lab.flash_attn_fwd.scripts import l2_model as l2
from lab.flash_attn_fwd.scripts import section_model as sm

REPO = Path(__file__).resolve().parents[3]
BLOCK = 2 * 128 * 128 * 2  # K and V of one d128 key block


def launch(num_bh: int, m_blocks: int, s_k: int, group: int = 1, rows: int = 128) -> sm.Launch:
    return sm.Launch(num_bh=num_bh, m_blocks=m_blocks, rows=rows, group=group, s_q=rows * m_blocks, s_k=s_k,
                     kv_bytes=4 * s_k * 128)


def test_an_l2_that_holds_everything_misses_each_block_once():
    la = launch(4, 3, 1024)
    tr = l2.replay(la, l2.order_of(la, "unmasked"), False, 1 << 40, sms=5)
    assert (tr.reads, tr.unique, tr.misses) == (4 * 3 * 8, 4 * 8, 4 * 8)  # 8 key blocks a tile, 4 heads
    assert tr.excess == 1.0


def test_an_l2_smaller_than_a_block_misses_every_read():
    la = launch(2, 2, 512)
    tr = l2.replay(la, l2.order_of(la, "unmasked"), False, BLOCK - 1, sms=2)
    assert tr.misses == tr.reads == 2 * 2 * 4
    assert tr.hit_rate == 0.0


def test_tiles_walking_together_share_each_block_and_staggered_ones_do_not():
    # one wave: every tile of the head reads block j at the same time, so two blocks of room are enough
    la = launch(1, 4, 2048)
    room = 4 * 128 * 128 * 2 + 2 * BLOCK  # the four Q blocks, and two K/V blocks
    together = l2.replay(la, l2.order_of(la, "unmasked"), False, room, sms=4)
    assert together.misses == together.unique == 16
    # one CTA runs the four tiles one after another: each re-reads all 16 blocks, which two blocks of room cannot hold
    alone = l2.replay(la, l2.order_of(la, "unmasked"), False, room, sms=1)
    assert alone.misses == alone.reads == 64


def test_gqa_heads_share_their_kv_blocks():
    la = launch(4, 1, 512, group=4)  # four query heads on one kv head: four tiles read the same 4 blocks
    tr = l2.replay(la, l2.order_of(la, "unmasked"), False, 1 << 40, sms=4)
    assert (tr.reads, tr.unique, tr.misses) == (16, 4, 4)


def test_causal_reads_follow_the_key_order():
    # one CTA runs the query blocks 2, 1, 0 (3, 2 and 1 key blocks); L2 holds two K/V blocks, or one beside two Q / O
    la = launch(1, 3, 384)
    room = BLOCK + 2 * 128 * 128 * 2
    order = [(0, 2), (0, 1), (0, 0)]
    down = l2.replay(la, order, True, room, sms=1)    # 2 1 0 | 1 0 | 0: block 1 was evicted by block 0
    up = l2.replay(la, order, True, room, sms=1, upward=True)  # 2 0 1 | 1 0 | 0: block 1 is still there
    assert (down.reads, down.unique) == (up.reads, up.unique) == (6, 3)
    assert (down.misses, up.misses) == (5, 4)


def test_cli():
    run = [sys.executable, "-m", "lab.flash_attn_fwd.scripts.l2_model"]
    out = subprocess.run([*run, "--orders", "sections,lanes", "d128-h16-16-q8192-k32768-causal", "d128-h16-16-s512"],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    rows = [line.split() for line in out.stdout.splitlines()[1:]]
    assert [r[:2] for r in rows] == [["d128-h16-16-q8192-k32768-causal", "sections"],
                                    ["d128-h16-16-q8192-k32768-causal", "lanes"], ["d128-h16-16-s512", "unmasked"]]
    for args, msg in ((["--orders", "lpt", "d128-h16-16-s512"], "unknown order(s) lpt"),
                      (["--l2-mb", "0", "d128-h16-16-s512"], "must be positive"),
                      (["d128-h16-16-s513"], "unknown scenario(s): d128-h16-16-s513")):
        bad = subprocess.run([*run, *args], cwd=REPO, capture_output=True, text=True, timeout=60)
        assert bad.returncode == 2 and msg in bad.stderr and "Traceback" not in bad.stderr
