"""`ks questions list|validate|stats`: browse and check the question bank (settle and next: lab_cmds)."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

from ks_tui.errors import KsError


def register(sub) -> None:

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

    # Moved to `ks lab settle` / `ks lab next`; the old spellings stay, unlisted, with a notice.
    from ks_tui.commands import lab_cmds

    lab_cmds.add_settle_parser(qsub, hidden=True)
    lab_cmds.add_next_parser(qsub, hidden=True)

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


def _task_language(store, session_id: str) -> str | None:
    """The session's task language, or None when its task cannot be read (the result decides then)."""
    try:
        return store.task(session_id).language
    except KsError:
        return None
