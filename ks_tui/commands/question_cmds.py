"""`ks questions list|validate|stats|next`: browse, check and apply the question bank."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

from ks_tui.errors import KsError


def register(sub) -> None:
    from ks_tui.questions.vocab import POINTS

    p = sub.add_parser("questions", help="browse, check and apply the question bank")
    qsub = p.add_subparsers(dest="questions_command", metavar="ACTION", required=True,
                            parser_class=type(p))

    ls = qsub.add_parser("list", help="list the bank's questions")
    ls.add_argument("--category", metavar="C", help="only this category")
    ls.add_argument("--bank", metavar="FILE", help="question bank file (default: the workspace's)")
    ls.add_argument("--json", action="store_true", help="print one JSON document")
    ls.set_defaults(func=cmd_list)

    val = qsub.add_parser("validate", help="check a question bank file; exit 0 or 2")
    val.add_argument("file", nargs="?", metavar="FILE", help="bank file (default: the workspace's)")
    val.set_defaults(func=cmd_validate)

    st = qsub.add_parser("stats", help="which questions paid off, per question and category")
    st.add_argument("--bank", metavar="FILE", help="question bank file (for its noise threshold)")
    st.add_argument("--json", action="store_true", help="print one JSON document")
    st.set_defaults(func=cmd_stats)

    se = qsub.add_parser("settle", help="close a finished session's pending asks with the attempts that followed them")
    se.add_argument("--session", "-s", metavar="ID", help="session id (default: the most recently active)")
    se.add_argument("--bank", metavar="FILE", help="question bank file (for its K; default: the workspace's)")
    se.add_argument("--keep-open", action="store_true",
                    help="the session goes on: write only what is due (outcomes of asks with K attempts after them, "
                         "judgements of same-call gains), and leave the last ask's window open")
    se.add_argument("--json", action="store_true", help="print one JSON document")
    se.set_defaults(func=cmd_settle)

    nx = qsub.add_parser("next", help="decision points that fire for a session now, and ranked questions")
    nx.add_argument("--session", "-s", metavar="ID", help="session id (default: the most recently active)")
    nx.add_argument("--point", choices=POINTS, help="rank for this point even if it does not fire")
    nx.add_argument("-k", type=int, default=3, metavar="N", help="questions per point (default 3)")
    nx.add_argument("--bank", metavar="FILE", help="question bank file (default: the workspace's)")
    nx.add_argument("--json", action="store_true", help="print one JSON document")
    nx.set_defaults(func=cmd_next)


def _workspace(args) -> Path:
    """The workspace; from inside a session worktree, the one that holds the sessions (and
    the shared question records)."""
    from ks_tui.paths import find_workspace, main_workspace

    return main_workspace(find_workspace(getattr(args, "workspace", None)))


def _bank(args, file: str | None):
    from ks_tui.questions import default_bank_path, load_bank

    path = Path(file) if file else default_bank_path(_workspace(args))
    return load_bank(path)


def _print_json(doc) -> None:
    json.dump(doc, sys.stdout, indent=2)
    sys.stdout.write("\n")


def _wrap(text: str, indent: str = "    ") -> str:
    return textwrap.fill(text, width=88, initial_indent=indent, subsequent_indent=indent)


def cmd_list(args) -> int:
    from ks_tui.questions import CATEGORIES

    if args.category and args.category not in CATEGORIES:
        raise KsError(f"unknown category '{args.category}'", hint=f"categories: {', '.join(CATEGORIES)}")
    bank = _bank(args, args.bank)
    questions = [q for q in bank.questions if not args.category or q.category == args.category]
    if args.json:
        _print_json({"bank": str(bank.path), "questions": [q.to_dict() for q in questions]})
        return 0
    for category in CATEGORIES:
        group = [q for q in questions if q.category == category]
        if not group:
            continue
        print(f"{category} ({len(group)})")
        for q in group:
            extra = f"  requires: {', '.join(q.requires)}" if q.requires else ""
            print(f"  {q.id}  [{', '.join(q.points)}]{extra}")
            print(_wrap(q.text))
    return 0


def cmd_validate(args) -> int:
    from ks_tui.questions import BankError, default_bank_path, load_bank

    path = Path(args.file) if args.file else default_bank_path(_workspace(args))
    try:
        bank = load_bank(path)
    except BankError as e:
        for line in e.lines():
            print(f"ks: error: {line}", file=sys.stderr)
        return 2
    print(f"{path}: ok: {len(bank.questions)} questions in {len(bank.categories())} categories")
    return 0


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:+.1%}"


def cmd_stats(args) -> int:
    from ks_tui.questions import EfficacyStore

    bank = _bank(args, args.bank)
    store = EfficacyStore(_workspace(args), k=bank.config.efficacy_k, config=bank.config)
    stats = store.stats(noise=bank.config.noise)
    if args.json:
        _print_json({"file": str(store.path), "k": store.k, "noise": bank.config.noise, **stats.to_dict()})
        return 0
    if not stats.questions:
        print(f"no questions asked yet ({store.path})")
        return 0
    header = f"{'':40} {'asked':>5} {'settled':>7} {'new best':>9} {'median gain':>11}"

    def row(name, t) -> str:
        rate = "-" if t.new_best_rate is None else f"{t.new_best}/{t.settled}"
        return f"{name[:40]:40} {t.asked:5d} {t.settled:7d} {rate:>9} {_pct(t.median_gain):>11}"

    print("per question (outcome: the best correct speedup over the attempts that followed each ask)")
    print(header)
    for qid, t in sorted(stats.questions.items(), key=lambda kv: (kv[1].category, kv[0])):
        print(row(qid, t))
    print("\nper category")
    print(header)
    for cat, t in sorted(stats.categories.items()):
        print(row(cat, t))
    if stats.skipped_lines:
        print(f"\n{stats.skipped_lines} unreadable line(s) in {store.path} were skipped")
    return 0


def cmd_settle(args) -> int:
    """An ask settles once K attempts follow it, or when the next ask ends its window. The last
    ask of a session driven from the command line (`ks try --question`) has no next ask and may
    never reach K; `ks run` settles it when the session stops, and this does the same by hand:
    an ask with at least one measured attempt after it gets its outcome from those."""
    from ks_tui.attempts import AttemptStore
    from ks_tui.questions import EfficacyStore, views_of
    from ks_tui.questions.efficacy import asks_as_retagged

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
    from ks_tui.questions import (DecisionPoint, EfficacyStore, build_context, detect,
                                  select, views_of)

    from ks_tui.attempts import AttemptStore

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


def _task_language(store, session_id: str) -> str | None:
    """The session's task language, or None when its task cannot be read (the result decides then)."""
    try:
        return store.task(session_id).language
    except KsError:
        return None
