"""Writes sessions/examples/attention_cpu-scripted.trace.jsonl: the trace of a short session
on attention_cpu driven by the scripted fake Messages API (not by Claude). The harness run,
the git commit and the question bank are real.

    python -m tests.agent.make_example_trace
"""

from __future__ import annotations

import json
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from tests.support.workspace import GIT_IDENTITY, make_workspace
from tests.support.fake_messages_api import FakeMessagesAPI, reply, text, tool_use

REPO = Path(__file__).resolve().parents[2]
OLD = "std::vector<float> acc(d);"
NOTE = ("Example trace, made by tests/agent/make_example_trace.py against the scripted fake Messages API "
        "(tests/support/fake_messages_api.py). The assistant's replies are scripted, not written by Claude; "
        "the harness run, the git commit and the questions (from question_bank.yaml) are real.")


def main() -> Path:
    from ks_tui.config import load_config
    from ks_tui.engine import Session
    from ks_tui.trace import Trace

    script = [reply(text("I'll start by reading the kernel."), tool_use("read_file", {"path": "kernel.cpp"})),
              reply(text("The scratch row is allocated once per call; noting that in a comment first."),
                    tool_use("edit_file", {"path": "kernel.cpp", "old_string": OLD,
                                           "new_string": OLD + "  // one output row, reused"})),
              reply(tool_use("run_harness", {"mode": "bench", "quick": True})),
              reply(text("Correct on the quick scenarios; that is where I stop for now.")),
              reply(text("I have not touched threading or SIMD yet; that is the next layer to try."))]
    with tempfile.TemporaryDirectory(prefix="ks-example-") as tmp, FakeMessagesAPI(script) as api:
        os.environ.update(ANTHROPIC_BASE_URL=api.url, ANTHROPIC_API_KEY="sk-example", KS_MODEL="claude-opus-4-6",
                          **GIT_IDENTITY)
        ws = make_workspace(Path(tmp), bank=None)  # the real bank, not the tests'
        cfg = load_config(ws, env={"KS_MODEL": "claude-opus-4-6"}).with_overrides(max_turns=5)
        session = Session.create(ws, "attention_cpu", cfg, autonomous=True, human_present=False)
        session.run_forever()
        records = Trace.read(session.trace_path)
    note = {"time": datetime.now(timezone.utc).isoformat(timespec="milliseconds"), "kind": "note",
            "payload": {"text": NOTE}}
    out = REPO / "sessions" / "examples" / "attention_cpu-scripted.trace.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in [note, *records]))
    return out


if __name__ == "__main__":
    print(main())
