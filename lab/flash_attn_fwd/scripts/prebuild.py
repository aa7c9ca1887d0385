"""Build kernel files through the harness's build cache in parallel, before a script times them.

Usage (repo root): python3 -m lab.flash_attn_fwd.scripts.prebuild FILE [FILE ...]
Each file is built by the task's compiler and flags into the harness cache (the same build the
bench, compare.py, wait_profile.py and clock_log.py then find there); one line per file says how
long it took or why it failed. Exit code 2 if any file does not build.
"""

from __future__ import annotations

import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ks_tui.errors import KsError
from ks_tui.task import load_task
from lab.flash_attn_fwd.scripts import wait_profile  # its harness build of a kernel file

REPO = Path(__file__).resolve().parents[3]


def build_one(task, source: Path) -> str:
    t0 = time.time()
    try:
        wait_profile.build(task, source)
    except (wait_profile.ProfileError, KsError, OSError) as e:
        return f"FAILED {source}: {str(e).splitlines()[0]}"
    return f"built {source} ({time.time() - t0:.0f} s)"


def main(argv: list[str]) -> int:
    if not argv:
        print("prebuild.py: give the kernel files to build", file=sys.stderr)
        return 2
    try:
        task = load_task("flash_attn_fwd", REPO)
    except KsError as e:
        print(f"prebuild.py: {e}", file=sys.stderr)
        return 2
    # the builds are nvcc child processes: threads are enough to run them side by side
    with ThreadPoolExecutor(max_workers=len(argv)) as pool:
        lines = list(pool.map(lambda f: build_one(task, Path(f)), argv))
    print("\n".join(lines))
    return 2 if any(line.startswith("FAILED") for line in lines) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
