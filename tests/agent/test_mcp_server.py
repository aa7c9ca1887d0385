"""`ks mcp` driven by the MCP SDK's own client over stdio: a real child process, a real workspace
(git, the attention_cpu task, g++), the whole loop, and malformed calls that leave it running."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from typing import TYPE_CHECKING

import pytest

# The MCP SDK's client is imported by the test that drives it, not at collection (every xdist worker collects
# every module; the SDK takes most of a second to import).
if importlib.util.find_spec("mcp") is None:
    pytest.skip("could not import 'mcp'", allow_module_level=True)
if TYPE_CHECKING:
    from mcp import StdioServerParameters

pytestmark = pytest.mark.timeout(240)

OLD = "std::vector<float> acc(d);"
TOOLS = {"list_tasks", "list_scenarios", "check", "bench", "start_session", "try_attempt", "log", "show_attempt",
         "rollback", "next_question"}


def server(workspace) -> StdioServerParameters:
    from mcp import StdioServerParameters

    return StdioServerParameters(command=sys.executable, args=["-m", "ks_tui", "--workspace", str(workspace), "mcp"],
                                 env=dict(os.environ))  # PYTHONPATH, the git identity, no API key


def doc(result) -> dict:
    """The JSON document a tool answers with (its second text block, also its structured content)."""
    assert not result.is_error, result.content[0].text
    body = json.loads(result.content[1].text)
    assert result.structured_content == body
    return body


@pytest.mark.slow
async def test_the_loop_over_mcp(workspace):
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    async with stdio_client(server(workspace)) as (read, write), ClientSession(read, write) as mcp:
        await mcp.initialize()
        tools = {t.name: t for t in (await mcp.list_tools()).tools}
        assert set(tools) == TOOLS
        assert tools["check"].input_schema["required"] == ["task"]

        tasks = doc(await mcp.call_tool("list_tasks", {}))["tasks"]
        assert "attention_cpu" in [t["name"] for t in tasks]

        checked = await mcp.call_tool("check", {"task": "attention_cpu"})
        result = doc(checked)
        assert (result["status"], result["correct"]) == ("correct", "20/20")
        assert "correct 20/20" in checked.content[0].text  # the text a model reads

        session = doc(await mcp.call_tool("start_session", {"task": "attention_cpu"}))
        sid, kernel = session["id"], session["kernel"]
        assert kernel.startswith(str(workspace / "sessions" / sid))
        source = open(kernel).read()
        with open(kernel, "w") as f:  # the client's agent edits with its own tools
            f.write(source.replace(OLD, OLD + "  // one row at a time"))
        tried = await mcp.call_tool("try_attempt", {"session": sid, "mode": "check", "quick": True,
                                                    "summary": "a comment"})
        first = doc(tried)["attempt"]
        assert (first["number"], first["status"], first["correct"], first["author"]) == (1, "correct", "4/4", "agent")
        assert tried.content[0].text.startswith("attempt 1 (")

        with open(kernel, "w") as f:
            f.write(source.replace(OLD, "this is not C++;"))
        broken = doc(await mcp.call_tool("try_attempt", {"session": sid, "mode": "check", "quick": True}))
        assert broken["attempt"]["status"] == "compile_error"  # a failed kernel is a result, not a tool error

        log = await mcp.call_tool("log", {"session": sid})
        assert [a["status"] for a in doc(log)["attempts"]] == ["correct", "compile_error"]
        assert "compile_error" in log.content[0].text
        shown = doc(await mcp.call_tool("show_attempt", {"session": sid, "attempt": "1"}))
        assert shown["attempt"]["number"] == 1 and "one row at a time" in shown["diff"]

        back = doc(await mcp.call_tool("rollback", {"session": sid, "attempt": "1"}))["attempt"]
        assert back["number"] == 3 and "one row at a time" in open(kernel).read()
        nxt = doc(await mcp.call_tool("next_question", {"session": sid}))
        assert nxt["session"] == sid and nxt["attempts"] == 3

        # Malformed or refused calls: an error result each, and the server goes on.
        for name, args, words in [
            ("check", {"task": "../../etc"}, "no task '../../etc'"),
            ("check", {"task": "attention_cpu", "source": "/etc/passwd"}, "outside the workspace"),
            ("check", {"task": "attention_cpu", "quick": "lots"}, "quick"),
            ("try_attempt", {"mode": "check"}, "session"),
            ("show_attempt", {"session": sid, "attempt": "--help"}, "give a number"),
            ("rollback", {"session": sid, "attempt": "99"}, "99"),
            ("no_such_tool", {}, "Unknown tool"),
        ]:
            bad = await mcp.call_tool(name, args)
            assert bad.is_error and words in bad.content[0].text, (name, bad.content[0].text)
            assert "Traceback" not in bad.content[0].text
        assert "attention_cpu" in [t["name"] for t in doc(await mcp.call_tool("list_tasks", {}))["tasks"]]
    # Nothing lost: the attempts are commits on the session's branch.
    assert [a["number"] for a in json.loads(_ks(workspace, "log", "-s", sid, "--json"))["attempts"]] == [1, 2, 3]


def _ks(workspace, *args: str) -> str:
    import subprocess

    out = subprocess.run([sys.executable, "-m", "ks_tui", "--workspace", str(workspace), *args],
                         capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_ks_mcp_outside_a_workspace_is_one_line(tmp_path, base_env):
    import subprocess

    out = subprocess.run([sys.executable, "-m", "ks_tui", "mcp"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=60, stdin=subprocess.DEVNULL)
    assert out.returncode == 2 and out.stderr.startswith("ks: error: no KernelSeek workspace")
    assert "Traceback" not in out.stderr and out.stdout == ""


def test_a_line_that_is_not_json_rpc_is_skipped_and_the_server_answers_the_next(workspace):
    import subprocess

    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    child = subprocess.run([sys.executable, "-m", "ks_tui", "--workspace", str(workspace), "mcp"], text=True,
                           input="this is not json {\n" + json.dumps(init) + "\n", capture_output=True, timeout=120)
    [answer] = [json.loads(line) for line in child.stdout.splitlines()]  # stdout holds protocol messages only
    assert answer["id"] == 1 and answer["result"]["serverInfo"]["name"] == "kernelseek"
    assert child.returncode == 0 and "Traceback" not in child.stderr  # the client closed stdin: a clean end
