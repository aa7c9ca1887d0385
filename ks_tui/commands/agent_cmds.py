"""`ks run` (the agent, headless) and `ks report` (what a session did)."""

from __future__ import annotations

import contextlib
import json
import signal
import sys
import threading

from ks_tui.errors import KsError


def register(sub) -> None:
    p = sub.add_parser("run", help="run the agent on a task (headless: a readable stream, then a summary)",
                       description="Run the agent on TASK. Without --session/--resume a new session starts.")
    p.add_argument("task", nargs="?", help="task name under kernels/ or a task folder")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--session", metavar="ID", help="continue this session (its conversation, if any)")
    which.add_argument("--resume", metavar="ID", help="resume a session from its trace (after a crash or kill)")
    p.add_argument("--headless", action="store_true",
                   help="no screen: print the session as it runs (what `ks run` always does; for the screen, `ks tui`)")
    p.add_argument("--autonomous", action="store_true",
                   help="nobody answers: at each decision point the bank's top question is sent at once")
    p.add_argument("--max-turns", type=int, metavar="N", help="stop after N model turns in this run")
    p.add_argument("--max-cost", type=float, metavar="USD", help="stop once this run has cost USD")
    p.add_argument("--model", metavar="M", help="model name (default: config, else claude-opus-4-6)")
    add_provider_arg(p)
    p.add_argument("--enable-bash", action="store_true", help="give the agent a bash tool (headless: no approval)")
    p.set_defaults(func=cmd_run)

    r = sub.add_parser("report", help="summarize a session: attempts, best speedup, questions, tokens, cost")
    # The session as `ks log` and `ks try` take it (--session/-s, default the most recently active), and
    # positionally, as the first form of this command did.
    r.add_argument("session", metavar="SESSION", nargs="?", help="session id")
    r.add_argument("--session", "-s", dest="session_opt", metavar="ID",
                   help="session id (default: the most recently active)")
    r.add_argument("--json", action="store_true", help="one JSON document on stdout")
    r.add_argument("--html", metavar="FILE",
                   help="write a page with plots (speedup over attempts, per-scenario heat map, families, questions) "
                        "to FILE: one self-contained file, nothing fetched when opened")
    r.set_defaults(func=cmd_report)


def add_provider_arg(p) -> None:
    from ks_tui.agent.providers import PROVIDERS

    p.add_argument("--provider", metavar="NAME",
                   help=f"the model's server: {', '.join(PROVIDERS)} (default: KS_PROVIDER, the config, "
                        "else anthropic; docs/agent.md)")


def provider_flag(args) -> str | None:
    """--provider after the command, else before it (`ks --provider NAME tui`)."""
    return getattr(args, "provider", None) or getattr(args, "top_provider", None)


def _config(args, workspace):
    from ks_tui.config import load_config

    if args.max_turns is not None and args.max_turns < 1:
        raise KsError(f"--max-turns must be at least 1, not {args.max_turns}")
    if args.max_cost is not None and not args.max_cost > 0:
        raise KsError(f"--max-cost must be a positive amount in USD, not {args.max_cost}")
    cfg = load_config(workspace).with_overrides(model=args.model, max_turns=args.max_turns,
                                                max_cost_usd=args.max_cost,
                                                enable_bash=True if args.enable_bash else None)
    cfg = cfg.with_provider(provider_flag(args))
    if cfg.max_cost_usd is not None and cfg.price_for(cfg.resolved_model()) is None:
        m = cfg.resolved_model()
        raise KsError(f"--max-cost cannot be kept: {m} is unpriced (add [prices.\"{m}\"] with input, output, "
                      "cache_write, cache_read in USD per million tokens to ~/.config/ks/config.toml)")
    return cfg


def cmd_run(args) -> int:
    from ks_tui.agent import providers
    from ks_tui.paths import find_workspace, main_workspace

    # `ks run` is the agent without a screen whether or not --headless is given (the screen is `ks tui TASK`).
    if not args.task and not (args.session or args.resume):
        raise KsError("name a TASK, or a session with --session/--resume")
    workspace = main_workspace(find_workspace(args.workspace, sessions=True))
    cfg = _config(args, workspace)
    providers.check(cfg.provider)  # a key, an endpoint, the SDK's extra: before any session is made

    from ks_tui.agent.headless import HeadlessPrinter
    from ks_tui.engine import Session

    human = not args.autonomous and sys.stdin.isatty()
    kw = dict(autonomous=args.autonomous or not human, human_present=human, use_agent=True)
    sid = args.session or args.resume
    if sid:
        session = Session.open(workspace, sid, cfg, **kw)
        if args.task and args.task not in (session.task.name, str(session.task.dir)):
            raise KsError(f"session {sid} works on task {session.task.name}, not {args.task}")
        if args.resume and not session.resumed:
            raise KsError(f"session {sid} has no conversation in its trace to resume",
                          hint=f"start it with `ks run --session {sid} --headless`")
    else:
        session = Session.create(workspace, args.task, cfg, **kw)

    printer = HeadlessPrinter(sys.stdout)
    session.subscribe(printer)
    if cfg.enable_bash:  # headless, --enable-bash is the approval: nobody is asked per command
        from ks_tui import events as ev

        session.subscribe(lambda e: session.approve_bash(e.id, True) if isinstance(e, ev.BashApprovalRequested)
                          else None)
    mode = "autonomous" if kw["autonomous"] else "you answer questions on stdin (number, text, or empty to skip)"
    via = "" if cfg.provider == "anthropic" else f" via {cfg.provider}"
    print(f"session {session.id} on {session.task.name} with {cfg.resolved_model()}{via} ({mode})", flush=True)
    print(f"worktree {session.info.worktree}", flush=True)
    if human:
        _read_answers_from_stdin(session)
    with _stop_on_signals(session) as signalled:
        session.start()
        while not session.join(timeout=0.5):
            if len(signalled) >= 3:
                break  # asked three times: stop waiting for the session to wind down
    failed = signalled or (session.end is not None and session.end.reason.startswith(tuple(f for f, _ in _FAILED_ENDS)))
    if failed and not sid:  # a start that failed (bad key, unknown model, API down) leaves no empty session behind
        from ks_tui.attempts.prune import discard_if_empty

        if discard_if_empty(session.store, session.id):
            print(f"ks: removed the new session {session.id}: nothing was done in it", file=sys.stderr)
    return 130 if signalled else _exit_code(session.end)


# How a headless run ended that is not a plain end (0): the reason's start, its exit code.
_FAILED_ENDS = (("error:", 2),  # bad key, unknown model, a rejected request, a busy session
                ("internal error", 1), ("api unavailable", 1),  # could not go on; resume later
                ("ended: refusal", 1), ("ended: model_context_window_exceeded", 1))


def _exit_code(end) -> int:
    if end is None:
        return 0
    for start, code in _FAILED_ENDS:
        if end.reason.startswith(start):
            print(f"ks: {end.reason}", file=sys.stderr)
            return code
    return 0


@contextlib.contextmanager
def _stop_on_signals(session):
    """Ctrl-C, SIGTERM (kill) and SIGHUP (the terminal closed) stop the session at its next
    safe point: the running harness or bash command is killed and the trace gets its end.

    A handler, not KeyboardInterrupt: raised inside Thread.join, KeyboardInterrupt can leave
    the thread marked as finished while it still runs, and the process exited at once."""
    signalled: list[int] = []

    def on_signal(signum, frame) -> None:
        if not signalled:
            print(f"\nks: stopping on {signal.Signals(signum).name} (the session can be resumed with --resume)",
                  file=sys.stderr, flush=True)
            session.stop()
        signalled.append(signum)

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        yield signalled
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _read_answers_from_stdin(session) -> None:
    """A person at the terminal answers decision points: a number picks, text asks, empty skips."""
    from ks_tui import events as ev

    offered: list[dict] = []
    session.subscribe(lambda e: offered.__setitem__(slice(None), e.questions)
                      if isinstance(e, ev.DecisionPointReached) else None)

    def reader() -> None:
        for line in sys.stdin:
            s = line.strip()
            if s.isdigit() and 1 <= int(s) <= len(offered):
                session.answer_question(offered[int(s) - 1]["id"], None)
            elif s in ("", "s", "skip"):
                session.answer_question(None, None)
            else:
                session.answer_question(None, s)

    threading.Thread(target=reader, name="ks-stdin", daemon=True).start()


def cmd_report(args) -> int:
    from ks_tui.agent.report import build_report, report_text
    from ks_tui.attempts import AttemptStore
    from ks_tui.paths import find_workspace
    from ks_tui.trace import Trace

    store = AttemptStore(find_workspace(args.workspace, sessions=True))
    if args.session and args.session_opt and args.session != args.session_opt:
        raise KsError(f"two sessions named: {args.session} and --session {args.session_opt}",
                      hint="name one, positionally or with --session")
    sid = args.session or args.session_opt
    if args.html:
        from ks_tui.reports.html import write_report

        return write_report(store, sid, args.html, as_json=args.json)
    info = store.session(sid) if sid else store.latest_session()
    records = Trace.read(store.trace_path(info.id))
    report = build_report(info.to_dict(), records, [a.to_dict() for a in store.attempts(info.id)])
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        print(report_text(report))
    return 0
