"""fa3_sass.py: which of FA3's kernels it takes (from their demangled names), and, where the wheel and the CUDA tools
are here, the steady loops it finds in them and in ours."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lab.flash_attn_fwd.scripts import fa3_sass

REPO = Path(__file__).resolve().parents[3]
RUN = [sys.executable, "-m", "lab.flash_attn_fwd.scripts.fa3_sass"]


def name(tile_n: int, flags: str, element: str = "bfloat16_t", cluster: int = 1, dv: int = 128) -> str:
    """A demangled FA3 kernel name, cut to the mainloop's arguments (the rest does not matter here)."""
    return ("void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<"
            f"flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<{cluster}>, cute::C<1>, cute::C<1> >, "
            f"cute::tuple<cute::C<128>, cute::C<{tile_n}>, cute::C<128> >, {dv}, cutlass::{element}, float, "
            f"cutlass::arch::Sm90, {flags}>, flash::CollectiveEpilogueFwd<...> > > >(...)")


CAUSAL = "true, false, false, false, false, false, false, true, true, false, false, false"
UNMASKED = "false, false, false, false, false, false, false, true, true, false, false, false"


def test_the_plain_hdim128_bf16_kernels_are_taken():
    args = fa3_sass.parse_mainloop(name(128, CAUSAL))
    assert args["tile"] == (128, 128, 128) and args["causal"] and args["overlap"] and not args["pack_gqa"]
    assert fa3_sass.wanted(args) == "FA3 causal 128x128"
    assert fa3_sass.wanted(fa3_sass.parse_mainloop(name(176, UNMASKED))) == "FA3 unmasked 128x176"


def test_variants_a_grid_launch_does_not_run_are_left():
    pack_gqa = CAUSAL.split(", ")
    pack_gqa[9] = "true"
    varlen = UNMASKED.split(", ")
    varlen[3] = "true"
    for n in (name(128, ", ".join(pack_gqa)), name(176, ", ".join(varlen)), name(176, UNMASKED, cluster=2),
              name(128, CAUSAL, element="half_t"), name(176, UNMASKED, dv=256), name(176, CAUSAL)):
        args = fa3_sass.parse_mainloop(n)
        assert args is not None and fa3_sass.wanted(args) is None, n
    assert fa3_sass.parse_mainloop("void flash::FlashAttnFwdCombine<...>(...)") is None


def test_missing_wheel_is_a_clear_error(tmp_path):
    bad = subprocess.run([*RUN, "--wheel", str(tmp_path / "nothing.whl")], cwd=REPO, capture_output=True, text=True,
                         timeout=60)
    assert bad.returncode == 2 and "no FA3 wheel" in bad.stderr and "Traceback" not in bad.stderr
    junk = tmp_path / "fa3_fwd-0.0.3-junk.whl"
    junk.write_text("not a zip")
    bad = subprocess.run([*RUN, "--wheel", str(junk)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and bad.stderr.startswith("fa3_sass: ")


def _have_tools() -> bool:
    try:
        fa3_sass.sass.cuda_tool("cuobjdump"), fa3_sass.sass.cuda_tool("nvdisasm")
    except fa3_sass.sass.SassError:
        return False
    return all(shutil.which(t) for t in ("nvcc", "c++filt"))


WHEELS = sorted((REPO / ".whl").glob("fa3_fwd-*.whl"))


@pytest.mark.skipif(not WHEELS or not _have_tools(), reason="needs the FA3 wheel in .whl/ and cuobjdump, nvdisasm, nvcc")
def test_steady_loops_of_fa3_and_ours():
    out = subprocess.run([*RUN, "--wheel", str(WHEELS[-1])], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    rows = {line[:24].strip(): line for line in out.stdout.splitlines()}
    # a steady loop: a block's Q K^T and P V (16 wgmmas a 128-key block, 19 for FA3's 176 keys), one exponential a score
    # and a row's two rescale factors
    assert "HGMMA  16  EX2  66" in rows["FA3 causal 128x128"] and "BAR.ARV" in rows["FA3 causal 128x128"]
    assert "HGMMA  19  EX2  90" in rows["FA3 unmasked 128x176"]
    assert "HGMMA  16  EX2  66" in rows["ours unmasked 128x128"] and "BAR.ARV" not in rows["ours unmasked 128x128"]
