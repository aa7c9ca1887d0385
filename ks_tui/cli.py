"""Entry point `ks`: parses arguments and hands each subcommand to its module.

Each module in ks_tui/commands/ exposes `register(subparsers)` and sets `func` on its
parsers; `func(args) -> int` returns the exit code. Modules import heavy libraries (torch,
textual, anthropic, git) inside their handlers so that `ks --help` and the harness commands
start fast.
"""

from __future__ import annotations

import argparse
import importlib
import json
import signal
import sys

from ks_tui import __version__
from ks_tui.errors import EXIT_BAD_INPUT, KsError

# Order is the order of `ks --help`.
COMMAND_MODULES = (
    "ks_tui.commands.tui_cmd",
    "ks_tui.commands.harness_cmds",
    "ks_tui.commands.attempt_cmds",
    "ks_tui.commands.question_cmds",
    "ks_tui.commands.agent_cmds",
    "ks_tui.commands.task_cmds",
    "ks_tui.commands.profile_cmds",
    "ks_tui.commands.mcp_cmds",
    "ks_tui.commands.lab_cmds",
)

# The import names of pyproject.toml's dependencies, with the package names pip knows them by.
DEPENDENCY_MODULES = {"git": "GitPython", "anthropic": "anthropic", "textual": "textual",
                      "yaml": "PyYAML", "numpy": "numpy", "torch": "torch", "plotly": "plotly",
                      "mcp": "mcp", "pynvml": "nvidia-ml-py",
                      "dask": "dask", "distributed": "distributed"}


# Whether the command line being parsed asks for --json: a usage error then also prints the JSON
# error document on stdout, as every other error of a --json command does (a script reads stdout).
_json_errors = False


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on bad usage already; keep its message to one line plus usage."""

    def error(self, message: str):
        if _json_errors:
            print(json.dumps({"error": message, "hint": f"{self.prog} --help",
                              "exit_code": EXIT_BAD_INPUT}))
        super().error(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ks", description="KernelSeek: pair with an agent to make a GPU kernel faster.")
    parser.add_argument("--version", action="version", version=f"ks {__version__}")
    parser.add_argument("--workspace", "-w", metavar="DIR",
                        help="workspace folder (default: nearest folder upward holding kernels/)")
    # For bare `ks` (the screen); `ks tui` and `ks run` take --provider after the command too.
    parser.add_argument("--provider", dest="top_provider", metavar="NAME",
                        help="the model's server: anthropic, anthropic-compatible, bedrock or vertex")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def _exit_on_signal(signum, frame):
    # SystemExit unwinds through `finally` / `except BaseException`, as Ctrl-C does: the
    # harness child's group is killed and its temporary folder removed.
    raise SystemExit(128 + signum)


def _unwind_on_signals(command: str | None) -> None:
    """SIGTERM (kill, timeout) and SIGHUP (a closed SSH session or tmux pane) end a command the
    way Ctrl-C does. The screen keeps Textual's handling, and `ks run` sets its own."""
    if command in (None, "tui", "run"):
        return
    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            signal.signal(sig, _exit_on_signal)
        except ValueError:  # not the main thread (a test calling main())
            pass


SANDBOX_WARNED = ("check", "bench", "compare", "run", "try", "tui")  # the commands that run kernels


def _warn_unsandboxed() -> None:
    """One line on stderr when kernels will run unconfined here (harness/sandbox.py)."""
    from ks_tui.harness.sandbox import warning_line

    line = warning_line()
    if line:
        print(f"ks: {line}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    global _json_errors
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    _json_errors = "--json" in argv[:argv.index("--")] if "--" in argv else "--json" in argv
    try:
        args = parser.parse_args(argv)
    finally:
        _json_errors = False
    if getattr(args, "func", None) is None:
        # Bare `ks` opens the screen on the default task.
        args = parser.parse_args([*argv, "tui"])
    _unwind_on_signals(args.command)
    try:
        if args.command in SANDBOX_WARNED:
            _warn_unsandboxed()
        code = args.func(args)
    except KsError as e:
        print(f"ks: error: {e}", file=sys.stderr)
        if getattr(args, "json", False):  # a script reading stdout still gets one JSON document
            print(json.dumps({"error": e.message, "hint": e.hint, "exit_code": e.exit_code}))
        return e.exit_code
    except ModuleNotFoundError as e:
        # A declared dependency missing (an install with --no-deps, or another Python) is the
        # environment's fault, not a bug: one line that says how to mend it.
        top = (e.name or "").partition(".")[0]
        if top not in DEPENDENCY_MODULES:
            raise
        print(f"ks: error: the Python package {DEPENDENCY_MODULES[top]} (module {top!r}) is not installed in "
              f"{sys.executable}\n  hint: run the README's install command in the checkout: "
              'python3 -m pip install -e ".[test]"',
              file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("ks: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    return int(code or 0)


def run() -> None:  # pragma: no cover - console-script shim
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
