"""`ks mcp`: KernelSeek's loop as the tools of an MCP server over stdio, for agents that already
have their own loop (Claude Code, Codex): the workspace's tasks and scenarios, check and bench,
sessions, attempts (try, log, show, rollback) and the question bank's next question.

A thin adapter: every tool runs the `ks` command a person would type (`ks_tui.cli.main`, in this
process, with --json), so the workflow is the CLI's own (locks, commits, traces, the question
record). Each answer is text a model reads plus the JSON document, also as structured content.

Confinement as for the built-in agent's tools: tasks are names of the workspace's task folders,
files given to check, bench or try must lie inside the workspace, and no tool writes a task's
files (try copies a given kernel into the session's worktree, as `ks try --kernel` does).
Commands run one at a time: they share this process's stdout, which is captured per call (the
SDK's stdio transport writes to its own copy of the real stdout).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import threading
from pathlib import Path
from typing import Any, Literal

from ks_tui.errors import EXIT_BAD_INPUT, KsError

SERVER_NAME = "kernelseek"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")  # task, session and question ids; never an option
_REF = re.compile(r"^(?:[0-9]+|[0-9a-fA-F]{4,40}|best|latest)$")  # an attempt: number, hash prefix, best, latest

INSTRUCTIONS = """KernelSeek makes a GPU (or CPU) kernel faster with a strict harness: every scenario is checked \
against a reference and timed against the best library baseline. The loop: list_tasks, then start_session(task) \
gives a session and the path of its kernel file; edit that file with your own tools; try_attempt(session) runs the \
harness and commits the attempt; log, show_attempt and rollback browse and restore attempts; next_question(session) \
asks the question bank what to consider next (use it when progress stalls). check/bench time a file without \
recording anything."""


class ToolFailed(Exception):
    """A refused or failed call: the client gets an error result with this one line."""


class KsCommands:
    """Runs `ks` commands in this process against one workspace and returns their output."""

    def __init__(self, workspace: Path):
        self.workspace = Path(workspace).resolve()
        self._lock = threading.Lock()

    def run(self, *argv: str) -> tuple[int, str, str]:
        """(exit code, stdout, stderr) of `ks --workspace WS ARGV...`."""
        from ks_tui.cli import main

        out, err = io.StringIO(), io.StringIO()
        with self._lock, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(["--workspace", str(self.workspace), *argv])
            except SystemExit as e:  # argparse's refusal of an argument
                code = e.code if isinstance(e.code, int) else EXIT_BAD_INPUT
        return code, out.getvalue(), err.getvalue()

    def json(self, *argv: str, failed_ok: bool = False) -> tuple[int, Any]:
        """The command with --json: (exit code, its document). Bad input raises ToolFailed with
        the command's own line; a failed kernel (exit 1) is a result when `failed_ok`."""
        code, out, err = self.run(*argv, "--json")
        if code == 0 or (code == 1 and failed_ok):
            try:
                return code, json.loads(out)
            except ValueError:
                raise ToolFailed(f"ks {argv[0]} printed no JSON document: {_first_error(err) or out[:200]}") from None
        raise ToolFailed(_first_error(err) or f"ks {' '.join(argv)} ended with exit code {code}")

    def text(self, *argv: str) -> str:
        code, out, err = self.run(*argv)
        if code != 0:
            raise ToolFailed(_first_error(err) or f"ks {' '.join(argv)} ended with exit code {code}")
        return out.rstrip()

    # ---------------------------------------------------------------- confinement

    def task(self, name: str) -> str:
        if not isinstance(name, str) or not _NAME.match(name) or \
                not (self.workspace / "kernels" / name / "task.yaml").is_file():
            raise ToolFailed(f"no task {name!r} in this workspace (list_tasks names them)")
        return name

    def file(self, path: str, what: str) -> str:
        """A file inside the workspace (relative paths are taken from it)."""
        p = Path(path).expanduser()
        p = (p if p.is_absolute() else self.workspace / p).resolve()
        if p != self.workspace and self.workspace not in p.parents:
            raise ToolFailed(f"refused: {what} {path!r} is outside the workspace {self.workspace}")
        if not p.is_file():
            raise ToolFailed(f"{what} {path!r} is not a file")
        return str(p)


def _first_error(err: str) -> str:
    """The command's error line ("ks: error: ..." without the prefix), else its last line."""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    for ln in lines:
        if ln.startswith("ks: error: ") or ln.startswith("ks ") and ": error: " in ln:
            return ln.split("error: ", 1)[1]
    return lines[-1] if lines else ""


def _name(value: str, what: str) -> str:
    if not isinstance(value, str) or not _NAME.match(value):
        raise ToolFailed(f"{what} {value!r} is not a valid id")
    return value


def _ref(value: str | int) -> str:
    ref = str(value).strip()
    if not _REF.match(ref):
        raise ToolFailed(f"attempt {value!r}: give a number, a commit hash prefix, best or latest")
    return ref


def _answer(text: str, doc: Any, *, error: bool = False):
    from mcp.types import CallToolResult, TextContent

    body = json.dumps(doc, indent=1, default=str)
    return CallToolResult(content=[TextContent(type="text", text=text), TextContent(type="text", text=body)],
                          structured_content=doc if isinstance(doc, dict) else {"items": doc}, is_error=error)


def _attempt_header(attempt: dict | None) -> str:
    if not attempt:
        return "nothing recorded"
    speed = attempt.get("speedup")
    speed = f", {speed:.3f}x the best baseline" if isinstance(speed, (int, float)) else ""
    return (f"attempt {attempt.get('number')} ({str(attempt.get('sha', ''))[:8]}, {attempt.get('author')}): "
            f"{attempt.get('status')} {attempt.get('correct') or ''}{speed}").replace("  ", " ")


def build_server(workspace: Path):
    """The MCP server with KernelSeek's tools, bound to one workspace."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    from ks_tui import __version__

    ks = KsCommands(workspace)
    server = MCPServer(SERVER_NAME, version=__version__, instructions=INSTRUCTIONS)

    def tool(fn):
        """Register fn; a ToolFailed or KsError becomes an error result with its one line."""
        import functools

        @functools.wraps(fn)
        def wrapped(*a, **kw):
            try:
                return fn(*a, **kw)
            except (ToolFailed, KsError) as e:
                raise ToolError(str(e).splitlines()[0]) from None

        server.tool()(wrapped)
        return wrapped

    def harness(mode: str, task: str, source: str | None, quick: bool, scenarios: list[str] | None):
        from ks_tui.harness.report import render

        argv = [mode, ks.task(task), *(["--source", ks.file(source, "source")] if source else []),
                *(["--quick"] if quick else [])]
        if scenarios:
            argv.append("--scenarios=" + ",".join(_name(s, "scenario") for s in scenarios))
        _, result = ks.json(*argv, failed_ok=True)
        return _answer(render(result), result)

    @tool
    def list_tasks():
        """The workspace's tasks: name, language, kernel file, entry point, number of scenarios."""
        from ks_tui.task import load_task

        rows: list[dict[str, Any]] = []
        lines: list[str] = []
        for yaml_path in sorted((ks.workspace / "kernels").glob("*/task.yaml")):
            try:
                t = load_task(yaml_path.parent.name, ks.workspace)
            except KsError as e:  # a broken task folder is listed, not fatal
                rows.append({"name": yaml_path.parent.name, "error": e.message})
                lines.append(f"{yaml_path.parent.name}: unreadable ({e.message})")
                continue
            rows.append({"name": t.name, "language": t.language, "kernel": t.kernel.name, "entry": t.entry,
                         "scenarios": len(t.scenarios), "quick": len(t.quick),
                         "description": (getattr(t, "description", "") or "").strip()})
            lines.append(f"{t.name}: {t.language} kernel {t.kernel.name} (entry {t.entry}), "
                         f"{len(t.scenarios)} scenarios ({len(t.quick)} quick)")
        return _answer("\n".join(lines) or "no tasks in this workspace", {"tasks": rows})

    @tool
    def list_scenarios(task: str):
        """A task's scenarios: id, whether it is in the quick subset, FLOPs and parameters."""
        name = ks.task(task)
        return _answer(ks.text("scenarios", name), ks.json("scenarios", name)[1])

    @tool
    def check(task: str, source: str | None = None, quick: bool = False, scenarios: list[str] | None = None):
        """Compile a kernel and check it on every scenario of the task (or the quick subset, or the
        scenarios named). source: a kernel file inside the workspace (default: the task's own).
        Nothing is recorded; the result is the harness's JSON."""
        return harness("check", task, source, quick, scenarios)

    @tool
    def bench(task: str, source: str | None = None, quick: bool = False, scenarios: list[str] | None = None):
        """check, then time the kernel against the task's baselines (speedup per scenario and geomean).
        Nothing is recorded."""
        return harness("bench", task, source, quick, scenarios)

    @tool
    def start_session(task: str):
        """Start a session on a task: its own git branch and worktree. Returns the session id and the
        kernel file to edit; record each version with try_attempt."""
        from ks_tui.attempts import AttemptStore

        _, info = ks.json("session", "new", ks.task(task))
        kernel = AttemptStore(ks.workspace).kernel_path(info["id"])
        info["kernel"] = str(kernel)
        return _answer(f"session {info['id']} on {info['task']}\nedit the kernel at {kernel}, then call "
                       f"try_attempt(session=\"{info['id']}\")", info)

    @tool
    def try_attempt(session: str, mode: Literal["check", "bench"] = "bench", quick: bool = False,
                    summary: str = "", kernel: str | None = None, question: str | None = None,
                    again: bool = False):
        """Run the harness on the session's kernel and commit it as the next attempt (a kernel
        unchanged since the last attempt records nothing unless again=true). kernel: a file inside the
        workspace to copy in as the session's kernel first. question: the bank question id that led
        to this attempt. summary: the commit's summary line."""
        argv = ["try", "--session", _name(session, "session"), "--author", "agent"]
        argv += ["--check"] if mode == "check" else []
        argv += ["--quick"] if quick else []
        argv += ["--again"] if again else []
        argv += [f"--summary={summary}"] if summary else []
        argv += ["--kernel", ks.file(kernel, "kernel")] if kernel else []
        argv += ["--question", _name(question, "question")] if question else []
        _, doc = ks.json(*argv, failed_ok=True)
        if doc.get("attempt") is None:
            same = doc.get("unchanged_since") or {}
            return _answer(f"kernel unchanged since attempt {same.get('number')}: nothing recorded (edit the kernel, "
                           "or pass again=true for a new measurement)", doc)
        from ks_tui.harness.report import render

        result = doc.get("result") or {}
        body = render(result) if result.get("status") not in (None, "unchecked") else "not run (unchecked)"
        return _answer(_attempt_header(doc["attempt"]) + "\n\n" + body, doc)

    @tool
    def log(session: str | None = None):
        """A session's attempts (default: the most recently active session); * marks the best."""
        argv = ["log", *(["--session", _name(session, "session")] if session else [])]
        return _answer(ks.text(*argv), ks.json(*argv)[1])

    @tool
    def show_attempt(attempt: str, session: str | None = None):
        """One attempt: its summary, kernel diff against the previous attempt and per-scenario results."""
        argv = ["show", _ref(attempt), *(["--session", _name(session, "session")] if session else [])]
        return _answer(ks.text(*argv), ks.json(*argv)[1])

    @tool
    def rollback(attempt: str, session: str):
        """Restore the kernel of an earlier attempt, as a new attempt (history is kept)."""
        _, doc = ks.json("rollback", _ref(attempt), "--session", _name(session, "session"))
        return _answer("rolled back: " + _attempt_header(doc.get("attempt")), doc)

    @tool
    def next_question(session: str | None = None, k: int = 3):
        """The decision points that fire for the session now, each with the question bank's top k
        questions for the session's state (attempts, failures, plateau)."""
        if not 1 <= k <= 20:
            raise ToolFailed(f"k must be between 1 and 20, not {k}")
        argv = ["questions", "next", "-k", str(k), *(["--session", _name(session, "session")] if session else [])]
        return _answer(ks.text(*argv), ks.json(*argv)[1])

    return server


def serve(workspace: Path) -> None:
    """Serve over stdio until the client closes the connection."""
    build_server(workspace).run("stdio")
