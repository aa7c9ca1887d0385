"""`ks init`, `ks session new|export|import`, `ks sessions`, `ks try`, `ks log`, `ks show`, `ks remark`,
`ks rollback`.

Thin: parse, call ks_tui.attempts.AttemptStore (and the harness client for `ks try`), print.
git and the harness are imported inside the handlers so `ks --help` stays fast.
"""

from __future__ import annotations

import contextlib
import json
import math
import shutil
import sys
from pathlib import Path

from ks_tui.errors import EXIT_KERNEL_FAILED, EXIT_OK, InputFileError, KsError


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
    _session_arg(p)
    p.add_argument("--check", action="store_true", help="correctness only (default: bench)")
    p.add_argument("--quick", action="store_true", help="the task's quick scenarios only")
    p.add_argument("--timeout", type=float, metavar="S", help="harness time limit in seconds")
    p.add_argument("--summary", metavar="TEXT", default="", help="commit summary line")
    p.add_argument("--question", metavar="QID", help="id of the question that led to this attempt")
    p.add_argument("--author", choices=("human", "agent"), default="human",
                   help="who wrote this kernel (default: human)")
    p.add_argument("--kernel", metavar="FILE",
                   help="use FILE as the session's kernel for this attempt (copied into the worktree first; "
                        "with --result, the file that result measured)")
    source = p.add_mutually_exclusive_group()
    source.add_argument("--result", metavar="FILE",
                        help="record a result JSON computed elsewhere instead of running the harness "
                             "(of an unchanged kernel too: a new measurement of the latest attempt)")
    p.add_argument("--again", action="store_true",
                   help="run and record even if the kernel equals the latest attempt's (a new measurement, "
                        "e.g. the full grid after a --quick attempt)")
    source.add_argument("--no-run", action="store_true",
                        help="commit a changed kernel as 'unchecked' without running the harness")
    p.add_argument("--json", action="store_true", help="print the attempt and result as one JSON document")
    _stale_arg(p)
    p.set_defaults(func=cmd_try)

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

    p = sub.add_parser("remark", help="add a remark to an attempt (a correction or what was learned later); "
                                      "its commit and summary stay as they are")
    p.add_argument("attempt", metavar="ATTEMPT", help="number, hash prefix, best or latest")
    p.add_argument("text", metavar="TEXT", nargs="+", help="the remark (one line; words are joined by spaces)")
    _session_arg(p)
    p.add_argument("--author", choices=("human", "agent"), default="human", help="who says it (default: human)")
    declares = p.add_mutually_exclusive_group()
    declares.add_argument("--same-call", metavar="N", default=None,
                          help="declare ATTEMPT's run timed in the same device call as attempt N's (runs without a "
                               "pair tag of their own); TEXT is the evidence. Both get a remark; the question bank "
                               "then judges them as one `ks compare` round")
    declares.add_argument("--question", metavar="QID", default=None,
                          help="declare that ATTEMPT answered question QID (its recorded question was wrong or "
                               "missing); TEXT is why. The log and the question bank read QID from then on, and the "
                               "efficacy record counts the ask ATTEMPT opened for QID")
    p.add_argument("--json", action="store_true", help="print the attempt with its remarks as one JSON document")
    p.set_defaults(func=cmd_remark)

    p = sub.add_parser("rollback", help="new commit whose kernel equals ATTEMPT's (history is kept)")
    p.add_argument("attempt", metavar="ATTEMPT", help="number, hash prefix or best")
    _session_arg(p)
    p.add_argument("--json", action="store_true", help="print the new attempt as one JSON document")
    _stale_arg(p)
    p.set_defaults(func=cmd_rollback)


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
    info, n = export_session(store, args.session, Path(args.file))
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


def _load_result_file(path: str) -> dict:
    p = Path(path)
    try:
        data = json.loads(p.read_text())
    except FileNotFoundError:
        raise KsError(f"result file {p} not found") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise InputFileError(p, f"not a JSON document ({e})", getattr(e, "lineno", None)) from None
    except OSError as e:
        raise InputFileError(p, f"cannot read: {e.strerror or e}") from None
    if not isinstance(data, dict) or "status" not in data:
        raise InputFileError(p, "not a harness result (a JSON object with a status)")
    sel = data.get("selection")
    if sel is not None and not (isinstance(sel, list) and all(isinstance(s, str) for s in sel)):
        raise InputFileError(p, "'selection' must be a list of scenario ids")
    g = data.get("geomean_speedup")
    if g is not None and not (isinstance(g, (int, float)) and not isinstance(g, bool) and math.isfinite(g) and g > 0):
        raise InputFileError(p, f"'geomean_speedup' must be a positive finite number, not {g!r}")
    return data


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
    from ks_tui.attempts.render import attempt_line, device_change_note

    if args.again and args.no_run:
        raise KsError("--again records a new measurement; it needs a harness run, not --no-run")
    store = _store(args)
    info = _session_for(store, args)
    _say_which(args, info)
    bank = _bank_for(args) if args.question else None
    question = _bank_question(bank, args.question) if bank else None  # before any long run
    measured = None  # the kernel's bytes as the harness run read them
    with store.lock(info.id):
        store.check(info.id)  # refuse a detached/dirty/locked worktree before a long harness run
        if args.result:
            result = _load_result_file(args.result)
            if result.get("task") not in (None, info.task):
                raise KsError(f"the result is for task {result.get('task')!r}, session {info.id} works on {info.task!r}")
            if result.get("selection"):  # made before the harness said so itself: every id named is the grid
                from ks_tui.harness.result import grid_selection

                result["selection"] = grid_selection(store.task(info.id), result["selection"])
            if args.kernel:
                store.replace_kernel(info.id, Path(args.kernel), result)
        elif args.kernel:
            store.replace_kernel(info.id, Path(args.kernel))
        if not args.result:
            same = store.unchanged_since(info.id)
            if same is not None and not args.again:
                _unchanged(args, same)
                _say(f"hint: edit {store.kernel_path(info.id)} first; to record a new measurement of it add --again, "
                     f"to time it without a commit use `ks bench {info.task} --source {store.kernel_path(info.id)}`")
                return EXIT_OK
            if args.no_run:
                result = {"status": "unchecked"}
            else:
                from ks_tui.harness.client import run_harness

                task = store.task(info.id)
                _say(f"running the harness ({'check' if args.check else 'bench'}{', quick' if args.quick else ''}) "
                     f"on {task.kernel}")
                with contextlib.suppress(OSError):  # missing or unreadable: the harness run says so
                    measured = task.kernel.read_bytes()  # kept if the file changes during the run
                result = run_harness(task, task.kernel, mode="check" if args.check else "bench", quick=args.quick,
                                     timeout=args.timeout, on_progress=_progress)
                if result.get("status") == "cancelled":
                    raise KsError("the harness run was cancelled; nothing recorded")
        attempt = store.record_measured(info.id, measured, result, author=args.author,
                                        question=args.question, summary=args.summary,
                                        remeasure=bool(args.result) or args.again)
        if attempt is not None:  # traced under the session lock, as the engine and rollback do
            compact = {k: result.get(k) for k in ("status", "correct", "geomean_speedup", "mode", "quick", "message")}
            store.trace(info.id).append("attempt", {"attempt": attempt.to_dict(), "result": compact})
    if attempt is None:
        _unchanged(args, store.attempts(info.id)[-1])
        return EXIT_OK
    _record_question(args, store, info.id, question, bank)
    if args.json:
        _dump({"attempt": attempt.to_dict(), "result": result})
    else:
        print(attempt_line(attempt).strip())
        if result.get("message") and attempt.status != "correct":
            print(f"  {result['message']}")
        note = device_change_note(store.attempts(info.id), attempt)
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


def _record_question(args, store, session_id: str, question, bank) -> None:
    """The question bank's efficacy record: this attempt answered `question`; and every
    earlier ask of the session that now has enough attempts after it gets its outcome."""
    from ks_tui.paths import find_workspace, main_workspace
    from ks_tui.questions import EfficacyStore, views_of

    if question is None and bank is None:
        try:
            bank = _bank_for(args)
        except KsError:
            return  # no readable bank: nothing to settle against
    history = views_of(store.attempts(session_id), store.results(session_id))
    efficacy = EfficacyStore(main_workspace(find_workspace(args.workspace)), k=bank.config.efficacy_k,
                             config=bank.config)
    try:
        # Attempts in a row that answer one question are one ask, not a new ask each.
        again = question is not None and len(history) > 1 and history[-2].question == question.id
        if question is not None and not again:
            efficacy.record_asked(session_id, question, point=None, history=history[:-1], chosen_by="human")
        if question is not None or efficacy.path.exists():
            efficacy.settle(session_id, history)
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


def _plateau(args, store, sid: str, attempts, best: int | None):
    """The session's plateau (questions.plateau): the last attempt that beat the best before it by
    more than the noise (the bank's floor, or the spread repeated runs of one kernel showed), or a
    run of the best kernel timed beside it by more than the paired noise; and, when the best mark
    sits on a run that was no gain, by how much it leads."""
    from ks_tui.questions import DecisionConfig, plateau_of, views_of

    try:
        config = _bank_for(args).config
    except KsError:  # no readable bank: the default thresholds
        config = DecisionConfig()
    return plateau_of(views_of(attempts, store.results(sid)), config, best)


def cmd_log(args) -> int:
    from ks_tui.attempts.model import since_best
    from ks_tui.attempts.render import log_table
    from ks_tui.questions.plateau import gain_needs_lines, plateau_lines

    store = _store(args)
    info = _session_for(store, args)
    attempts = store.attempts(info.id)
    best, after = since_best(attempts)
    stand = _plateau(args, store, info.id, attempts, best) if attempts else None
    if args.json:
        _dump({"session": info.to_dict(), "attempts": [a.to_dict() for a in attempts],
               "best": best, "attempts_since_best": after,
               **(stand.to_dict() if stand else
                  {"noise": None, "last_gain": None, "attempts_since_gain": None,
                   "last_gain_paired": None, "best_lead": None, "gain_needs": None, "gain_needs_elsewhere": []})})
    elif not attempts:
        print(f"session {info.id} ({info.task}): no attempts yet")
    else:
        print(f"session {info.id} ({info.task}), branch {info.branch}")
        width = shutil.get_terminal_size().columns if sys.stdout.isatty() else None
        print(log_table(attempts, width))
        for line in plateau_lines(stand, best):
            print(line)
        for line in gain_needs_lines(stand) if stand is not None else ():
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
    if args.json:
        _dump({"session": info.id, "attempt": attempt.to_dict(), "against": against, "diff": diff, "result": result,
               "speed_against": None if other is None else {"attempt": other.number, **(speed or {})}})
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
    if other is not None and speed is not None:
        print()
        print(comparison_text(speed, f"attempt {other.number}"))
    return EXIT_OK


def cmd_remark(args) -> int:
    from ks_tui.attempts.render import attempt_line, remarks_text

    store = _store(args)
    info, attempt = _find_attempt(store, args)
    note = ""
    if args.question is not None:
        bank = _bank_for(args)
        question = _bank_question(bank, args.question)
        now, before = store.remark_question(info.id, attempt.number, question.id, " ".join(args.text),
                                            author=args.author)
        shown = [now]
        note = _retag_ask(args, info.id, now.number, before, question, bank)
    elif args.same_call is None:
        shown = [store.remark(info.id, attempt.number, " ".join(args.text), author=args.author)]
    else:
        shown = list(store.remark_same_call(info.id, attempt.number, args.same_call, " ".join(args.text),
                                            author=args.author))
    if args.json:
        doc = {"session": info.id, "attempt": shown[0].to_dict()}
        if len(shown) > 1:
            doc["other"] = shown[1].to_dict()
        _dump(doc)
    else:
        for a in shown:
            print(attempt_line(a).strip())
            print(remarks_text(a))
    if note:
        _say(note)
    return EXIT_OK


def _retag_ask(args, session_id: str, number: int, before: str | None, question, bank) -> str:
    """The efficacy record after `ks remark N --question`: the ask attempt N opened counts for `question`."""
    from ks_tui.paths import find_workspace, main_workspace
    from ks_tui.questions import EfficacyStore

    efficacy = EfficacyStore(main_workspace(find_workspace(args.workspace)), k=bank.config.efficacy_k,
                             config=bank.config)
    try:
        written, holder = efficacy.retag(session_id, number, before, question)
    except OSError as e:  # the remark is stored; only the statistics are behind
        return f"warning: question record not retagged ({e})"
    if written:
        return f"question record: the ask attempt {number} opened now counts for {question.id}, not {before}"
    if holder is None:
        return f"question record unchanged: no question was asked before attempt {number}"
    after, counted = int(holder.get("after_attempt") or 0), holder.get("question")
    continued = bool(before) and counted == before and after < number - 1  # an earlier attempt opened it
    why = ("it recorded no question, so it opened no ask" if not before
           else f"it continued the ask after attempt {after}" if continued
           else f"the ask before it, after attempt {after}, is not its own")
    hint = (f"; to count that ask for {question.id}, declare attempt {after + 1}, which opened it"
            if continued and holder.get("chosen_by") == "human" else "")
    return f"question record unchanged: {why} (that ask counts for {counted}){hint}"


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
