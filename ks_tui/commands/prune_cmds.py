"""`ks sessions prune`: remove the sessions without attempts that nobody will come back to (attempts/prune.py)."""

from __future__ import annotations

import json
import sys

from ks_tui.errors import EXIT_OK, KsError


def _idle(seconds: float) -> str:
    if seconds >= 2 * 86400:
        return f"{seconds / 86400:.0f} days"
    if seconds >= 2 * 3600:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 60:.0f} min"


def cmd_prune(store, args) -> int:
    from ks_tui.attempts.prune import candidates, remove_session

    found = candidates(store)
    if args.json and args.dry_run:
        print(json.dumps({"would_remove": [c.__dict__ for c in found]}, indent=2))
        return EXIT_OK
    for c in found:
        print(f"{'would remove' if args.dry_run else 'remove'} {c.id}  {c.task}  {c.why}, idle {_idle(c.idle_s)}",
              file=sys.stderr if args.json else sys.stdout)
    if not found:
        print("nothing to prune: every session has attempts, changes, or recent activity",
              file=sys.stderr if args.json else sys.stdout)
    if args.dry_run or not found:
        return EXIT_OK
    if not args.yes:
        if not sys.stdin.isatty():
            raise KsError(f"prune would remove {len(found)} session(s): confirm with --yes",
                          hint="--dry-run lists them without removing anything")
        answer = input(f"remove these {len(found)} session(s) (worktree, branch and trace)? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("nothing removed")
            return EXIT_OK
    removed, kept = [], []
    for c in found:
        try:
            remove_session(store, c.id)
            removed.append(c.id)
        except KsError as e:
            kept.append(f"{c.id} ({e.message})")
    line = f"removed {len(removed)} session(s)" + (f"; kept {len(kept)}: {', '.join(kept)}" if kept else "")
    if args.json:
        print(json.dumps({"removed": removed, "kept": kept}, indent=2))
        print(line, file=sys.stderr)
    else:
        print(line)
    return EXIT_OK
