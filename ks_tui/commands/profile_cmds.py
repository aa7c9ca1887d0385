"""`ks profile TASK|ATTEMPT --scenario ID` (Nsight Compute) and `ks check --sanitize` (compute-sanitizer).

No torch here: both run the harness child under the NVIDIA tool and read what it wrote.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from ks_tui.errors import EXIT_KERNEL_FAILED, EXIT_OK, KsError


def register(sub) -> None:
    text = "run Nsight Compute on one scenario's kernel launch and keep a short summary with the attempt"
    p = sub.add_parser("profile", help=text, description=text)
    p.add_argument("target", metavar="TASK|ATTEMPT",
                   help="a task (its kernel, or --source) or an attempt of a session (number, hash, best, latest)")
    p.add_argument("--scenario", required=True, metavar="ID", help="the scenario whose launch is profiled")
    p.add_argument("--session", "-s", metavar="ID", help="the attempt's session (default: the latest)")
    p.add_argument("--source", metavar="FILE", help="with a TASK: profile this kernel file instead of the task's")
    p.add_argument("--timeout", type=float, metavar="S", help="kill the run after S seconds")
    p.add_argument("--json", action="store_true", help="print only the result JSON on stdout")
    p.set_defaults(func=profile_cmd)


def _target(args):
    """(task, source, (store, session id, attempt number) or None) for the command line's TASK|ATTEMPT."""
    from ks_tui.paths import find_workspace
    from ks_tui.task import load_task, resolve_task_dir

    workspace = find_workspace(args.workspace)
    try:
        task_dir = resolve_task_dir(args.target, workspace)
    except KsError as not_a_task:
        from ks_tui.attempts import AttemptStore

        if args.source:
            raise KsError("--source goes with a TASK, not an attempt (the attempt's kernel is profiled)") from None
        try:
            store = AttemptStore(find_workspace(args.workspace, sessions=True))
            info = store.session(args.session) if args.session else store.latest_session()
            attempt = store.resolve(info.id, args.target)
        except KsError as e:
            raise KsError(f"{args.target!r} is neither a task nor an attempt: {not_a_task.message}; {e.message}",
                          hint="ks profile TASK --scenario ID, or ks profile N --scenario ID in a session") from None
        return store.task(info.id), None, (store, info.id, attempt.number)
    if args.session:
        raise KsError("--session goes with an ATTEMPT, not a task")
    return load_task(task_dir, workspace), args.source, None


def profile_cmd(args) -> int:
    from ks_tui.harness import profile as prof
    from ks_tui.harness.report import render

    task, source, attempt = _target(args)
    with tempfile.TemporaryDirectory(prefix="ks-profile-kernel-") as tmp:
        if attempt is not None:
            store, sid, number = attempt
            source = Path(tmp) / task.kernel.name
            source.write_bytes(store.kernel_at(sid, number))
        result = prof.profile(task, source, args.scenario, timeout=args.timeout)
    kept = None
    if attempt is not None and result.get("profile"):
        store, sid, number = attempt
        kept = prof.keep(store.sessions_dir, sid, number, result["profile"])
        result["kept"] = str(kept)
    if args.json:
        print(json.dumps(result, indent=1))
    elif result.get("profile"):
        print("\n".join(prof.summary_lines(result["profile"])))
        if kept:
            print(f"kept with attempt {attempt[2]} of session {attempt[1]} ({kept})")
    else:
        print(render(result))
    return EXIT_OK if result.get("profile") else EXIT_KERNEL_FAILED


def sanitize_cmd(args, task, ids) -> int:
    """`ks check --sanitize`: exit 1 on any finding in the kernel's code (or a failed check), naming it."""
    from ks_tui.harness import sanitize as san
    from ks_tui.harness.report import render

    def tool_line(tool: str) -> None:
        if not args.json:
            print(f"compute-sanitizer --tool {tool}", file=sys.stderr, flush=True)

    result = san.sanitize(task, args.source, ids, timeout=args.timeout, on_tool=tool_line)
    report = result["sanitizer"]
    found = san.first_finding(report)
    if found:
        result["message"] = f"compute-sanitizer {found}"
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(render(result))
        print("\n".join(san.sanitizer_lines(report)))
    return EXIT_OK if report["clean"] and result.get("status") == "correct" else EXIT_KERNEL_FAILED
