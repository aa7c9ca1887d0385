"""section_model.py: the causal tile order's sections, as the host code sizes them and decode_tile orders them."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lab.flash_attn_fwd.scripts import section_model as model

REPO = Path(__file__).resolve().parents[3]
RUN = [sys.executable, "-m", "lab.flash_attn_fwd.scripts.section_model"]  # from the repository root (cwd or PYTHONPATH)

MB = 1 << 20


def shape(d, h_q, h_kv, s, b, causal=True):
    return {"d": d, "h_q": h_q, "h_kv": h_kv, "s_q": s, "s_k": s, "b": b, "causal": causal, "dtype": "bf16"}


@pytest.mark.parametrize("num_bh,m_blocks,sec,cut", [(5, 3, 2, 0), (8, 4, 8, 0), (7, 1, 3, 0), (6, 5, 1, 0),
                                                     (5, 3, 2, 1), (8, 4, 3, 2), (6, 5, 6, 4)])
def test_tile_order_hands_out_each_tile_once(num_bh, m_blocks, sec, cut):
    # that it is decode_tile's order: test_tile_decode.py, which compiles the kernel's own decode_tile
    la = model.Launch(num_bh=num_bh, m_blocks=m_blocks, rows=128, group=1, s_q=128 * m_blocks, s_k=128 * m_blocks,
                      kv_bytes=MB)
    order = model.tile_order(la, sec, cut)
    assert sorted(order) == sorted((bh, m) for bh in range(num_bh) for m in range(m_blocks))  # each tile once
    assert all(m < cut for _, m in order[(m_blocks - cut) * num_bh:])  # the tail: the light blocks only


def test_tail_cut_fills_waves_of_light_blocks_only():
    long = model.Launch.of(shape(128, 16, 16, 16384, 2))  # 32 heads, 86 query blocks of 192 rows (2..128 key blocks)
    assert model.tail_cut(long) == 16  # 16 x 32 tiles = 512 <= 4 waves of 132; 17 x 32 = 544 > 528
    assert model.tail_cut(long, waves=1) == 4
    prefill = model.Launch.of({**shape(128, 16, 16, 0, 1), "s_q": 8192, "s_k": 32768})
    assert model.tail_cut(prefill) == 0  # its lightest block sees 194 of 256 key blocks
    many = model.Launch.of(shape(64, 32, 32, 512, 64))  # 2048 heads: one block a head is already 15 waves
    assert model.tail_cut(many) == 0
    la = model.Launch.of(shape(96, 16, 16, 2048, 16))
    cut = model.tail_cut(la)
    assert cut == 2 and model.rule_cut(la, "tail") == cut and model.rule_cut(la, "16MB") == 0
    # the model's reason for next_tail: the same sections, a shorter makespan
    v38 = model.simulate(la, model.section_heads(la, "16MB"))
    tail = model.simulate(la, model.section_heads(la, "tail"), cut=cut)
    assert tail.makespan < v38.makespan
    # next_tail8k: the same order past s_k 4096 only, on v39's sections (4 MB up to s_k 1024)
    assert model.rule_cut(la, "tail8k") == 0
    assert model.rule_cut(long, "tail8k") == model.rule_cut(long, "tail") == 16
    short = model.Launch.of(shape(128, 16, 16, 512, 64))
    assert model.section_heads(short, "tail8k") == model.section_heads(short, "secs1k") < model.section_heads(short, "tail")


def test_section_heads_follow_the_host_rules():
    d64 = model.Launch.of(shape(64, 32, 32, 512, 64))  # 192-row tiles: 3 query blocks, 128 KB of K/V a head
    assert (d64.rows, d64.m_blocks, d64.kv_bytes) == (192, 3, 128 * 1024)
    assert [model.section_heads(d64, r) for r in ("4MB", "16MB", "48MB", "secs1k")] == [32, 128, 384, 32]
    assert model.section_heads(d64, "secwave") == 44  # 132 CTAs / 3 query blocks
    mqa = model.Launch.of(shape(128, 32, 1, 512, 64))  # one kv head for 32 query heads: a section is whole groups
    assert model.section_heads(mqa, "secwave") == 32
    assert model.section_heads(mqa, "16MB") == 2048  # capped at the launch's heads
    long = model.Launch.of(shape(128, 16, 16, 4096, 8))
    assert model.section_heads(long, "secs1k") == model.section_heads(long, "16MB") == 8  # past s_k 1024: v38's


def test_sec64t_counts_tiles_on_square_short_launches_only():
    # next_sec64t's host rule (variants.py): ~64 tiles a section where s_q = s_k <= 1024, v40's rules elsewhere
    d256 = model.Launch.of(shape(256, 8, 8, 512, 64))  # 4 query blocks: v39's 4 MB is 8 heads (32 tiles), here 16
    assert (model.section_heads(d256, "secs1k"), model.section_heads(d256, "sec64t")) == (8, 16)
    gqa = model.Launch.of(shape(256, 16, 4, 1024, 32))  # 8 query blocks: 4 MB is 4 kv heads x 4 (128 tiles), here 8
    assert (model.section_heads(gqa, "secs1k"), model.section_heads(gqa, "sec64t")) == (16, 8)
    d64 = model.Launch.of(shape(64, 32, 32, 512, 64))  # 192-row tiles: 3 query blocks, 21 heads = 63 tiles
    assert model.section_heads(d64, "sec64t") == 21
    prefill = model.Launch.of({**shape(128, 16, 16, 512, 64), "s_q": 128})
    assert model.section_heads(prefill, "sec64t") == model.section_heads(prefill, "tail8k")
    long = model.Launch.of(shape(128, 16, 16, 8192, 4))
    assert model.section_heads(long, "sec64t") == model.section_heads(long, "tail8k")
    assert model.rule_cut(long, "sec64t") == model.rule_cut(long, "tail8k") > 0  # v40's tail stays


def test_v44_rule_is_sec64t_and_no_tail_for_d256_only():
    # best/kernel.cu since v44: d256's square short causal launches on ~64-tile sections, d256 without v40's tail
    d256 = model.Launch.of(shape(256, 8, 8, 512, 64))
    assert d256.d == 256 and model.section_heads(d256, "v44") == model.section_heads(d256, "sec64t") == 16
    d128 = model.Launch.of(shape(128, 16, 4, 512, 64))
    assert model.section_heads(d128, "v44") == model.section_heads(d128, "tail8k") != model.section_heads(d128, "sec64t")
    long256 = model.Launch.of(shape(256, 8, 8, 8192, 4))
    long128 = model.Launch.of(shape(128, 16, 16, 8192, 4))
    assert model.rule_cut(long256, "tail8k") > 0 and model.rule_cut(long256, "v44") == 0
    assert model.rule_cut(long128, "v44") == model.rule_cut(long128, "tail8k") > 0


def test_simulate_on_one_cta_runs_the_tiles_back_to_back():
    la = model.Launch.of(shape(128, 1, 1, 512, 2))  # 2 heads, 4 query blocks of 1..4 key blocks each
    assert [la.blocks(m) for m in range(4)] == [1, 2, 3, 4]
    s = model.simulate(la, sec=1, sms=1)
    per_head = sum(la.blocks(m) + model.TILE_FIXED for m in range(4))
    assert s.makespan == pytest.approx(2 * per_head)
    assert s.head_span == pytest.approx(per_head)  # head-major: each head's tiles in a row
    assert s.open_kv == pytest.approx(la.kv_bytes, rel=0.01)  # one head open at a time
    both = model.simulate(la, sec=2, sms=1)  # one section: (0,3) (1,3) (0,2) (1,2) ... (0,0) (1,0)
    assert both.makespan == pytest.approx(s.makespan)
    # head 1 opens after (0,3) (5.2), head 0 closes before (1,0) (2.2 from the end): 2 heads open for 22.2 of 29.6
    assert both.open_kv == pytest.approx((5.2 + 2 * 22.2 + 2.2) / 29.6 * la.kv_bytes, rel=0.01)


def test_smaller_sections_hold_less_kv_open_at_s512():
    la = model.Launch.of(shape(64, 32, 32, 512, 64))
    opens = [model.simulate(la, model.section_heads(la, r)).open_kv for r in ("4MB", "16MB", "48MB")]
    assert opens[0] < opens[1] < opens[2]


def test_cli_table_and_bad_rule():
    out = subprocess.run([*RUN, "--rules", "16MB,secs1k", "d64-h32-32-s512-causal",
                          "d64-h32-32-s512"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    rows = [line.split() for line in out.stdout.splitlines()[1:]]
    assert [(r[0], r[1], r[2]) for r in rows] == [("d64-h32-32-s512-causal", "16MB", "128"),
                                                 ("d64-h32-32-s512-causal", "secs1k", "32")]  # unmasked: no sections
    bad = subprocess.run([*RUN, "--rules", "8MB", "d64-h32-32-s512-causal"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "unknown rule(s): 8MB" in bad.stderr and "Traceback" not in bad.stderr
    typo = subprocess.run([*RUN, "d64-h32-32-s512-casual"], capture_output=True, text=True,
                          timeout=60)
    assert typo.returncode == 2 and "unknown scenario(s): d64-h32-32-s512-casual" in typo.stderr
    assert "Traceback" not in typo.stderr


def test_constants_are_the_kernels():
    """The model's thresholds are best/kernel.cu's host constants (written twice: the model imports no CUDA)."""
    text = (REPO / "kernels/flash_attn_fwd/best/kernel.cu").read_text()

    def constexpr(name: str) -> int:
        m = re.search(rf"constexpr (?:int|long long) {name} = (\d+)(?:ll << (\d+))?;", text)
        assert m, f"best/kernel.cu has no constexpr {name}"
        return int(m[1]) << int(m[2] or 0)

    assert constexpr("kTailWaves") == model.TAIL_WAVES
    assert constexpr("kTailMinSk") == model.TAIL_MIN_SK
    assert constexpr("kShortSectionMaxSk") == model.SHORT_SK
    # the tail8k rule's sections: 4 MB up to SHORT_SK keys, 16 MB past them
    short = model.Launch.of(shape(128, 16, 16, model.SHORT_SK, 64))
    long = model.Launch.of(shape(128, 16, 16, 2 * model.SHORT_SK, 64))
    assert model.section_heads(short, "tail8k") == constexpr("kShortSectionL2Bytes") // short.kv_bytes
    assert model.section_heads(long, "tail8k") == constexpr("kSectionL2Bytes") // long.kv_bytes
