"""The agent's tool calls: running them, and the host side of the tools that reach the
harness, the attempt store or a shell (ks_tui.agent.tools.ToolHost)."""

from __future__ import annotations

import logging
import queue
import time

from ks_tui import events as ev
from ks_tui.agent import prompts
from ks_tui.agent.files import ToolRefused
from ks_tui.agent.summary import summarize_result
from ks_tui.attempts.model import current_device
from ks_tui.attempts.remarks import remark_text
from ks_tui.attempts.speed_diff import compare_results, comparison_text
from ks_tui.engine.session_base import SessionBase
from ks_tui.errors import KsError

MAX_SHOW_CHARS = 12_000

log = logging.getLogger(__name__)


class ToolHostMixin(SessionBase):
    """Part of Session (ks_tui/engine/session.py)."""

    def _run_tools(self, tool_uses: list[dict]) -> None:
        self._decisions_due = []
        for block in tool_uses:
            if self._stop.is_set():
                self._tool_result(block, "not run: the session was stopped", True)
                continue
            if block["id"] in self._cut_tools:  # cut by max_tokens before a kill: never run a partial call
                self._tool_result(block, prompts.TRUNCATED_TOOL, True)
                continue
            try:
                output, is_error = self.toolbox.execute(block["name"], block.get("input") or {})
            except Exception as e:
                # A bug in a tool must still answer its tool_use: unanswered, the trace would run
                # the same call again at every resume and crash the same way.
                log.exception("tool %s failed", block["name"])
                output, is_error = f"{block['name']} failed inside ks: {type(e).__name__}: {e}", True
                self.emit(ev.ErrorEvent(f"tool {block['name']} failed inside ks: {type(e).__name__}: {e}",
                                        recoverable=True))
            self._tool_result(block, output, is_error)
        if any(b["id"] in self._cut_tools for b in tool_uses):
            self._user(prompts.MAX_TOKENS_NOTE, "system")
        # Decision points raised by attempts are handled once every tool_use has its result.
        due, self._decisions_due = self._decisions_due, None
        if due and not self._stop.is_set():
            self._decision(due[0].point, due[0].reason)

    def _tool_result(self, block: dict, output: str, is_error: bool) -> None:
        self.conv.add_tool_result(block["id"], output, is_error)
        # After the agent's own edit the trace keeps the kernel's hash, so a resume knows the
        # uncommitted kernel in the worktree is the agent's, not a person's.
        edited = block["name"] in ("write_file", "edit_file") and not is_error
        self.emit(ev.ToolResult(block["id"], block["name"], output, is_error,
                                kernel_sha=self._kernel_known if edited else None))

    # ToolHost ------------------------------------------------------------------------------

    def before_edit(self) -> None:
        if self._kernel_sha() != self._kernel_known:
            self._commit_human_edit()

    def after_edit(self) -> None:
        self._kernel_known = self._kernel_sha()

    def tool_run_harness(self, mode: str, quick: bool, candidates: list | None = None) -> str:
        if candidates:
            from ks_tui.engine.candidates import run_candidates

            return run_candidates(self, mode, quick, candidates)
        return self._run_harness(mode, quick, author="agent")

    def tool_profile(self, scenario: str) -> str:
        """Nsight Compute on one scenario of the worktree kernel; kept with the latest attempt when the
        kernel is that attempt's (harness/profile.py)."""
        from ks_tui.harness import profile as prof

        try:
            result = prof.profile(self.task, self.files.kernel, scenario)
        except KsError as e:  # no ncu, no permission, unknown scenario: the agent reads why
            raise ToolRefused(f"profile not run: {e.message}") from None
        if not result.get("profile"):
            return summarize_result(result, None, note="no profile: the kernel failed before its launch was profiled")
        lines = prof.summary_lines(result["profile"])
        attempts = self.store.attempts(self.id)
        if attempts and self._kernel_sha() == self._kernel_known:
            prof.keep(self.store.sessions_dir, self.id, attempts[-1].number, result["profile"])
            lines.append(f"(kept with attempt {attempts[-1].number})")
        return "\n".join(lines)

    def tool_list_attempts(self) -> str:
        attempts = self.store.attempts(self.id)
        if not attempts:
            return "no attempts yet"
        lines = []
        here = current_device(attempts)
        for a in attempts:
            sp = "-" if a.speedup is None else f"{a.speedup:.3f}x"
            # what the speedup covers (a subset's is not the grid's) and, once the session moved, where it was measured
            scope = f" ({a.mode})" if a.mode and a.speedup is not None else ""
            extra = f", rollback of {a.rollback_of}" if a.rollback_of else ""
            extra += f", measured on {a.device}: not comparable with this device's" if here and a.device and \
                a.device != here else ""
            lines.append(f"{a.number}{' (best)' if a.best else ''}: {a.status} {a.correct or ''} {sp}{scope} "
                         f"by {a.author}{extra} - {a.summary}")
            # a remark corrects or adds to the summary after the fact: the agent reads both
            lines += [f"    remark {remark_text(r)}" for r in a.remarks]
        return "\n".join(lines)

    def tool_show_attempt(self, ref) -> str:
        a = self._resolve(ref)
        result = self.store.result(self.id, a.number)
        out = [summarize_result(result, a.to_dict())]
        out += [f"summary: {a.description}"] if a.description else []
        out += [f"remark {remark_text(r)}" for r in a.remarks]
        prev = self.store.previous(self.id, a.number)
        if prev and result:  # its speed against the previous attempt's, and whether the machine moved between
            speed = compare_results(result, self.store.result(self.id, prev.number))
            if speed is not None:
                out.append(comparison_text(speed, f"attempt {prev.number}"))
        diff = self.store.diff(self.id, a.number, against="previous")
        out.append(f"diff against the previous attempt:\n{diff}" if diff.strip() else "no diff against the previous attempt")
        text = "\n".join(out)
        return text if len(text) <= MAX_SHOW_CHARS else text[:MAX_SHOW_CHARS] + "\n[... cut]"

    def tool_rollback(self, ref) -> str:
        target = self._resolve(ref)
        new = self.store.rollback(self.id, target.number, author="agent", trace=False)  # RolledBack is its trace line
        self._after_rollback(target.number, new, conversation_len=None)
        return (f"kernel restored to attempt {target.number} (recorded as attempt {new.number}); "
                "the conversation is unchanged")

    def tool_bash(self, command: str) -> str:
        from ks_tui.agent.bash import run_bash

        if self.human_present:
            req = f"bash-{int(time.time() * 1000)}"
            answer: queue.Queue = queue.Queue()
            self._approvals[req] = answer
            self.emit(ev.BashApprovalRequested(req, command))
            self._set_state("waiting_question", "bash approval")
            try:
                ok = answer.get(timeout=self.cfg.question_timeout_s)
            except queue.Empty:
                ok = False
            finally:
                self._approvals.pop(req, None)
                self._set_state("running")
            if not ok:
                raise ToolRefused("the engineer did not approve this command")
        return run_bash(command, self.info.worktree, self.cfg.bash_timeout_s, cancel=self._stop)

    def _resolve(self, ref):
        try:
            return self.store.resolve(self.id, ref)
        except KsError as e:
            raise ToolRefused(e.message) from None
