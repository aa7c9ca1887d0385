"""`ks init`, `ks session new|export|import`, `ks sessions`, `ks try`, `ks log`, `ks show`, `ks remark`,
`ks rollback`.

Thin: parse, call ks_tui.attempts.AttemptStore (and the harness client for `ks try`), print.
git and the harness are imported inside the handlers so `ks --help` stays fast.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sys
from pathlib import Path

from ks_tui.errors import EXIT_KERNEL_FAILED, EXIT_OK, KsError


def register(sub) -> None:
    p = sub.add_parser("init", help="make a workspace: a git repo with the bundled tasks and question bank")
    p.add_argument("dir", metavar="DIR", help="folder to create (or an empty/existing repo folder)")
    p.set_defaults(func=cmd_init)

    p = sub.add_parser("session", help="start a session (its own branch and worktree)")
    ssub = p.add_subparsers(dest="session_command", metavar="ACTION", required=True, parser_class=type(p))
    new = ssub.add_parser("new", help="create branch ks/<task>/<id> and a worktree under sessions/<id>/; prints the id")
    new.add_argument("task", metavar="TASK", help="task name under kernels/")
    new.add_argument("--json", action="store_true", help="print the session as one JSON document")
    new.set_defaults(func=cmd_session_new)
    exp = ssub.add_parser("export", help="write a session (its attempts, results and trace) to one .tar.gz file, "
                                         "to carry it to another checkout")
    exp.add_argument("session", metavar="ID", help="session id")
    exp.add_argument("file", metavar="FILE", help="the file to write")
    exp.add_argument("--whole", action="store_true",
                     help="bundle the history the session started from too, so a repository without it (another "
                          "machine's workspace) can import it")
    exp.set_defaults(func=cmd_session_export)
    imp = ssub.add_parser("import", help="recreate a session from `ks session export`'s file (branch, worktree, "
                                         "results, trace)")
    imp.add_argument("file", metavar="FILE", help="the exported file")
    imp.set_defaults(func=cmd_session_import)
    # `ks sessions`, also reachable as `ks session list` beside new/export/import
    for p in (ssub.add_parser("list", help="the same as `ks sessions`"),
              sub.add_parser("sessions", help="list sessions: task, attempts, best speedup, last activity")):
        p.add_argument("--json", action="store_true", help="print one JSON document")
        p.set_defaults(func=cmd_sessions)
    p.add_argument("action", nargs="?", choices=("list", "prune"), default="list",
                   help="prune: remove sessions without attempts that are empty (idle 10 min) or abandoned "
                        "(idle 7 days); never one with attempts or uncommitted changes")
    p.add_argument("--dry-run", action="store_true", help="prune: list what would be removed, remove nothing")
    p.add_argument("--yes", "-y", action="store_true", help="prune: remove without asking")

    p = sub.add_parser("try", help="run the harness on the session's kernel and commit the attempt")
    add_try_args(p, lab=False)

    p = sub.add_parser("log", help="list a session's attempts; * marks the best correct one")
    _session_arg(p)
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(func=cmd_log)

    p = sub.add_parser("show", help="an attempt's diff and per-scenario results")
    p.add_argument("attempt", metavar="ATTEMPT", help="number, hash prefix, best or latest")
    _session_arg(p)
    p.add_argument("--against", metavar="N|best", default="previous",
                   help="diff against this attempt (default: the previous one)")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument("--kernel", action="store_true",
                   help="print only the attempt's kernel file as committed (e.g. to time it beside another)")
    p.set_defaults(func=cmd_show)

    from ks_tui.commands import lab_cmds

    lab_cmds.add_remark_parser(sub, hidden=True)  # `ks lab remark`; `ks remark` stays, unlisted

    p = sub.add_parser("rollback", help="new commit whose kernel equals ATTEMPT's (history is kept)")
    p.add_argument("attempt", metavar="ATTEMPT", help="number, hash prefix or best")
    _session_arg(p)
    p.add_argument("--json", action="store_true", help="print the new attempt as one JSON document")
    _stale_arg(p)
    p.set_defaults(func=cmd_rollback)


def add_try_args(p, lab: bool) -> None:
    """`ks try`'s arguments; with `lab`, `ks lab record`'s (the same plus --result/--kernel/--again listed)."""
    _session_arg(p)
    p.add_argument("--check", action="store_true", help="correctness only (default: bench)")
    p.add_argument("--quick", action="store_true", help="the task's quick scenarios only")
    p.add_argument("--timeout", type=float, metavar="S", help="harness time limit in seconds")
    p.add_argument("--summary", metavar="TEXT", default="", help="commit summary line")
    p.add_argument("--question", metavar="QID", help="id of the question that led to this attempt")
    p.add_argument("--author", choices=("human", "agent"), default="human",
                   help="who wrote this kernel (default: human)")
    source = p.add_mutually_exclusive_group()
    # --kernel, --result, --again are `ks lab record`'s; on `ks try` unlisted, with a notice.
    from ks_tui.commands import lab_cmds

    lab_cmds.add_record_args(p, source, hidden=not lab)
    source.add_argument("--no-run", action="store_true",
                        help="commit a changed kernel as 'unchecked' without running the harness")
    p.add_argument("--json", action="store_true", help="print the attempt and result as one JSON document")
    _stale_arg(p)
    p.set_defaults(func=cmd_try)


def _session_arg(p, required: bool = False) -> None:
    p.add_argument("--session", "-s", metavar="ID", required=required,
                   help="session id" + ("" if required else " (default: the most recently active)"))


def _stale_arg(p) -> None:
    p.add_argument("--remove-stale-lock", action="store_true",
                   help="delete a git lock file left by a killed git (only when no git process holds it)")


def _store(args):
    from ks_tui.attempts import AttemptStore
    from ks_tui.paths import find_workspace

    return AttemptStore(find_workspace(args.workspace, sessions=True),
                        remove_stale_locks=getattr(args, "remove_stale_lock", False))


def _dump(doc) -> None:
    print(json.dumps(doc, indent=2, default=str))


def _say(text: str) -> None:
    print(text, file=sys.stderr)


# ---------------------------------------------------------------------------- handlers

def cmd_init(args) -> int:
    from ks_tui.workspace import init_workspace

    dest = init_workspace(args.dir)
    print(f"workspace ready: {dest}")
    print("next: cd into it and run `ks session new TASK` (tasks: "
          + ", ".join(sorted(p.name for p in (dest / "kernels").iterdir() if (p / "task.yaml").exists())) + ")")
    return EXIT_OK


def cmd_session_new(args) -> int:
    store = _store(args)
    info = store.new_session(args.task)
    pending = store.uncommitted_task_changes(info.task)
    if pending:
        _say("note: the session starts from HEAD; uncommitted changes in your checkout are not in it: "
             + ", ".join(pending))
    if args.json:
        _dump(info.to_dict())
    else:
        print(info.id)
        _say(f"branch {info.branch}, worktree {info.worktree}")
    return EXIT_OK


def cmd_session_export(args) -> int:
    from ks_tui.attempts.transfer import export_session

    store = _store(args)
    info, n = export_session(store, args.session, Path(args.file), whole=args.whole)
    print(f"session {info.id}: {n} attempts written to {args.file}")
    with contextlib.suppress(KsError):  # no worktree here: nothing unrecorded to warn about
        if store.unchanged_since(info.id) is None:
            _say(f"warning: the kernel in {info.worktree} has an edit not recorded as an attempt; the export "
                 f"holds attempts only (record it with `ks try -s {info.id} --no-run`, then export again)")
    return EXIT_OK


def cmd_session_import(args) -> int:
    from ks_tui.attempts.transfer import import_session

    info, n = import_session(_store(args), Path(args.file))
    print(f"session {info.id} ({info.task}): {n} attempts; worktree {info.worktree}")
    return EXIT_OK


def cmd_sessions(args) -> int:
    from ks_tui.attempts.render import sessions_table

    if getattr(args, "action", "list") == "prune":
        from ks_tui.commands.prune_cmds import cmd_prune

        return cmd_prune(_store(args), args)

    found = _store(args).sessions()
    if args.json:
        _dump({"sessions": [s.to_dict() for s in found]})
    elif not found:
        print("no sessions yet; start one with `ks session new TASK`")
    else:
        print(sessions_table(found))
    return EXIT_OK


def _progress(event: dict) -> None:
    prog = event.get("progress", event)
    if isinstance(prog, dict) and "done" in prog:
        _say(f"  [{prog.get('done')}/{prog.get('total')}] {prog.get('phase') or ''} {prog.get('scenario') or ''}".rstrip())


def _unchanged(args, same) -> None:
    if args.json:
        _dump({"attempt": None, "unchanged_since": same.to_dict()})
    else:
        print(f"kernel unchanged since attempt {same.number} ({same.short}); nothing recorded")


def cmd_try(args) -> int:
    from ks_tui import workflow
    from ks_tui.attempts.render import attempt_line, device_change_note
    from ks_tui.commands.lab_cmds import notice

    notice(args, [("result", "--result"), ("kernel", "--kernel"), ("again", "--again")], "ks try", "ks lab record")
    if args.again and args.no_run:
        raise KsError("--again records a new measurement; it needs a harness run, not --no-run")
    store = _store(args)
    info = _session_for(store, args)
    _say_which(args, info)
    bank = _bank_for(args) if args.question else None
    question = _bank_question(bank, args.question) if bank else None  # before any long run
    if args.result:
        from ks_tui.commands.lab_cmds import record_result_file

        recorded = record_result_file(args, store, info)
    else:
        def started(task) -> None:
            _say(f"running the harness ({'check' if args.check else 'bench'}{', quick' if args.quick else ''}) "
                 f"on {task.kernel}")

        from ks_tui.commands.harness_cmds import say_standby, standby_pool

        pool = standby_pool()
        recorded = workflow.try_kernel(
            store, info.id, mode="check" if args.check else "bench", quick=args.quick, author=args.author,
            question=args.question, summary=args.summary, timeout=args.timeout, on_progress=_progress,
            again=args.again, no_run=args.no_run, on_start=started,
            prepare=(lambda: store.replace_kernel(info.id, Path(args.kernel))) if args.kernel else None, pool=pool)
        say_standby(pool, info.task)
    if recorded.unchanged_since is not None:
        _unchanged(args, recorded.unchanged_since)
        _say(f"hint: edit {store.kernel_path(info.id)} first; to time it without a commit use "
             f"`ks bench {info.task} --source {store.kernel_path(info.id)}` (a recorded new measurement: "
             f"`ks lab record -s {info.id} --again`)")
        return EXIT_OK
    attempt, result = recorded.attempt, recorded.result
    if attempt is None:
        _unchanged(args, store.attempts(info.id)[-1])
        return EXIT_OK
    _record_question(args, store, info.id, question, bank, recorded.attempts)
    if args.json:
        _dump({"attempt": attempt.to_dict(), "result": result})
    else:
        print(attempt_line(attempt).strip())
        if result.get("message") and attempt.status != "correct":
            print(f"  {result['message']}")
        note = device_change_note(recorded.attempts, attempt)
        if note:
            print(note)
    return EXIT_OK if attempt.status in ("correct", "unchecked") else EXIT_KERNEL_FAILED


def _bank_for(args):
    from ks_tui.paths import find_workspace, main_workspace
    from ks_tui.questions import default_bank_path, load_bank

    return load_bank(default_bank_path(main_workspace(find_workspace(args.workspace))))


def _bank_question(bank, qid: str):
    q = bank.get(qid)
    if q is None:
        raise KsError(f"unknown question id {qid!r} (see `ks questions list`)")
    return q


def _record_question(args, store, session_id: str, question, bank, attempts=None) -> None:
    """The question bank's efficacy record (workflow.settle_questions), from the CLI."""
    from ks_tui import workflow
    from ks_tui.paths import find_workspace, main_workspace
    from ks_tui.questions import EfficacyStore, views_of

    if question is None and bank is None:
        try:
            bank = _bank_for(args)
        except KsError:
            return  # no readable bank: nothing to settle against
    history = views_of(store.attempts(session_id) if attempts is None else attempts, store.results(session_id))
    efficacy = EfficacyStore(main_workspace(find_workspace(args.workspace)), k=bank.config.efficacy_k,
                             config=bank.config)
    try:
        workflow.settle_questions(efficacy, session_id, history, asked=question)
    except OSError as e:  # the attempt is committed; only the statistics are behind
        _say(f"warning: question record not written ({e})")


def _say_which(args, info) -> None:
    """Without --session the latest session is used: say which, on stderr (stdout may be one JSON document)."""
    if not args.session:
        _say(f"session {info.id} ({info.task}, the most recently active; --session picks another)")


def _session_for(store, args):
    if args.session is not None and not args.session.strip():
        raise KsError("--session is empty", hint="name a session (`ks sessions` lists them), or leave the option out")
    return store.session(args.session) if args.session else store.latest_session()


def _find_attempt(store, args):
    """The attempt named on the command line; a hash is looked up in every session when
    no --session is given."""
    from ks_tui.attempts.store import resolve_in

    info = _session_for(store, args)
    try:
        return info, store.resolve(info.id, args.attempt)
    except KsError:
        ref = args.attempt.strip()
        if args.session or ref.isdigit() or len(ref) < 4 or not all(c in "0123456789abcdef" for c in ref.lower()):
            raise
        for s in store.sessions():
            attempts = store.attempts(s.id)
            if any(a.sha.startswith(ref.lower()) for a in attempts):
                return store.session(s.id), resolve_in(attempts, s.id, ref)
        raise


def _config(args):
    """The bank's decision thresholds (the defaults without a readable bank)."""
    from ks_tui.questions import DecisionConfig

    try:
        return _bank_for(args).config
    except KsError:
        return DecisionConfig()


def cmd_log(args) -> int:
    from ks_tui import workflow
    from ks_tui.attempts.render import log_table

    store = _store(args)
    info = _session_for(store, args)
    view = workflow.log_view(store, info.id, _config(args), info=info)
    if args.json:
        _dump(view.to_dict())
    elif not view.attempts:
        print(f"session {info.id} ({info.task}): no attempts yet")
    else:
        print(f"session {info.id} ({info.task}), branch {info.branch}")
        width = shutil.get_terminal_size().columns if sys.stdout.isatty() else None
        print(log_table(view.attempts, width))
        for line in view.plateau_lines() + view.gain_lines():
            print(line)
    return EXIT_OK


def cmd_show(args) -> int:
    from ks_tui.attempts.render import attempt_line, remarks_text, result_text
    from ks_tui.attempts.speed_diff import compare_results, comparison_text

    store = _store(args)
    info, attempt = _find_attempt(store, args)
    if args.kernel:  # the attempt's kernel file as committed, e.g. for a same-call A/B against it
        sys.stdout.buffer.write(store.kernel_at(info.id, attempt.number))
        return EXIT_OK
    against = args.against
    diff = store.diff(info.id, attempt.number, against=against)
    result = store.result(info.id, attempt.number)
    other = store.previous(info.id, attempt.number) if against == "previous" else store.resolve(info.id, against)
    speed = compare_results(result, store.result(info.id, other.number)) if other and result else None
    from ks_tui.harness import profile as prof

    profiled = prof.load(store.sessions_dir, info.id, attempt.number)  # `ks profile N` summaries
    if args.json:
        _dump({"session": info.id, "attempt": attempt.to_dict(), "against": against, "diff": diff, "result": result,
               "speed_against": None if other is None else {"attempt": other.number, **(speed or {})},
               "profile": profiled})
        return EXIT_OK
    print(attempt_line(attempt).strip())
    print(f"commit {attempt.sha}  {attempt.time.astimezone().isoformat(timespec='seconds')}  session {info.id}")
    if attempt.description:  # the whole summary, which the line above cuts
        print(f"summary: {attempt.description}")
    if attempt.remarks:
        print(remarks_text(attempt))
    print()
    print(diff if diff.strip() else f"(kernel identical to {'the previous attempt' if against == 'previous' else against})")
    print()
    print(result_text(result))
    if profiled:
        print()
        print("\n".join(prof.summary_lines(profiled)))
    if other is not None and speed is not None:
        print()
        print(comparison_text(speed, f"attempt {other.number}"))
    return EXIT_OK


def cmd_rollback(args) -> int:
    from ks_tui.attempts.render import attempt_line

    store = _store(args)
    info = _session_for(store, args)
    _say_which(args, info)
    new = store.rollback(info.id, args.attempt, author="human")
    if args.json:
        _dump({"attempt": new.to_dict()})
    else:
        print(attempt_line(new).strip())
    return EXIT_OK
