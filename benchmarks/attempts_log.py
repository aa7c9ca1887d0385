"""How long `ks log` takes on a session of N attempts (default 500).

Builds a throwaway workspace with a tiny task, opens a session with AttemptStore, then
writes N attempt commits (each changing the kernel, with the KS-* trailers) onto the
session branch in one `git fast-import` stream, and times:
  - `ks log --session ID` and `ks log --session ID --json` as child processes (wall time,
    including Python start-up), and
  - AttemptStore.attempts(ID) in-process (the single `git log` call plus parsing).

    python benchmarks/attempts_log.py [--attempts 500] [--repeat 5] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ks_tui.attempts import AttemptStore  # noqa: E402
from ks_tui.attempts.trailers import build_message  # noqa: E402

TASK = """\
name: toy
kernel: kernel.cpp
entry: toy_forward
reference: reference.py
scenarios:
  list: [{n: 8}]
  id: "n{n}"
tolerance: {rule: fp32_relative}
flops: "n * 2"
"""


def git(cwd: Path, *args: str, stdin: bytes | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True, check=True).stdout.decode()


def build_workspace(root: Path) -> Path:
    ws = root / "ws"
    (ws / "kernels" / "toy").mkdir(parents=True)
    (ws / "kernels" / "toy" / "task.yaml").write_text(TASK)
    (ws / "kernels" / "toy" / "kernel.cpp").write_text("// attempt 0\n")
    (ws / "kernels" / "toy" / "reference.py").write_text("#\n")
    (ws / ".gitignore").write_text("/sessions/\n")
    git(ws, "init", "-q")
    git(ws, "add", ".")
    git(ws, "-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "-qm", "bench workspace")
    return ws


def fast_import_attempts(ws: Path, sid: str, branch: str, n: int) -> None:
    """N commits on the session branch, each a new kernel body and a full trailer block."""
    parent = git(ws, "rev-parse", branch).strip()
    t0 = int(time.time()) - n
    chunks = []
    for i in range(1, n + 1):
        kernel = f"// attempt {i}\nextern \"C\" int toy_forward() {{ return {i}; }}\n".encode()
        status = "correct" if i % 5 else "incorrect"
        msg = build_message(f"attempt {i}: try tile {16 * (i % 8 + 1)}", {
            "KS-Session": sid, "KS-Attempt": i, "KS-Author": "agent", "KS-Status": status,
            "KS-Correct": "18/18" if status == "correct" else "12/18",
            "KS-Speedup": f"{0.5 + (i % 97) / 100:.4f}" if status == "correct" else "n/a",
            "KS-Baseline": "cudnn", "KS-Mode": "bench",
        }).encode()
        chunks.append(b"commit refs/heads/%s\n" % branch.encode())
        chunks.append(b"committer bench <bench@localhost> %d +0000\n" % (t0 + i))
        chunks.append(b"data %d\n%s\n" % (len(msg), msg))
        if i == 1:
            chunks.append(b"from %s\n" % parent.encode())
        chunks.append(b"M 100644 inline kernels/toy/kernel.cpp\ndata %d\n%s\n" % (len(kernel), kernel))
    git(ws, "fast-import", "--quiet", "--force", stdin=b"".join(chunks))


def wall(cmd: list[str], cwd: Path, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, check=True, capture_output=True)
        times.append(time.perf_counter() - t)
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--attempts", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", help="also write the numbers as JSON here")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="ks-bench-log-") as tmp:
        ws = build_workspace(Path(tmp))
        store = AttemptStore(ws)
        s = store.new_session("toy")
        fast_import_attempts(ws, s.id, s.branch, args.attempts)
        got = store.attempts(s.id)
        assert len(got) == args.attempts, len(got)

        ks = [sys.executable, "-m", "ks_tui", "log", "--session", s.id]
        cli = wall(ks, ws, args.repeat)
        cli_json = wall([*ks, "--json"], ws, args.repeat)
        startup = wall([sys.executable, "-m", "ks_tui", "--help"], ws, args.repeat)
        inproc = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            store.attempts(s.id)
            inproc.append(time.perf_counter() - t)

    report = {
        "what": f"`ks log` on a session of {args.attempts} attempts",
        "command": "python benchmarks/attempts_log.py " + " ".join(sys.argv[1:]),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cpus, git "
                   + git(Path("."), "--version").split()[-1],
        "repeat": args.repeat,
        "ks_log_s_median": statistics.median(cli),
        "ks_log_json_s_median": statistics.median(cli_json),
        "ks_help_s_median": statistics.median(startup),
        "store_attempts_s_median": statistics.median(inproc),
        "ks_log_s_all": cli, "store_attempts_s_all": inproc,
    }
    print(f"{report['what']} (median of {args.repeat}):")
    print(f"  ks log           {report['ks_log_s_median'] * 1000:7.1f} ms  (child process, wall)")
    print(f"  ks log --json    {report['ks_log_json_s_median'] * 1000:7.1f} ms")
    print(f"  ks --help        {report['ks_help_s_median'] * 1000:7.1f} ms  (Python start-up alone)")
    print(f"  store.attempts() {report['store_attempts_s_median'] * 1000:7.1f} ms  (in-process: one git log + parse)")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
