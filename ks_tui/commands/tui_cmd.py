"""`ks` and `ks tui [TASK] [--session [ID]]`: open the pair-programming screen.

Everything that can be wrong with the input (no workspace, not a git repository, an unknown
task or session, a broken config) is checked here, before the screen takes the terminal,
so it ends as one line and exit code 2. Textual is imported only when the screen opens.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ks_tui.errors import KsError

PICK = "?"  # `--session` without an id: show the sessions picker


def register(sub) -> None:
    p = sub.add_parser("tui", help="open the pair-programming screen (the default command)",
                       description="Open the screen on TASK (default: flash_attn_fwd with a GPU, "
                                   "else attention_cpu) in a new session, or resume one.")
    p.add_argument("task", nargs="?", metavar="TASK", help="task name under kernels/ or a task folder")
    p.add_argument("--session", nargs="?", const=PICK, metavar="ID",
                   help="resume session ID; without ID, pick one from a list")
    p.add_argument("--human", action="store_true",
                   help="human mode even when an API key is set (edit, run, history, rollback)")
    from ks_tui.commands.agent_cmds import add_provider_arg

    add_provider_arg(p)
    p.set_defaults(func=run_tui)


def gpu_present() -> bool:
    """An NVIDIA driver is loaded; decided without importing torch so start-up stays fast."""
    return Path("/proc/driver/nvidia/version").exists() or Path("/dev/nvidia0").exists()


def default_task(workspace: Path) -> str:
    if gpu_present() and (workspace / "kernels" / "flash_attn_fwd" / "task.yaml").is_file():
        return "flash_attn_fwd"
    return "attention_cpu"


def run_tui(args: argparse.Namespace) -> int:
    from ks_tui.attempts import AttemptStore
    from ks_tui.commands.agent_cmds import provider_flag
    from ks_tui.config import load_config
    from ks_tui.paths import find_workspace, main_workspace
    from ks_tui.run_plan import task_plan
    from ks_tui.task import load_task

    workspace = main_workspace(find_workspace(getattr(args, "workspace", None), sessions=True))
    store = AttemptStore(workspace)  # KsError when the workspace is not a git repository
    cfg = load_config(workspace).with_provider(provider_flag(args))
    if cfg.provider != "anthropic" and not getattr(args, "human", False):
        from ks_tui.agent import providers

        if providers.has_credentials(cfg.provider):  # without a key the screen opens in human mode
            providers.check(cfg.provider)  # an endpoint, the SDK's extra: said before the screen opens
    session = getattr(args, "session", None)
    task = getattr(args, "task", None)
    plan = None
    if session and session != PICK:
        task_name = store.session(session).task  # KsError for an unknown session
    else:
        loaded = load_task(task or default_task(workspace), workspace)
        task_name = loaded.name
        plan = task_plan(loaded)  # which run r starts, for the screen's first footer
    from ks_tui.app.keymap import check_keymap  # the table only: Textual loads with the screen

    if cfg.keymap and (wrong := check_keymap(cfg.keymap)):
        raise KsError(f"config [keymap]: {wrong}", hint="the ids are listed in docs/tui.md, \"Moving keys\"")
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        # Without a terminal Textual would write escape codes into a file or pipe until killed.
        raise KsError("the screen needs a terminal on stdin and stdout",
                      hint="without one, run the agent with `ks run TASK --headless`")

    import os

    from ks_tui.app.app import KernelSeekApp
    from ks_tui.app.connect import SessionOpener

    # Textual reads the size from COLUMNS/LINES before asking the terminal; stale values
    # inherited from a parent process would pin the screen at the wrong size for good.
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)

    opener = SessionOpener(workspace, cfg, task_name, use_agent=False if getattr(args, "human", False) else None,
                           plan=plan, _store=store)
    app = KernelSeekApp(opener=opener, session_id=None if session in (None, PICK) else session,
                        pick_session=session == PICK, keymap=cfg.keymap)
    try:
        app.run()
    finally:
        _discard_empty(opener.created)
    return app.return_code or 0


def _discard_empty(sessions) -> None:
    """A launch closed before anything happened (Esc in the picker, `q` at once, a start that failed) leaves no
    empty session behind. A session whose agent is still winding down is left alone (`ks sessions prune` later)."""
    from ks_tui.attempts.prune import discard_if_empty

    for session in sessions:
        try:
            if session.join(timeout=5) is False:
                continue
            if discard_if_empty(session.store, session.id):
                print(f"ks: removed the new session {session.id}: nothing was done in it", file=sys.stderr)
        except Exception:  # cleaning up must never turn a normal exit into a traceback
            pass
