"""`ks lab ...`: the measurement protocol behind the product's numbers, apart from the day-one commands.

A newcomer checks, benches, tries and reads the log; the lab adds what careful measurement on a
shared GPU needs (docs/lab.md):

  ks lab check|bench TASK --pair TAG --cached-baselines   runs named as one same-call A/B; reused baselines
  ks lab compare TASK A=F B=F --by d,causal --times        per-group rows and time saved
  ks lab record -s ID --result FILE [--kernel FILE]        an attempt from a result measured elsewhere;
                  --again                                   a new measurement of an unchanged kernel
  ks lab remark N TEXT [--same-call M | --question QID]    remarks, and declarations made by remark
  ks lab settle | ks lab next                              the question bank's bookkeeping by hand

The old spellings (`ks bench --pair`, `ks remark`, `ks questions settle`, ...) still work, unlisted,
and say once on stderr where the option lives now.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from ks_tui.errors import EXIT_OK, InputFileError, KsError

LAB_HELP = "the lab's measurement protocol: paired runs, recorded results, remarks, settling (docs/lab.md)"


def register(sub) -> None:
    from ks_tui.commands import attempt_cmds, harness_cmds

    p = sub.add_parser("lab", help=LAB_HELP, description=__doc__.split("\n\n")[0].strip('"'),
                       epilog="see docs/lab.md")
    lab = p.add_subparsers(dest="lab_command", metavar="ACTION", required=True, parser_class=type(p))
    for mode, text in harness_cmds.RUN_MODES:
        q = lab.add_parser(mode, help=f"`ks {mode}` with --pair and --cached-baselines", description=text)
        harness_cmds.add_run_args(q)
        add_pair_args(q, hidden=False)
        q.set_defaults(func=lambda a, m=mode: harness_cmds.run_cmd(a, m), via_lab=True)
    q = lab.add_parser("compare", help="`ks compare` with --by, --times and --cached-baselines")
    harness_cmds.add_compare_args(q)
    add_compare_lab_args(q, hidden=False)
    q.set_defaults(func=harness_cmds.compare_cmd, via_lab=True)
    q = lab.add_parser("record", help="`ks try` with --result (measured elsewhere), --kernel FILE and --again")
    attempt_cmds.add_try_args(q, lab=True)
    q.set_defaults(via_lab=True)
    add_remark_parser(lab, hidden=False)
    add_settle_parser(lab, hidden=False)
    add_next_parser(lab, hidden=False)


def notice(args, options: list[tuple[str, str]], old: str, new: str) -> None:
    """One line on stderr when a lab option came through its old, unlisted spelling."""
    if getattr(args, "via_lab", False):
        return
    used = [flag for attr, flag in options if getattr(args, attr, None) not in (None, False)
            and (attr not in ("command", "questions_command") or getattr(args, attr) == flag)]
    if used:
        shown = " ".join(u for u in used if u.startswith("-"))
        print(f"ks: note: `{old}{' ' + shown if shown else ''}` is now `{new}{' ' + shown if shown else ''}` "
              "(docs/lab.md)", file=sys.stderr)


def _help(text: str, hidden: bool):
    return argparse.SUPPRESS if hidden else text


def add_pair_args(p, hidden: bool) -> None:
    p.add_argument("--pair", metavar="TAG", help=_help(
        "name this run as one of a same-call A/B (the result's 'pair'): attempts recorded from runs with one "
        "TAG are compared with each other at the bank's paired_noise", hidden))
    p.add_argument("--cached-baselines", action="store_true", help=_help(
        "GPU: reuse baseline timings of earlier runs (faster; the ratio then mixes two clock states)", hidden))


def add_compare_lab_args(p, hidden: bool) -> None:
    p.add_argument("--cached-baselines", action="store_true", help=_help(
        "GPU: time the baselines once and reuse them (faster; the speedup rows then mix clock states, the "
        "kernel-time row does not use baselines)", hidden))
    p.add_argument("--times", action="store_true", help=_help(
        "also print each scenario's kernel time of the first file over each file's, and the median time saved "
        "in microseconds (a fixed cost a change removes shows there)", hidden))
    p.add_argument("--by", metavar="PARAM[,PARAM]", help=_help(
        "also give the summary rows per group of scenarios with equal values of these task parameters "
        "(e.g. d,causal): groups a change leaves alone show the noise", hidden))


def add_record_args(p, source, hidden: bool) -> None:
    """--kernel and --again on `p`, --result in the `source` group (exclusive with --no-run)."""
    p.add_argument("--kernel", metavar="FILE", help=_help(
        "use FILE as the session's kernel for this attempt (copied into the worktree first; with --result, "
        "the file that result measured)", hidden))
    source.add_argument("--result", metavar="FILE", help=_help(
        "record a result JSON computed elsewhere instead of running the harness (of an unchanged kernel too: "
        "a new measurement of the latest attempt)", hidden))
    p.add_argument("--again", action="store_true", help=_help(
        "run and record even if the kernel equals the latest attempt's (a new measurement, e.g. the full grid "
        "after a --quick attempt)", hidden))


def add_remark_parser(sub, hidden: bool) -> None:
    from ks_tui.commands.attempt_cmds import _session_arg

    text = "add a remark to an attempt (a correction or what was learned later); its commit stays as it is"
    p = sub.add_parser("remark", description=text, **({} if hidden else {"help": text}))
    p.add_argument("attempt", metavar="ATTEMPT", help="number, hash prefix, best or latest")
    p.add_argument("text", metavar="TEXT", nargs="+", help="the remark (one line; words are joined by spaces)")
    _session_arg(p)
    p.add_argument("--author", choices=("human", "agent"), default="human", help="who says it (default: human)")
    declares = p.add_mutually_exclusive_group()
    declares.add_argument("--same-call", metavar="N", default=None,
                          help="declare ATTEMPT's run timed in the same device call as attempt N's (runs without a "
                               "pair tag of their own); TEXT is the evidence. Both get a remark; the question bank "
                               "then judges them as one `ks lab compare` round")
    declares.add_argument("--question", metavar="QID", default=None,
                          help="declare that ATTEMPT answered question QID (its recorded question was wrong or "
                               "missing); TEXT is why. The log and the question bank read QID from then on, and the "
                               "efficacy record counts the ask ATTEMPT opened for QID")
    p.add_argument("--json", action="store_true", help="print the attempt with its remarks as one JSON document")
    p.set_defaults(func=cmd_remark, via_lab=not hidden)


def add_settle_parser(sub, hidden: bool) -> None:
    text = "close a finished session's pending asks with the attempts that followed them"
    se = sub.add_parser("settle", description=text, **({} if hidden else {"help": text}))
    se.add_argument("--session", "-s", metavar="ID", help="session id (default: the most recently active)")
    se.add_argument("--bank", metavar="FILE", help="question bank file (for its K; default: the workspace's)")
    se.add_argument("--keep-open", action="store_true",
                    help="the session goes on: write only what is due (outcomes of asks with K attempts after them, "
                         "judgements of same-call gains), and leave the last ask's window open")
    se.add_argument("--json", action="store_true", help="print one JSON document")
    se.set_defaults(func=cmd_settle, via_lab=not hidden)


def add_next_parser(sub, hidden: bool) -> None:
    from ks_tui.questions.vocab import POINTS

    text = "decision points that fire for a session now, and ranked questions"
    nx = sub.add_parser("next", description=text, **({} if hidden else {"help": text}))
    nx.add_argument("--session", "-s", metavar="ID", help="session id (default: the most recently active)")
    nx.add_argument("--point", choices=POINTS, help="rank for this point even if it does not fire")
    nx.add_argument("-k", type=int, default=3, metavar="N", help="questions per point (default 3)")
    nx.add_argument("--bank", metavar="FILE", help="question bank file (default: the workspace's)")
    nx.add_argument("--json", action="store_true", help="print one JSON document")
    nx.set_defaults(func=cmd_next, via_lab=not hidden)


# ---------------------------------------------------------------------------- recorded results

def load_result_file(path: str) -> dict:
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


def record_result_file(args, store, info):
    """`ks try --result FILE [--kernel FILE]`: record a result measured elsewhere (a new measurement
    of an unchanged kernel too), with the kernel file it measured copied in first."""
    from ks_tui import workflow

    result = load_result_file(args.result)
    if result.get("task") not in (None, info.task):
        raise KsError(f"the result is for task {result.get('task')!r}, session {info.id} works on {info.task!r}")
    with store.lock(info.id):
        store.check(info.id)
        if result.get("selection"):  # made before the harness said so itself: every id named is the grid
            from ks_tui.harness.result import grid_selection

            result["selection"] = grid_selection(store.task(info.id), result["selection"])
        if args.kernel:
            store.replace_kernel(info.id, Path(args.kernel), result)
        return workflow.record_run(store, info.id, result, None, author=args.author, question=args.question,
                                   summary=args.summary, remeasure=True)


# ---------------------------------------------------------------------------- remarks

def cmd_remark(args) -> int:
    from ks_tui.attempts.render import attempt_line, remarks_text
    from ks_tui.commands.attempt_cmds import (
        _bank_for,
        _bank_question,
        _dump,
        _find_attempt,
        _say,
        _store,
    )

    notice(args, [("command", "remark")], "ks remark", "ks lab remark")
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


# ---------------------------------------------------------------------------- question bookkeeping

def cmd_settle(args) -> int:
    """An ask settles once K attempts follow it, or when the next ask ends its window. The last
    ask of a session driven from the command line (`ks try --question`) has no next ask and may
    never reach K; `ks run` settles it when the session stops, and this does the same by hand:
    an ask with at least one measured attempt after it gets its outcome from those."""
    from ks_tui.attempts import AttemptStore
    from ks_tui.commands.question_cmds import _bank, _print_json, _workspace
    from ks_tui.questions import EfficacyStore, views_of
    from ks_tui.questions.efficacy import asks_as_retagged

    notice(args, [("questions_command", "settle")], "ks questions settle", "ks lab settle")
    workspace = _workspace(args)
    bank = _bank(args, args.bank)
    store = AttemptStore(workspace)
    info = store.session(args.session) if args.session else store.latest_session()
    history = views_of(store.attempts(info.id), store.results(info.id))
    efficacy = EfficacyStore(workspace, k=bank.config.efficacy_k, config=bank.config)
    try:
        written = efficacy.settle(info.id, history, final=not args.keep_open) if efficacy.path.exists() else 0
    except OSError as e:
        raise KsError(f"cannot write the question record {efficacy.path}: {e.strerror}") from None
    records = efficacy.records() if efficacy.path.exists() else []
    settled = {r.get("ask") for r in records if r.get("kind") == "outcome"}
    pending = [r for r in asks_as_retagged(records).values() if r.get("session") == info.id
               and r.get("ask") not in settled]
    if args.json:
        _print_json({"session": info.id, "settled_now": written,
                     "pending": [{"question": r.get("question"), "after_attempt": r.get("after_attempt")}
                                 for r in pending]})
        return 0
    why = (f" (fewer than {bank.config.efficacy_k} measured attempts after them, or none)" if args.keep_open
           else " (no measured attempt after them yet)")
    print(f"session {info.id}: {written} ask(s) settled now; {len(pending)} still pending" + (why if pending else ""))
    for r in pending:
        print(f"  {r.get('question')} (asked after attempt {r.get('after_attempt')})")
    return 0


def cmd_next(args) -> int:
    from ks_tui.attempts import AttemptStore
    from ks_tui.commands.question_cmds import (
        _bank,
        _print_json,
        _task_language,
        _workspace,
        _wrap,
    )
    from ks_tui.questions import (
        DecisionPoint,
        EfficacyStore,
        build_context,
        detect,
        select,
        views_of,
    )

    notice(args, [("questions_command", "next")], "ks questions next", "ks lab next")
    if args.k < 1:
        raise KsError("-k must be at least 1")
    workspace = _workspace(args)
    bank = _bank(args, args.bank)
    store = AttemptStore(workspace)
    # as `ks log` and `ks try`: without --session, the most recently active session
    info = store.session(args.session) if args.session else store.latest_session()
    attempts = store.attempts(info.id)
    # Stored results supply device, TFLOP/s and kernel hash (the noise estimate, the peak check).
    results = store.results(info.id)
    history = views_of(attempts, results)
    result = results.get(attempts[-1].number) if attempts else None

    efficacy = EfficacyStore(workspace, k=bank.config.efficacy_k, config=bank.config)
    asked = efficacy.asked_ids(info.id) or [a.question for a in history if a.question]
    stats = efficacy.stats(noise=bank.config.noise)
    context = build_context(history, result, _task_language(store, info.id))
    if args.point:
        points = [DecisionPoint(args.point, "requested with --point")]
    else:
        points = detect(history, "attempt" if history else "session_start", bank.config)
    ranked = [(p, select(bank, p.point, asked, stats, context, k=args.k)) for p in points]

    if args.json:
        _print_json({"session": info.id, "attempts": len(history), "asked": asked,
                     "context": context,
                     "points": [{**p.to_dict(), "questions": [q.to_dict() for q in qs]} for p, qs in ranked]})
        return 0
    latest = f"after attempt {history[-1].number}" if history else "before the first attempt"
    if not ranked:
        print(f"session {info.id}: no decision point fires {latest}")
        return 0
    for p, qs in ranked:
        print(f"{p.point}: {p.reason}")
        for i, q in enumerate(qs, 1):
            print(f"  {i}. [{q.category}] {q.id}")
            print(_wrap(q.text, "     "))
    return 0
