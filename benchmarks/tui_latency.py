"""How fast the screen starts and how promptly it answers keys while a benchmark runs.

Runs the real `ks` in a detached tmux window (120x36) on a fresh `ks init` workspace, in
human mode, and watches the window with `tmux capture-pane`:

- start-up: from starting `ks` until the panel titles are drawn, and until the session is
  open (the status bar says "human mode"); then `q` and the time until the shell prompt
  is back, with tmux's view of the terminal (alternate screen off, cursor visible);
- key-to-redraw: `d` flips the Diff panel's title (previous <-> best); each press is timed
  until the new title is on screen, first with nothing running, then during a full
  `attention_cpu` benchmark started with `r`.

Polling capture-pane every few milliseconds bounds the resolution (~5-10 ms on this box).
Usage: python benchmarks/tui_latency.py [--runs N] [--out benchmarks/results/tui_latency.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

SOCKETS = Path(tempfile.mkdtemp(prefix="ks-latency-"))  # tmux server sockets, removed at the end
SOCKET = str(SOCKETS / "none")


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", "-S", SOCKET, *args], capture_output=True, text=True, timeout=30).stdout


def pane() -> str:
    return tmux("capture-pane", "-p", "-t", "ks")


def wait_for(needle: str, timeout: float = 120.0, poll: float = 0.005) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if needle in pane():
            return time.monotonic()
        time.sleep(poll)
    raise RuntimeError(f"{needle!r} did not appear; pane:\n{pane()}")


def start_ks(workspace: Path) -> float:
    global SOCKET
    SOCKET = str(SOCKETS / uuid.uuid4().hex[:6])  # a fresh server: a killed one lingers briefly
    command = f"{sys.executable} -m ks_tui tui --human; echo KS-EXIT=$?; sleep 600"
    t0 = time.monotonic()
    tmux("new-session", "-d", "-s", "ks", "-x", "120", "-y", "36", "-c", str(workspace), command)
    return t0


def startup_run(workspace: Path) -> dict:
    t0 = start_ks(workspace)
    drawn = wait_for("Benchmark")
    ready = wait_for("human mode")
    t_quit = time.monotonic()
    tmux("send-keys", "-t", "ks", "q")
    gone = wait_for("KS-EXIT=")
    state = tmux("display", "-p", "-t", "ks", "#{alternate_on} #{cursor_flag}").split()
    exit_line = next(line for line in pane().splitlines() if "KS-EXIT=" in line)
    tmux("kill-server")
    return {"first_draw_s": round(drawn - t0, 3), "session_ready_s": round(ready - t0, 3),
            "quit_s": round(gone - t_quit, 3), "exit": exit_line.strip(),
            "terminal_restored": state == ["0", "1"]}


def key_latencies(n: int, busy_marker: str | None = None) -> list[float]:
    """Press `d` n times; each time, wait until the Diff title shows the other base."""
    out = []
    base = "previous"
    for _ in range(n):
        if busy_marker is not None and busy_marker not in pane():
            break  # the benchmark finished: stop measuring "during a run"
        base = "best" if base == "previous" else "previous"
        t0 = time.monotonic()
        tmux("send-keys", "-t", "ks", "d")
        out.append(round(wait_for(f"latest vs {base}", timeout=30, poll=0.002) - t0, 4))
        time.sleep(0.1)
    return out


def summary(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    ordered = sorted(values)
    return {"n": len(values), "median_ms": round(1000 * statistics.median(values), 1),
            "p90_ms": round(1000 * ordered[int(0.9 * (len(ordered) - 1))], 1),
            "max_ms": round(1000 * max(values), 1)}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", default="benchmarks/results/tui_latency.json")
    args = parser.parse_args()
    if shutil.which("tmux") is None:
        print("tmux is not installed", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "ws"
        subprocess.run([sys.executable, "-m", "ks_tui", "init", str(workspace)], check=True, capture_output=True)
        startups = [startup_run(workspace) for _ in range(args.runs)]

        start_ks(workspace)
        wait_for("human mode")
        idle = key_latencies(20)
        tmux("send-keys", "-t", "ks", "r")
        wait_for("bench ", timeout=120)  # the progress label: "bench 1/20 ..." (after the check phase)
        during = key_latencies(40, busy_marker="%")  # the progress bar shows a percentage while it runs
        progress_seen = pane()
        tmux("kill-server")

    result = {
        "command": "python benchmarks/tui_latency.py " + " ".join(sys.argv[1:]),
        "machine": f"{platform.node()} {platform.processor() or platform.machine()}, "
                   f"{__import__('os').cpu_count()} CPUs",
        "terminal": "tmux 120x36, detached; capture-pane polling",
        "startup_runs": startups,
        "first_draw_s": summary([r["first_draw_s"] for r in startups]),
        "session_ready_s": summary([r["session_ready_s"] for r in startups]),
        "key_to_redraw_idle": summary(idle),
        "key_to_redraw_during_bench": summary(during),
        "progress_label_during_bench": next((re.search(r"\d+% [^│]*", line).group(0).strip()
                                             for line in progress_seen.splitlines() if "%" in line), ""),
    }
    shutil.rmtree(SOCKETS, ignore_errors=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
