"""families.py: per-family tables and the per-tile cost fit, on result files written the harness's way."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from lab.flash_attn_fwd.scripts import families

REPO = Path(__file__).resolve().parents[3]
RESULTS = Path(__file__).resolve().parents[1] / "results"
RUN = [sys.executable, "-m", "lab.flash_attn_fwd.scripts.families"]  # from the repository root (cwd or PYTHONPATH)


def scenario(d, causal, s_q, s_k, b, h, time_ms, speedup, ok=True):
    sid = f"d{d}-h{h}-{h}-q{s_q}-k{s_k}" + ("-causal" if causal else "")
    shape = {"d": d, "h_q": h, "h_kv": h, "dtype": "bf16", "causal": causal, "b": b, "s_q": s_q, "s_k": s_k}
    return {"id": sid, "shape": shape, "ok": ok, "time_ms": time_ms, "speedup": speedup}


def write(tmp_path: Path, name: str, scenarios: list[dict]) -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"schema": 1, "status": "ok", "scenarios": scenarios}))
    return str(path)


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*RUN, *args], capture_output=True, text=True, timeout=60)


def test_family_table_geomeans_and_kernel_time_ratio(tmp_path):
    a = [scenario(256, False, 512, 512, 64, 8, 0.2, 1.0), scenario(256, False, 1024, 1024, 32, 8, 0.4, 1.21),
         scenario(128, True, 4096, 4096, 8, 16, 1.0, 1.3)]
    # B: the d256 short ones twice as fast, the causal one unchanged; speedups to match
    b = [dict(s, time_ms=s["time_ms"] / (2 if s["shape"]["d"] == 256 else 1),
              speedup=s["speedup"] * (2 if s["shape"]["d"] == 256 else 1)) for s in a]
    out = run(write(tmp_path, "a.json", a), write(tmp_path, "b.json", b))
    assert out.returncode == 0, out.stderr
    # name | n, speedup[0], speedup[1], kt0/kt1, lowest id, its speedup
    rows = {line[:28].strip(): line[28:].split() for line in out.stdout.splitlines()[1:]}
    n, sp0, sp1, kt, low, low_sp = rows["d256 unmasked s_k <= 2048"]
    assert n == "2" and float(sp0) == pytest.approx(1.1, abs=1e-4) and float(sp1) == pytest.approx(2.2, abs=1e-4)
    assert float(kt) == pytest.approx(2.0) and low == "d256-h8-8-q512-k512" and float(low_sp) == pytest.approx(2.0)
    assert float(rows["d96/d128 causal s_k > 2048"][3]) == pytest.approx(1.0)  # the unchanged family
    assert rows["all"][0] == "3"


def test_goal_column_says_what_the_grid_gains_if_a_family_alone_reached_it(tmp_path):
    # 4 scenarios: two d256 short ones at 1.0 (below the goal), two causal d128 long ones at 1.5 (above it)
    a = [scenario(256, False, 512, 512, 64, 8, 0.2, 1.0), scenario(256, False, 1024, 1024, 32, 8, 0.4, 1.0),
         scenario(128, True, 4096, 4096, 8, 16, 1.0, 1.5), scenario(128, True, 8192, 8192, 4, 16, 2.0, 1.5)]
    out = run("--goal", "1.2", write(tmp_path, "a.json", a))
    assert out.returncode == 0, out.stderr
    rows = {line[:30].strip(): line[30:].split() for line in out.stdout.splitlines()[1:-1]}
    # half the grid from 1.0 to 1.2: the geomean x 1.2 ** (2 / 4)
    assert rows["d256 unmasked s_k <= 2048"][2] == f"{1.2 ** 0.5 - 1:+.2%}"
    assert rows["d96/d128 causal s_k > 2048"][2] == "+0.00%"  # there already
    # the whole grid at 1.2: from its geomean sqrt(1.0 x 1.5) = 1.2247, above the goal already
    assert rows["all"][2] == "+0.00%"
    assert out.stdout.splitlines()[-1] == f"every family at 1.20 together: the grid {1.2 ** 0.5 - 1:+.2%}"
    assert run("--goal", "-1", write(tmp_path, "b.json", a)).returncode == 2


def test_fit_recovers_the_per_tile_and_per_block_costs(tmp_path):
    # d256 tiles: 128 rows; 132 tiles a wave. t per wave = 2.5 us + 3.0 us x blocks, at 1, 2 and 4 waves.
    scenarios = []
    for s, b in ((512, 66), (1024, 33), (2048, 33)):
        tiles = b * 8 * (s // 128)
        waves = -(-tiles // 132)
        scenarios.append(scenario(256, False, s, s, b, 8, waves * (2.5 + 3.0 * s / 128) / 1000, 1.05))
    scenarios.append(scenario(256, True, 512, 512, 66, 8, 1.0, 1.1))  # causal: left out of the fit
    out = run("--fit", write(tmp_path, "r.json", scenarios))
    assert out.returncode == 0, out.stderr
    line = next(x for x in out.stdout.splitlines() if "d256 128x128 short" in x)
    n, a, b, ratio, resid = line.split()[-5:]
    assert (n, float(a), float(b), float(ratio), resid) == ("3", 2.5, 3.0, pytest.approx(0.83, abs=0.01), "0.0%")


def test_tile_kind_follows_the_dispatch_rules():
    shape = lambda d, s_q, s_k, b, h: {"d": d, "s_q": s_q, "s_k": s_k, "b": b, "h_q": h}
    assert families.tile_kind(shape(64, 512, 512, 64, 32)) == (192, 128)
    assert families.tile_kind(shape(256, 8192, 8192, 2, 8)) == (128, 128)
    # d128 h16 s512 b64: 4096 tiles of 128 rows (32 waves x 128) against 3072 of 192 (24 x 192), but a third of those
    # hold a dead warpgroup, which skips (v45): 8192 live 64-row units, 21 waves of 396 (4032 rows): 192 rows
    assert families.tile_kind(shape(128, 512, 512, 64, 16)) == (192, 128)
    # q256-k1024 b32 h16: 1024 tiles of 128 rows (8 waves, 1024) against 2048 live units (6 waves of 192, 1152)
    assert families.tile_kind(shape(128, 256, 1024, 32, 16)) == (128, 128)
    # q1024-k4096 b4 h16: 3 waves of 192 rows (576) against 4 of 128 (512): 128 rows, 128-key blocks (v36; 160 before)
    assert families.tile_kind(shape(128, 1024, 4096, 4, 16)) == (128, 128)
    assert families.tile_kind(shape(128, 1024, 2048, 4, 16)) == (128, 128)
    # s4096 b8 h16: 22 waves of 192 rows (4224) against 32 of 128 (4096): within 3.5%, 192 rows
    assert families.tile_kind(shape(128, 4096, 4096, 8, 16)) == (192, 128)



def test_work_items_count_v46s_pieces_of_the_last_wave():
    shape = lambda d, s, b, h, causal=False: {"d": d, "s_q": s, "s_k": s, "b": b, "h_q": h, "causal": causal}
    # d128 h16 s512 b64: 3072 tiles of 192 rows, 23 waves of 132 and 36 tiles; the 36 go out as 108 pieces, of which
    # the 12 third pieces of a head's last query block (rows 512-575) lie past s_q: 3036 + 96. The wait profile
    # counted the same on an H200 (session 43: 28188 warpgroup-tiles = 3 launches x 3 warpgroups x 3132)
    assert families.work_items(shape(128, 512, 64, 16)) == 3132
    assert families.work_items(shape(96, 512, 64, 16)) == 3132
    # 4096 tiles of 128 rows (d256): no split, one item a tile
    assert families.work_items(shape(256, 512, 64, 16)) == 64 * 16 * 4
    # causal launches and d64 never split
    assert families.work_items(shape(128, 512, 64, 16, causal=True)) == 64 * 16 * 4
    assert families.work_items(shape(64, 1024, 32, 32)) == 32 * 32 * 6
    # s4096 b8 h16: 22 tiles a head, 2816 tiles, k = 44 = 132 / 3: heads 126-127 whole go out as pieces, 21 blocks of
    # three and the last block's first (rows 4032-4095): 2772 + 2 x 64
    assert families.work_items(shape(128, 4096, 8, 16)) == 2900
    # a last wave too full for pieces (3k > 132): s8192 b2 h16, 43 x 32 = 1376 tiles, k = 56
    assert families.work_items(shape(128, 8192, 2, 16)) == 1376
    # a whole number of waves: b = 11, h = 12, one 192-row tile a head at s192: 132 tiles, nothing left over
    assert families.work_items(shape(128, 192, 11, 12)) == 132

def test_one_key_length_gives_no_fit_line(tmp_path):
    scenarios = [scenario(256, False, 512, 512, 64, 8, 0.2, 1.0), scenario(256, False, 512, 512, 32, 8, 0.1, 1.0)]
    out = run("--fit", write(tmp_path, "r.json", scenarios))
    assert out.returncode == 0 and "(one key length: no fit)" in out.stdout


@pytest.mark.parametrize("content, message", [
    (None, "no such file"),
    ("{not json", "not a result JSON"),
    ('{"scenarios": 3}', "no scenario list"),
    ('{"scenarios": [{"id": "x", "ok": false, "shape": {}}]}', "no correct, timed scenario"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, content, message):
    path = tmp_path / "bad.json"
    if content is not None:
        path.write_text(content)
    out = run(str(path))
    assert out.returncode == 2
    assert message in out.stderr and "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_committed_full_benches_read(tmp_path):
    results = sorted((RESULTS).glob("*-v33-full-bench.json"))
    assert results, "v33's committed full bench is missing"
    out = run(str(results[0]))
    assert out.returncode == 0 and out.stdout.splitlines()[-1].split()[1] == "182"


def test_rows_splits_the_d96_d128_families_by_tile_height_as_the_dispatch_picks_it(tmp_path):
    shapes = [  # (causal, s_q, s_k, b, h) -> rows by best/kernel.cu's dispatch
        (True, 4096, 4096, 8, 16, 192),   # square: the 3% padding is dead warpgroups (v45)
        (True, 1024, 4096, 8, 16, 128),   # 192 rows would pad s_q 12.5%: more than 1% over 128-row tiles
        (True, 8192, 8192, 4, 16, 192),   # 0.8% padding: 192 rows
        (True, 1024, 1024, 32, 16, 128),  # causal short keys: always 128 rows
        (False, 512, 512, 64, 16, 192),   # live 64-row units: 4032 wave-rows against 4096 (v45)
        (False, 256, 1024, 32, 16, 128),  # 1152 against 1024: 12.5% more
        (False, 2048, 2048, 16, 16, 192),  # within the rule's 3.5%
    ]
    runs = [scenario(128, c, s_q, s_k, b, h, 1.0, 1.1) for c, s_q, s_k, b, h, _ in shapes]
    for shape, r in zip(shapes, runs, strict=True):
        assert families.rows_of(r["shape"]) == shape[-1], r["id"]
    out = run("--rows", write(tmp_path, "r.json", runs))
    assert out.returncode == 0, out.stderr
    names = {line.rsplit("   ", 1)[0].split("  ")[0].strip() for line in out.stdout.splitlines()[1:]}
    assert {"d96/d128 128r causal s_k > 2048", "d96/d128 192r causal s_k > 2048", "d96/d128 128r causal s_k <= 2048",
            "d96/d128 128r unmasked s_k <= 2048", "d96/d128 192r unmasked s_k <= 2048"} <= names
    plain = run(write(tmp_path, "p.json", runs)).stdout
    assert "128r" not in plain and "d96/d128 causal s_k > 2048" in plain


def test_a_ks_try_document_reads_as_its_result(tmp_path):
    """`ks try --json` writes the attempt beside its result: the table reads the result."""
    scenarios = [scenario(256, False, 512, 512, 64, 8, 0.2, 1.0), scenario(128, True, 4096, 4096, 8, 16, 1.0, 1.3)]
    plain = write(tmp_path, "plain.json", scenarios)
    tried = tmp_path / "try.json"
    tried.write_text(json.dumps({"attempt": {"number": 2}, "result": json.loads(Path(plain).read_text())}))
    out = run(plain, str(tried))
    assert out.returncode == 0, out.stderr
    both = [line for line in out.stdout.splitlines() if line.startswith("all")]
    assert len(both) == 1 and both[0].split()[1:5] == ["2", "1.1402", "1.1402", "1.000"], out.stdout  # same times
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"attempt": {}, "result": {"status": "error"}}))
    out = run(str(bad))
    assert out.returncode == 2 and "no scenario list" in out.stderr + out.stdout


def test_against_a_library_per_task_family_with_the_speed_of_light(tmp_path):
    """--against fa3: the paired ratio per task family, each side's fraction of the speed of light, the ceiling."""

    def with_fa3(s, fa3_ms, paired, limit_ms, fam):
        timing = {"paired": {"fa3": paired}} if paired else {}
        return dict(s, family=fam, baselines={"fa3": fa3_ms, "sdpa_cudnn": 9.0}, timing=timing,
                    speed_of_light={"limit_ms": limit_ms})

    scenarios = [
        with_fa3(scenario(128, True, 4096, 4096, 8, 16, 1.0, 1.0), 0.9, 0.88, 0.8, "d128-h16-16-causal"),
        with_fa3(scenario(128, True, 8192, 8192, 4, 16, 2.0, 1.0), 2.2, None, 1.6, "d128-h16-16-causal"),  # no pairs
        with_fa3(scenario(256, False, 512, 512, 64, 8, 0.5, 1.0), 0.6, 1.25, 0.4, "d256-h8-8"),
        scenario(64, False, 512, 512, 64, 8, 0.5, 1.0),  # no FA3 time (fp16): left out
    ]
    out = run("--against", "fa3", write(tmp_path, "r.json", scenarios))
    assert out.returncode == 0, out.stderr
    rows = {line.split()[0]: line.split()[1:] for line in out.stdout.splitlines()[1:]}
    n, vs, ours, lib, ceiling, low, low_vs = rows["d128-h16-16-causal"]
    assert n == "2" and float(vs) == pytest.approx((0.88 * 1.1) ** 0.5, abs=1e-4)  # the medians' ratio where unpaired
    assert float(ours) == pytest.approx(0.8, abs=1e-3) and float(lib) == pytest.approx((0.8 / 0.9 * 1.6 / 2.2) ** 0.5, abs=1e-3)
    assert float(ceiling) == pytest.approx((0.9 / 0.8 * 2.2 / 1.6) ** 0.5, abs=1e-3)
    assert low == "d128-h16-16-q4096-k4096-causal" and float(low_vs) == pytest.approx(0.88)
    assert list(rows) == ["d128-h16-16-causal", "d256-h8-8", "all"] and rows["all"][0] == "3"
    none = run("--against", "fa4", write(tmp_path, "r2.json", scenarios))
    assert none.returncode == 2 and "no scenario has a fa4 time" in none.stderr


def flops(s):
    """The harness's FLOP count (FlashAttention's), as its result JSON's `tflops` holds it."""
    sh = s["shape"]
    avg_k = (max(0, sh["s_k"] - sh["s_q"]) + sh["s_k"]) / 2 if sh["causal"] else sh["s_k"]
    return 4.0 * sh["b"] * sh["h_q"] * sh["s_q"] * avg_k * sh["d"]


def test_by_duration_lists_the_long_calls_and_bands_the_paired_ratio(tmp_path):
    """--by-duration fa3: calls of at least 5 ms by their length, TFLOP/s of both sides, and the ratio per band."""

    def long(s, fa3_ms, paired, alone_ms=None):
        timing = {"paired": {"fa3": paired}, **({"alone_ms": alone_ms} if alone_ms else {})}
        return dict(s, baselines={"fa3": fa3_ms}, timing=timing, clock_mhz=[1400, 1980], tflops=flops(s) / s["time_ms"] / 1e9)

    scenarios = [
        long(scenario(128, False, 8192, 8192, 4, 16, 6.0, 1.0), 6.1, 1.02),
        long(scenario(128, True, 32768, 32768, 1, 64, 25.0, 1.0), 22.5, 0.92, alone_ms=26.0),
        long(scenario(128, False, 32768, 32768, 1, 64, 50.0, 1.0), 46.0, 0.93),
        long(scenario(128, False, 1024, 1024, 4, 16, 0.4, 1.0), 0.5, 1.2),  # short: left out
        dict(long(scenario(128, False, 16384, 16384, 2, 16, 7.0, 1.0), 7.1, 1.0), tflops=None),  # no TFLOP/s: out
    ]
    out = run("--by-duration", "fa3", write(tmp_path, "r.json", scenarios))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    rows = [line.split() for line in lines[1:4]]
    assert [r[0] for r in rows] == ["d128-h16-16-q8192-k8192", "d128-h64-64-q32768-k32768-causal",
                                    "d128-h64-64-q32768-k32768"]
    work = 4.0 * 4 * 16 * 8192 * 8192 * 128
    assert float(rows[0][2]) == pytest.approx(work / 6.0 / 1e9, abs=1) and float(rows[0][4]) == pytest.approx(
        work / 6.1 / 1e9, abs=1)
    causal_work = 4.0 * 64 * 128 * 32768 * 32768 / 2  # FlashAttention's count: half the square where s_q = s_k
    assert float(rows[1][2]) == pytest.approx(causal_work / 25.0 / 1e9, abs=1)
    assert rows[1][6] == "1.040" and rows[0][6] == "-" and rows[0][7] == "1400-1980"
    bands = {line.split()[0]: line.split() for line in lines[5:]}
    assert float(bands["5-10"][4]) == pytest.approx(1.02) and float(bands["20-40"][4]) == pytest.approx(0.92)
    assert bands[">="][:2] == [">=", "40"] and float(bands[">="][5]) == pytest.approx(0.93)
    none = run("--by-duration", "fa4", write(tmp_path, "r2.json", scenarios))
    assert none.returncode == 2 and "no scenario of at least 5 ms has a fa4 time" in none.stderr


def test_by_duration_shows_each_side_s_median_by_its_predecessor_where_the_run_kept_it(tmp_path):
    """A run of the balanced order keeps timing.after / timing.baselines_after: --by-duration adds, per band, each
    side's median after each predecessor over its own median; a run without them (the committed ones) shows none."""

    def long(s, fa3_ms, after, fa3_after):
        timing = {"paired": {"fa3": fa3_ms / s["time_ms"]}, "after": after, "baselines_after": {"fa3": fa3_after}}
        return dict(s, baselines={"fa3": fa3_ms}, timing=timing, tflops=flops(s) / s["time_ms"] / 1e9)

    scenarios = [
        long(scenario(128, False, 32768, 32768, 1, 64, 50.0, 1.0), 46.0,
             {"fa3": 52.0, "sdpa_flash": 48.0, "sync": 50.0}, {"kernel": 47.0, "sdpa_flash": 44.0}),
        long(scenario(128, False, 16384, 16384, 2, 64, 25.0, 1.0), 24.0,
             {"fa3": 26.0, "sdpa_flash": 24.0}, {"kernel": 24.0, "sdpa_flash": 24.0}),
    ]
    out = run("--by-duration", "fa3", write(tmp_path, "r.json", scenarios))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    at = lines.index("each side's median by the call just before it, over its own median (timing.after):")
    rows = lines[at + 1:]
    assert rows[0].split()[:4] == ["20-40", "ms", "kernel", "after:"] and "fa3 1.040" in rows[0]
    assert "sdpa_flash 0.960" in rows[0] and "sync" not in rows[0]
    assert rows[1].split()[2] == "fa3" and "kernel 1.000" in rows[1]
    assert rows[2].startswith("  >= 40 ms") and "fa3 1.040, sdpa_flash 0.960, sync 1.000" in rows[2]
    assert f"kernel {47 / 46:.3f}, sdpa_flash {44 / 46:.3f}" in rows[3]
    plain = [dict(s, timing={"paired": s["timing"]["paired"]}) for s in scenarios]
    out = run("--by-duration", "fa3", write(tmp_path, "plain.json", plain))
    assert out.returncode == 0 and "timing.after" not in out.stdout
