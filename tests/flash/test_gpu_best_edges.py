"""On a GPU: `best/kernel.cu` is correct on shapes the 182-scenario grid never makes.

The grid's lengths are multiples of 512 (or 17 short of one), so some of the kernel's paths
never run there: a warpgroup whose query rows all lie past s_q, a single key, more queries than
keys under the causal mask (rows that see no key), key counts just past a block or epilogue
threshold, small GQA groups. This test copies the task with those shapes as its scenario list
and runs the real harness on the kernel in check mode, with the task's own correctness rule.

KS_EDGE_SOURCES (colon-separated paths) adds candidate files to check the same way, e.g. on
the device: `KS_EDGE_SOURCES=lab/flash_attn_fwd/gen/next_s6.cu python3 -m pytest -m gpu
tests/flash/test_gpu_best_edges.py`. Skipped without CUDA (CI has no GPU).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

torch = pytest.importorskip("torch")

REPO = Path(__file__).resolve().parents[2]
TASK = REPO / "kernels" / "flash_attn_fwd"

pytestmark = [pytest.mark.gpu, pytest.mark.slow,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


def _shape(d, s_q, s_k, causal, h_q=2, h_kv=2, b=2, dtype="bf16"):
    return {"b": b, "s_q": s_q, "s_k": s_k, "h_q": h_q, "h_kv": h_kv, "d": d, "causal": causal,
            "dtype": dtype, "scale": round(1 / d ** 0.5, 6)}


# What each shape reaches in best/kernel.cu (192-row d64 tiles; 192-row d96/d128 tiles where they run fewer
# wave-rows (unmasked; since v45 counted in live 64-row units: dead warpgroups skip, as d64's do) or pad s_q
# little or are square (causal, s_k > 2048); 128-row tiles otherwise; 128-key blocks (160 on
# d96/d128's long 128-row tiles before v36); the TMA epilogue for d96/d128 at every s_k since v36, else at s_k <= 2048).
EDGE_SHAPES = [
    *[_shape(64, s, s, c) for s in (100, 1000, 2000) for c in (False, True)],  # 192-row tiles with 1-2 dead warpgroups
    _shape(64, 50, 50, True),                   # a 192-row causal tile with two dead warpgroups
    _shape(64, 100, 3000, True, h_q=4, h_kv=1),   # dead warpgroup, register epilogue, MQA
    _shape(64, 300, 100, True),                 # causal with s_q > s_k: the first 200 rows see no key
    _shape(64, 1, 1, False),                    # one query, one key
    *[_shape(128, 50, s_k, c) for s_k in (50, 1100, 2100) for c in (False, True)],  # 128-/160-key blocks, both epilogues
    *[_shape(d, s, s, c, h_q=4, h_kv=2) for d in (96, 128) for s in (1025, 1500, 2049) for c in (False, True)],
    _shape(128, 1500, 1500, True, dtype="fp16"),
    _shape(128, 700, 300, True),                # rows that see no key, 128-row tiles
    _shape(256, 60, 60, False),                 # d256: a dead second warpgroup (TMA epilogue staged in V)
    _shape(256, 60, 3000, True),                # d256: register epilogue
    _shape(256, 200, 2049, False, h_q=4, h_kv=1),
    _shape(40, 130, 130, True),                 # d = 40: padded to 64 with zero columns
    _shape(80, 300, 700, True),                 # d = 80 on the d96 code: V columns 80-95 zero (next_d96n96's P V)
    _shape(200, 130, 130, False),               # d = 200: a panel past d is never stored
    # d96/d128 on 192-row tiles (v29): the last tile's third warpgroup holds 8 or 58 live rows (8200 = 42 x 192 + 136,
    # 8250 = 42 x 192 + 186); causal GQA with s_q < s_k and fp16 too (these five passed on the H200 in session 15)
    *[_shape(d, s, s, c, h_q=4, h_kv=2) for d, s in ((128, 8200), (96, 8250)) for c in (False, True)],
    _shape(128, 8200, 9000, True, h_q=4, h_kv=1, dtype="fp16"),
    # the last tile holds 50 rows: its second and third warpgroups run wholly on rows past s_q (added after session
    # 15's device calls; first run on the GPU in session 16)
    *[_shape(128, 8114, 8114, c, h_q=4, h_kv=2) for c in (False, True)],
    # Unmasked launches on 192-row tiles by the wave rule (v30, session 16: 192 rows where ceil(tiles / 132)
    # x 192 is at most 3.5% above 128's; few heads, so one wave of 192-row tiles against two of 128 on an H200):
    # short keys (TMA epilogue, O staged in the Q buffer) with 16 and 56 live rows in the last tile's second
    # warpgroup and a dead third, fp16 with s_k off the block grid; long keys with 50 live rows (two dead warpgroups)
    _shape(128, 2000, 2000, False, h_q=4, h_kv=2, b=3),
    _shape(96, 2040, 1800, False, h_q=6, h_kv=2, b=2, dtype="fp16"),
    _shape(128, 8114, 8114, False, h_q=3, h_kv=1, b=1),
    # Long unmasked launches whose last wave is at most half full on 132 SMs, s_k off the key-block grid. Written in
    # session 17 for next_tailsplit (dropped), which split such last waves by keys; the parts named below are its.
    # d64 with a dead third warpgroup (138 tiles, 6 split in 8 parts); d96 and fp16 d128 on 128-row tiles with 160-key
    # blocks (170 tiles, 38 split in 3); d128 on 192-row tiles with a dead third warpgroup (184 tiles, 52 split in 2);
    # GQA d256 (138 tiles, 6 split in 8)
    _shape(64, 500, 2100, False, h_q=2, h_kv=2, b=23),
    # Session 28 (next_tma4k, next_tmac: the TMA epilogue past s_k 2048 for d96/d128): s_k just below and past 4096
    # off the key-block grid, causal with s_q < s_k on 128-row tiles (the rule's causal prefill launches), fp16
    *[_shape(d, s, s, c, h_q=4, h_kv=2) for d, s in ((96, 3000), (128, 4097)) for c in (False, True)],
    _shape(128, 1000, 5000, True, h_q=4, h_kv=1, dtype="fp16"),
    _shape(96, 600, 2200, False, h_q=2, h_kv=2, b=17),
    _shape(128, 600, 2300, False, h_q=2, h_kv=2, b=17, dtype="fp16"),
    _shape(128, 260, 3000, False, h_q=4, h_kv=2, b=23),
    _shape(256, 300, 2200, False, h_q=2, h_kv=1, b=23),
    # Session 35 (next_d256n80: unmasked d256 past s_k 2048 on 80-key blocks): fp16, s_k off the 80-key grid, a tile
    # whose second warpgroup's rows all lie past s_q
    _shape(256, 60, 2100, False, dtype="fp16"),
    # ... and next_d256n80all (causal d256 on 80-key blocks): the diagonal off the 80-key grid, and a long launch whose
    # light query blocks run last (v40's tail: s_k > 4096, few heads)
    _shape(256, 1000, 1000, True, dtype="fp16"),
    _shape(256, 4200, 4200, True, h_q=2, h_kv=1, b=1),
    # v41's causal d256 past s_k 4096 (80-key blocks, register epilogue) with s_q != s_k: a prefill shape, and s_q > s_k,
    # whose first 700 rows see no key (tiles with no key block: zeros through the register epilogue). First run on the
    # H100 in session 36's call 1 (passed).
    _shape(256, 700, 5000, True, h_q=2, h_kv=1, dtype="fp16"),
    _shape(256, 5000, 4300, True, h_q=2, h_kv=1, b=1),
    # Session 36 (next_d256n64tc: causal d256 1024 < s_k <= 4096 and unmasked 512 < s_k <= 1024 on 64-key blocks with
    # the TMA epilogue): s_k off the 64-key grid, the diagonal crossing a 64-key block with s_q < s_k and s_q > s_k.
    # Passed on the H100 in session 36's call 3 (next_d256n64tc, v42's machine code).
    _shape(256, 130, 700, False, h_q=2, h_kv=1, dtype="fp16"),
    _shape(256, 1100, 1500, True, h_q=2, h_kv=1),
    _shape(256, 2000, 1800, True, h_q=2, h_kv=1, b=1, dtype="fp16"),
    # Session 37 (next_kshift: unmasked 128-row d96/d128 tiles with their keys 64 lower, half
    # blocks first and last): 2 key blocks (the first half block wholly past the keys at s_k 129, partly at 200), and
    # s_k 400, where the first half block lies past the keys and the next full block holds the tail. Passed on the H100
    # in session 38's calls 1-2 (next_kshift, next_l2qo, next_l2kv and v43).
    *[_shape(d, 100, s_k, False) for d in (96, 128) for s_k in (129, 200, 400)],
    # Session 42 (v46, next_split3: an unmasked 192-row d96/d128 launch whose last wave holds k <= 44 of 132 tiles
    # hands those out as 3k pieces of 64 rows, one live warpgroup each; pieces past s_q are skipped): 138 tiles (k 6,
    # the last head's six tiles, its last tile with 40 live rows, or with warpgroup 1 partly live at s500), MQA and
    # GQA, s_k off the block grid in fp16; 276 tiles (k 12) over two batches. Passed on the H200 in session 43's call 1
    # (v46).
    _shape(128, 1000, 1000, False, h_q=23, h_kv=1, b=1),
    _shape(96, 500, 500, False, h_q=46, h_kv=2, b=1),
    _shape(128, 1000, 1100, False, h_q=23, h_kv=1, b=1, dtype="fp16"),
    _shape(128, 999, 1000, False, h_q=23, h_kv=23, b=2),
    # Prefill chunks of few waves (288 tiles on 132 SMs), GQA over three batches, s_k off the block grid: the launches
    # that lab/flash_attn_fwd/attempts/lanes.patch hands out by its lane plan (a table of tiles) rather than by
    # sections; 192-row d128, 128-row d96, 192-row d64 in fp16, d256 on 64-key blocks
    _shape(128, 1500, 3037, True, h_q=12, h_kv=4, b=3),
    _shape(96, 1000, 2037, True, h_q=12, h_kv=4, b=3),
    _shape(64, 1500, 3037, True, h_q=12, h_kv=4, b=3, dtype="fp16"),
    _shape(256, 1000, 2037, True, h_q=12, h_kv=4, b=3),
]


def edge_task(tmp_path: Path) -> Path:
    """A copy of the flash task whose scenarios are EDGE_SHAPES."""
    spec = yaml.safe_load((TASK / "task.yaml").read_text())
    folder = tmp_path / "kernels" / "flash_edges"
    folder.mkdir(parents=True)
    shutil.copy(TASK / "kernel.cu", folder / "kernel.cu")
    shutil.copy(TASK / spec["reference"], folder / spec["reference"])
    spec.update(name="flash_edges", timeout_s=600)
    spec.pop("quick", None)
    spec.pop("family", None)  # the grid's family names read its `kind` field, which these shapes have no use for
    spec["scenarios"] = {
        "list": EDGE_SHAPES,
        "id": "d{d}-h{h_q}-{h_kv}-q{s_q}-k{s_k}-{dtype}{'-causal' if causal else ''}",
    }
    (folder / "task.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return folder


def sources() -> list[Path]:
    extra = [Path(p) for p in os.environ.get("KS_EDGE_SOURCES", "").split(":") if p]
    return [TASK / "best" / "kernel.cu", *[p if p.is_absolute() else REPO / p for p in extra]]


@pytest.mark.parametrize("source", sources(), ids=lambda p: p.name)
def test_kernel_is_correct_on_edge_shapes(tmp_path, source):
    assert source.is_file(), source
    task = edge_task(tmp_path)
    out = tmp_path / "result.json"
    # The user's build cache, not a fresh one: its key is the source's bytes and the compile command, so a hit is
    # the same build, and a file prebuilt before the call (lab/flash_attn_fwd/scripts/prebuild.py) is not compiled
    # again. With a fresh cache per test, four candidate files compiled one after another and ran past 220 s.
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [sys.executable, "-m", "ks_tui.harness", "run", "--task", str(task), "--source", str(source),
         "--mode", "check", "--out", str(out)],
        capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    failed = {s["id"]: s.get("error") for s in result["scenarios"] if not s["ok"]}
    assert result["status"] == "correct", (result.get("message"), failed)
    assert len(result["scenarios"]) == len(EDGE_SHAPES)
