"""The system prompt and the few fixed messages the engine sends.

Deliberately short and free of optimization advice: the question bank does that job. The
system prompt holds nothing that changes during a session, so it stays cached.
"""

from __future__ import annotations

from ks_tui.questions.vocab import HUMAN_CATEGORY


def system_prompt(task_name: str, description: str, kernel: str, entry: str, files: list[str],
                  readonly: list[str], enable_bash: bool) -> str:
    tools = ("read_file, write_file, edit_file, run_harness, list_attempts, show_attempt, rollback"
             + (", bash" if enable_bash else ""))
    return f"""You are optimizing one kernel for speed, working with a kernel engineer.

Task: {task_name} - {description}
Kernel file (the only file you may change): {kernel}, exporting extern "C" {entry}.
Task folder files: {", ".join(files)}. Read-only: {", ".join(readonly) or "none"}.
Paths are relative to the task folder.

Tools: {tools}.
- run_harness compiles the kernel, checks it against the reference on every scenario (mode
  "check"), and in mode "bench" also times it against the best library baseline. Every run of a
  changed kernel is recorded as an attempt (a git commit) you can list, show and roll back to.
- The kernel must stay one self-contained source file: no CUTLASS, CuTe, cuBLAS, cuDNN or torch headers.
- Sessions are long and the context window is not: for a large kernel, change it with edit_file
  and read the part you need with read_file's offset and limit; write_file and a whole read put
  the whole file into the conversation. Near the window, older tool outputs are cleared
  ("[ks: cleared ...]"): read again what you need.

How results are judged: correctness on every scenario with fresh random inputs each run (an
output element the kernel does not write fails; results must not be cached between calls), then
the geometric mean over all scenarios of baseline time / kernel time. A faster kernel that is
incorrect on any scenario does not count.

The engineer may send you questions between steps; take them seriously. When you believe you
are done or stuck, say so briefly and end your turn."""


def first_message(task_name: str, kernel: str) -> str:
    return (f"Make the {task_name} kernel in {kernel} as fast as you can while keeping it correct. "
            "Start by reading it and running the harness to see where it stands.")


def question_message(text: str, question_id: str = "", category: str = "human", chosen_by: str = "human") -> str:
    """The user message that carries a question: a typed one is the engineer's; a bank question says so, with
    its id, and who chose it (the engineer from the ranked list, the bank itself, or the bank after nobody
    answered in time)."""
    if category == HUMAN_CATEGORY:
        return f"Question from the engineer: {text}"
    picked = {"human": ", picked by the engineer", "timeout": ", picked by the bank (nobody answered in time)"}
    return f"Question from the bank ({question_id}{picked.get(chosen_by, '')}): {text}"


def rollback_note(to_attempt: int, undone: list[str]) -> str:
    what = "; ".join(undone) if undone else "nothing after it"
    return (f"[ks] The engineer rolled the kernel and this conversation back to attempt {to_attempt}. "
            f"Undone since then: {what}. The kernel file now equals attempt {to_attempt}; do not redo "
            "the undone changes blindly.")


MAX_TOKENS_NOTE = ("[ks] Your last reply was cut off at the max_tokens limit. Continue from where it "
                   "stopped, in smaller steps (for a long file, several edit_file calls).")
TRUNCATED_TOOL = "not run: the tool input was cut off by the max_tokens limit; send it again, shorter"
EMPTY_REPLY_NOTE = ("[ks] Your last reply was empty. Continue with the next step, or say briefly that you "
                    "are done.")


def compacted_note(tokens_before: int, window: int, cleared: int, removed: int = 0) -> str:
    gone = f" and {removed} of the oldest messages were removed" if removed else ""
    return (f"[ks] This conversation neared the model's context window (about {tokens_before:,} of {window:,} "
            f"tokens), so ks compacted its older part: older tool outputs, file contents in tool calls, thinking "
            f"blocks or long texts now read \"[ks: cleared ...]\"{gone}. The kernel file, list_attempts and "
            "show_attempt hold the current state; read again what you need instead of relying on what was cleared.")
