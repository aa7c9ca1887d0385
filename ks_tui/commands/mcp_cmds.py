"""`ks mcp`: serve the workspace's tasks and KernelSeek's loop to another agent over MCP (stdio)."""

from __future__ import annotations

from ks_tui.errors import KsError


def register(sub) -> None:
    p = sub.add_parser("mcp", help="serve tasks, the harness, attempts and questions as MCP tools (stdio)",
                       description="An MCP server over stdin/stdout for agents such as Claude Code or Codex: "
                                   "tasks, scenarios, check, bench, sessions, try, log, show, rollback and the "
                                   "question bank's next question (docs/mcp.md).")
    p.set_defaults(func=cmd_mcp)


def cmd_mcp(args) -> int:
    import importlib.util

    from ks_tui.paths import find_workspace, main_workspace

    workspace = main_workspace(find_workspace(args.workspace, sessions=True))
    if importlib.util.find_spec("mcp") is None:
        raise KsError("`ks mcp` needs the Python package mcp, which is not installed",
                      hint='python3 -m pip install "mcp>=2.3,<3"')
    from ks_tui.mcp_server import serve

    serve(workspace)
    return 0
