"""decode_tile, the kernel's own text compiled for the host with g++: the causal tile order it hands out is the one
section_model.tile_order describes (best/kernel.cu, v40: the causal functions' sections, then the tail; without
kTail, as the unmasked functions compile it, sections only)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
KERNEL = REPO / "kernels/flash_attn_fwd/best/kernel.cu"
pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")


from lab.flash_attn_fwd.scripts import section_model as model  # noqa: E402

BLOCK_M = 128  # rows of a query block in the driver (the kernel's 128-row functions)

DRIVER = r"""
#include <algorithm>
#include <cstdio>
#include <cstdlib>
using std::min;
#define __device__
#define __forceinline__ inline
%(tile)s
%(decode)s
// argv: num_m_blocks num_bh sec cut s_q s_k -> one line a tile: bh m_block n_blocks
int main(int argc, char** argv) {
  if (argc != 7) return 2;
  const int num_m = atoi(argv[1]), num_bh = atoi(argv[2]), sec = atoi(argv[3]), cut = atoi(argv[4]);
  const int s_q = atoi(argv[5]), s_k = atoi(argv[6]);
  for (int t = 0; t < num_m * num_bh; ++t) {
    const Tile w = %(call)s;
    printf("%%d %%d %%d\n", w.batch * num_bh + w.head, w.m_block, w.n_blocks);
  }
  return 0;
}
"""


def _piece(text: str, start: str, end: str) -> str:
    i = text.index(start)
    return text[i:text.index(end, i) + len(end)]


def _decode_source(text: str) -> str:
    """decode_tile's template, from its `template <` line to its closing brace."""
    head = text.index("__device__ __forceinline__ Tile decode_tile(")
    return text[text.rindex("template <", 0, head):text.index("\n}\n", head) + 3]


def _build(text: str, call: str, out: Path) -> Path:
    src = out.with_suffix(".cpp")
    src.write_text(DRIVER % {"tile": _piece(text, "struct Tile {", "};"), "decode": _decode_source(text),
                             "call": call})
    subprocess.run(["g++", "-std=c++17", "-O1", "-o", str(out), str(src)], check=True, capture_output=True, text=True)
    return out


@pytest.fixture(scope="module")
def decoders(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("decode")
    best = KERNEL.read_text()
    # h_q = num_bh (one batch), so head is bh; `causal` is 1 + cut, as the host passes it to a causal launch
    return {
        "tail": _build(best, f"decode_tile<128, {BLOCK_M}, true>(t, num_m, num_bh, sec, num_bh, s_q, s_k, 1 + cut)",
                       tmp / "tail"),
        "no_tail": _build(best, f"decode_tile<128, {BLOCK_M}, false>(t, num_m, num_bh, sec, num_bh, s_q, s_k, "
                                "1 + cut)", tmp / "no_tail"),
    }


def _run(exe: Path, num_m: int, num_bh: int, sec: int, cut: int, s_q: int, s_k: int) -> list[tuple[int, int, int]]:
    out = subprocess.run([str(exe), *map(str, (num_m, num_bh, sec, cut, s_q, s_k))], check=True,
                         capture_output=True, text=True).stdout
    return [tuple(map(int, line.split())) for line in out.splitlines()]


CASES = [(5, 3, 2, 0), (8, 4, 8, 0), (7, 1, 3, 0), (6, 5, 1, 0), (5, 3, 2, 1), (8, 4, 3, 2), (6, 5, 6, 4), (9, 7, 3, 6)]


@pytest.mark.parametrize("num_bh,m_blocks,sec,cut", CASES)
@pytest.mark.parametrize("extra_keys", [0, 300])
def test_decode_tile_hands_out_the_model_order(decoders, num_bh, m_blocks, sec, cut, extra_keys):
    s_q = BLOCK_M * m_blocks - 5  # a part-filled last block
    la = model.Launch(num_bh=num_bh, m_blocks=m_blocks, rows=BLOCK_M, group=1, s_q=s_q, s_k=s_q + extra_keys,
                      kv_bytes=1 << 20)
    want = [(bh, m, la.blocks(m)) for bh, m in model.tile_order(la, sec, cut)]
    assert _run(decoders["tail"], m_blocks, num_bh, sec, cut, la.s_q, la.s_k) == want
    # without kTail the cut is ignored: the sections' order
    sections = [(bh, m, la.blocks(m)) for bh, m in model.tile_order(la, sec, 0)]
    assert _run(decoders["no_tail"], m_blocks, num_bh, sec, cut, la.s_q, la.s_k) == sections
