"""Child entry: `python -m ks_tui.harness run --task DIR --source FILE --mode check|bench ...`.

Writes one result JSON to --out (or stdout). Exit 0 when a result was written (whatever the
kernel's verdict), 2 when the task itself is bad input. Progress goes to stderr as JSON lines.
"""

from __future__ import annotations

import time

STARTED_AT = time.time()  # before the heavier imports: the parent measures process start-up with it

import argparse  # noqa: E402
import faulthandler  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import traceback  # noqa: E402
from pathlib import Path  # noqa: E402


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m ks_tui.harness")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="compile, check (and time) one kernel; write one JSON result")
    r.add_argument("--task", required=True, help="task folder (holding task.yaml)")
    r.add_argument("--source", help="kernel file to use instead of the task's own")
    r.add_argument("--mode", choices=("check", "bench", "profile"), default="check")
    r.add_argument("--quick", action="store_true")
    r.add_argument("--scenarios", help="comma-separated scenario ids")
    r.add_argument("--out", help="write the result here instead of stdout")
    r.add_argument("--seed", type=int)
    r.add_argument("--cached-baselines", action="store_true")
    r.add_argument("--die-with-parent", action="store_true",
                   help="stdin is a pipe the parent holds open: at its end, kill this process group")
    w = sub.add_parser("warm", help="pre-load for TASK, then run the one job (run's arguments, JSON) read from stdin")
    w.add_argument("--task", required=True)
    s = sub.add_parser("standby", help="keep a pre-started child for TASK waiting between one-shot commands")
    s.add_argument("--task", required=True)
    s.add_argument("--box", required=True, help="the sandbox mode the children run in")
    s.add_argument("--address", required=True, help="the name the command computed for this key")
    s.add_argument("--idle", type=float, required=True, help="seconds without a job before it exits")
    return p


def _die_with_parent() -> None:
    """The parent (ks) never writes to our stdin; its end means the parent is gone (kill -9,
    a closed terminal), and nobody is left to kill a kernel that hangs or holds the GPU. So
    kill our own process group (the kernel's children included) then."""
    def watch() -> None:
        try:
            while sys.stdin.buffer.read(4096):
                pass
        except (OSError, ValueError):
            pass
        os.killpg(os.getpgrp(), signal.SIGKILL)

    threading.Thread(target=watch, name="ks-parent-watch", daemon=True).start()


def _bad_input(message: str, out: str | None) -> int:
    """The task itself is bad input (exit 2). Said twice: on the pipe for the parent to print,
    and in the result file, which the parent requires too, so a kernel printing the same line
    on the shared pipe and exiting 2 is not taken for it."""
    from ks_tui.harness.runner import emit

    emit("bad_input", message)
    if out:
        Path(out).write_text(json.dumps({"bad_input": message}))
    return 2


def main(argv: list[str] | None = None, warm: dict | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.cmd == "warm":
        from ks_tui.harness.warm import serve

        return serve(args.task, STARTED_AT, main)
    if args.cmd == "standby":
        from ks_tui.harness import standby

        return standby.serve(args.task, args.box, args.address, args.idle)
    if args.die_with_parent:
        _die_with_parent()
    faulthandler.enable()  # a segfault prints the Python stack: which scenario, which call

    from ks_tui.errors import KsError
    from ks_tui.harness.result import summarize, where_text
    from ks_tui.harness.runner import BadTaskInput, Runner
    from ks_tui.task import load_task

    try:
        task_dir = Path(args.task).resolve()
        task = load_task(task_dir, task_dir.parent.parent)
        source = Path(args.source).resolve() if args.source else task.kernel
        if not source.is_file():
            raise KsError(f"kernel source not found: {source}")
        ids = [s for s in args.scenarios.split(",") if s] if args.scenarios else None
        runner = Runner(task, source, args.mode, args.quick, ids, args.seed, args.cached_baselines)
    except KsError as e:
        return _bad_input(str(e), args.out)
    result = runner.result
    result["timings"]["started_at"] = STARTED_AT
    if warm:  # a pre-started child (harness/warm.py): its run starts when the job came
        result["timings"].update(warm)
    # harness imports + task load
    result["timings"]["setup_s"] = round(time.time() - result["timings"]["started_at"], 4)
    try:
        runner.run()
    except BadTaskInput as e:
        return _bad_input(str(e), args.out)
    except Exception as e:  # the kernel broke the process state (e.g. a CUDA illegal address)
        traceback.print_exc()
        first = (str(e).strip().splitlines() or [""])[0]
        result["status"] = "crashed"
        result["message"] = f"{type(e).__name__}{where_text(runner.at)}: {first}"
        summarize(result, total=len(runner.scenarios))  # `correct` counts what finished, as for a signal
    text = json.dumps(result, indent=1, default=str)
    if args.out:
        Path(args.out).write_text(text)
    else:
        sys.stdout.write(text + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # The result is on disk; skip interpreter teardown (torch's takes a few hundred ms).
    os._exit(code)
