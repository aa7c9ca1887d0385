"""Candidate kernels as patches of kernels/flash_attn_fwd/best/kernel.cu (each a few host-side lines): `write`
applies one to best and writes the full self-contained .cu the harness compiles.

    python3 -m lab.flash_attn_fwd.candidates DIR [NAME ...]   ->  DIR/NAME/kernel.cu for each (all by default)
"""

from __future__ import annotations

import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
BEST = HERE.parents[2] / "kernels" / "flash_attn_fwd" / "best" / "kernel.cu"


def names() -> list[str]:
    return sorted(p.stem for p in HERE.glob("*.patch"))


def write(name: str, folder: Path) -> Path:
    """FOLDER/NAME/kernel.cu: best with NAME.patch applied (CalledProcessError when it no longer applies)."""
    out = Path(folder) / name / "kernel.cu"
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["patch", "-s", "-o", str(out), str(BEST), str(HERE / f"{name}.patch")], check=True)
    return out
