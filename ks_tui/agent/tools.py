"""The agent's tools: their schemas (names are part of the trace format) and a dispatcher.

File tools run here against TaskFiles; the tools that touch the harness, the attempt store
or a shell are delegated to a host (the engine's Session), which owns those parts.
"""

from __future__ import annotations

import copy
from typing import Any, Protocol

from ks_tui.agent.files import TaskFiles, ToolRefused
from ks_tui.errors import KsError
from ks_tui.harness.secret_env import redact_text

_PATH = {"type": "string", "description": "path relative to the task folder, e.g. kernel.cpp"}
_ATTEMPT = {"type": ["integer", "string"],
            "description": "attempt number, commit hash prefix, \"best\" or \"latest\""}

MAX_CANDIDATES = 16

TOOL_SCHEMAS: list[dict[str, Any]] = [
    {"name": "read_file",
     "description": ("Read a text file (or list a folder) in the task folder. For a large file, offset (the "
                     "first line, from 1) and limit (a number of lines) read a part, under a header naming "
                     "the lines."),
     "input_schema": {"type": "object", "properties": {"path": _PATH, "offset": {"type": "integer", "minimum": 1},
                                                       "limit": {"type": "integer", "minimum": 1}},
                      "required": ["path"]}},
    {"name": "write_file", "description": "Replace the whole content of the kernel file.",
     "input_schema": {"type": "object", "properties": {"path": _PATH, "content": {"type": "string"}},
                      "required": ["path", "content"]}},
    {"name": "edit_file",
     "description": "Replace one exact, unique occurrence of old_string by new_string in the kernel file.",
     "input_schema": {"type": "object", "properties": {"path": _PATH, "old_string": {"type": "string"},
                                                       "new_string": {"type": "string"}},
                      "required": ["path", "old_string", "new_string"]}},
    {"name": "run_harness",
     "description": ("Compile the kernel, check it on every scenario (mode check) or also time it against "
                     "the baselines (mode bench). A changed kernel is recorded as a new attempt. "
                     "quick=true runs only the task's quick scenarios. A bench gives each scenario's speed of "
                     "light (the share of the device's limit it reaches, and whether compute, memory or the "
                     "task's own limit bounds it) and a summary per family. Mode profile runs Nsight Compute "
                     "on one scenario's launch (give scenario): SM, tensor and memory throughput, occupancy, "
                     "stall reasons, L2 hit rate. candidates: kernel files (e.g. candidates/a.cpp, written "
                     "with write_file) measured side by side, one per worker when a cluster is configured; "
                     "each becomes its own attempt and the kernel file ends holding the best one."),
     "input_schema": {"type": "object", "properties": {"mode": {"type": "string", "enum": ["check", "bench", "profile"]},
                                                       "quick": {"type": "boolean"},
                                                       "scenario": {"type": "string",
                                                                    "description": "mode profile: the scenario id"},
                                                       "candidates": {"type": "array", "items": _PATH,
                                                                      "maxItems": MAX_CANDIDATES}},
                      "required": ["mode"]}},
    {"name": "list_attempts", "description": "List this session's attempts: status, correctness, speedup.",
     "input_schema": {"type": "object", "properties": {}}},
    {"name": "show_attempt", "description": ("Show one attempt: its result summary, its speed against the previous attempt "
                                              "(with the baselines' drift between the two runs) and its kernel diff."),
     "input_schema": {"type": "object", "properties": {"attempt": _ATTEMPT}, "required": ["attempt"]}},
    {"name": "rollback", "description": "Restore the kernel of an earlier attempt (recorded as a new attempt).",
     "input_schema": {"type": "object", "properties": {"attempt": _ATTEMPT}, "required": ["attempt"]}},
]

BASH_SCHEMA = {"name": "bash",
               "description": "Run a shell command in the session worktree (the user approves each command).",
               "input_schema": {"type": "object", "properties": {"command": {"type": "string"}},
                                "required": ["command"]}}

TOOL_NAMES = [t["name"] for t in TOOL_SCHEMAS] + ["bash"]


def tool_schemas(enable_bash: bool) -> list[dict]:
    """The tools list sent to the API; the last one carries the cache breakpoint, so the
    (stable) tools and system prompt are cached together."""
    tools = copy.deepcopy(TOOL_SCHEMAS) + ([copy.deepcopy(BASH_SCHEMA)] if enable_bash else [])
    tools[-1]["cache_control"] = {"type": "ephemeral"}
    return tools


class ToolHost(Protocol):
    """What the tools need from the engine."""

    def tool_run_harness(self, mode: str, quick: bool, candidates: list | None = None) -> str: ...
    def tool_profile(self, scenario: str) -> str: ...
    def tool_list_attempts(self) -> str: ...
    def tool_show_attempt(self, ref: str | int) -> str: ...
    def tool_rollback(self, ref: str | int) -> str: ...
    def tool_bash(self, command: str) -> str: ...
    def before_edit(self) -> None: ...
    def after_edit(self) -> None: ...


def _flag(value, name: str) -> bool:
    """A boolean argument as the schema asks; the string "false" must not read as true."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ToolRefused(f"{name} must be true or false, not {value!r}")


def _count(value, name: str) -> int | None:
    """A line number or count as the schema asks; "40" from a model that quoted it is 40."""
    if value is None:
        return None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolRefused(f"{name} must be a whole number, not {value!r}")
    return value


class ToolBox:
    def __init__(self, files: TaskFiles, host: ToolHost, enable_bash: bool = False):
        self.files = files
        self.host = host
        self.enable_bash = enable_bash

    def execute(self, name: str, args: dict[str, Any]) -> tuple[str, bool]:
        """(output, is_error). Refusals and failures are errors the model can read and fix. No credential of the
        user's environment reaches the model, whichever tool printed it (a file read, a command, a kernel)."""
        out, is_error = self._execute(name, args)
        return redact_text(out), is_error

    def _execute(self, name: str, args: dict[str, Any]) -> tuple[str, bool]:
        try:
            return self._dispatch(name, args if isinstance(args, dict) else {}), False
        except ToolRefused as e:
            return f"refused: {e}", True
        except KsError as e:  # e.g. an unknown attempt reference
            return f"{name} failed: {e.message}", True
        except KeyError as e:
            return f"missing argument {e}", True
        except (OSError, ValueError) as e:  # e.g. a NUL byte in a bash command
            return f"{name} failed: {e}", True

    def _candidates(self, given) -> list:
        """run_harness's candidate files: existing files in the task folder, at most MAX_CANDIDATES."""
        if not isinstance(given, list) or not all(isinstance(p, str) for p in given):
            raise ToolRefused("candidates must be a list of file paths relative to the task folder")
        if len(given) > MAX_CANDIDATES:
            raise ToolRefused(f"at most {MAX_CANDIDATES} candidates at once, not {len(given)}")
        paths = [self.files.resolve(p) for p in dict.fromkeys(given)]
        missing = [p for p, full in zip(dict.fromkeys(given), paths) if not full.is_file()]
        if missing:
            raise ToolRefused(f"no such file in the task folder: {', '.join(missing)}")
        return paths

    def _dispatch(self, name: str, a: dict[str, Any]) -> str:
        if name == "read_file":
            return self.files.read(a["path"], _count(a.get("offset"), "offset"), _count(a.get("limit"), "limit"))
        if name == "write_file":
            self.files.check_writable(a["path"])
            self.host.before_edit()
            out = self.files.write(a["path"], a["content"])
            self.host.after_edit()
            return out
        if name == "edit_file":
            self.files.check_writable(a["path"])
            self.host.before_edit()
            out = self.files.edit(a["path"], a["old_string"], a["new_string"])
            self.host.after_edit()
            return out
        if name == "run_harness":
            mode = a.get("mode", "check")
            if mode == "profile":
                scenario = a.get("scenario")
                if not isinstance(scenario, str) or not scenario.strip():
                    raise ToolRefused("mode profile needs scenario: the id of the scenario whose launch is profiled")
                return self.host.tool_profile(scenario.strip())
            if mode not in ("check", "bench"):
                raise ToolRefused(f"mode must be check, bench or profile, not {mode!r}")
            quick = _flag(a.get("quick", False), "quick")
            if a.get("candidates"):
                return self.host.tool_run_harness(mode, quick, candidates=self._candidates(a["candidates"]))
            return self.host.tool_run_harness(mode, quick)
        if name == "list_attempts":
            return self.host.tool_list_attempts()
        if name == "show_attempt":
            return self.host.tool_show_attempt(a["attempt"])
        if name == "rollback":
            return self.host.tool_rollback(a["attempt"])
        if name == "bash":
            if not self.enable_bash:
                raise ToolRefused("bash is disabled in this session")
            cmd = a["command"]
            if not isinstance(cmd, str) or not cmd.strip():
                raise ToolRefused("command must be a non-empty string")
            return self.host.tool_bash(cmd)
        raise ToolRefused(f"unknown tool {name!r}; tools: {', '.join(TOOL_NAMES)}")
