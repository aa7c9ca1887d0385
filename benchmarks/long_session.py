"""How long an agent session can go on a large kernel, with and without compaction.

Drives the real engine (Session, the real anthropic SDK, git) against the scripted Messages
API of the tests (tests/support/fake_messages_api.py), which counts a prompt at four
characters a token and refuses one above its window with the API's 400 "prompt is too long".
The "agent" works on a kernel the size of `kernels/flash_attn_fwd/best/kernel.cu`
(117 kB) in a fixed cycle of four turns, each with ~2 kB of thinking and ~1 kB of text:
read the whole file, rewrite it whole (one line changed), read 200 lines of it, list the
attempts. The harness is not run (the kernel is the CUDA one; this measures the conversation).

Two runs of the same script:
- unbounded: ks told the window is 10^9 tokens and the server without a limit, so nothing
  is compacted; the prompt each request would have sent is recorded (its first 24 turns);
- bounded: a 200k window on both sides (ks compacts past 0.8 of it).

Reported: the turn at which the unbounded prompt first passes 200k (where a session without
compaction stops), the bounded run's largest prompt and its end, each compaction (levels,
estimate before/after), and the engine's bookkeeping time per turn (`_fit_context`: the
estimate and any compaction), which runs on the session's thread before every request; and
the trace's size and the time to resume the session from it (the conversation rebuilt must
equal the one that ran).

    python benchmarks/long_session.py [--turns 80] [--out benchmarks/results/long_session.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ks_tui import events as ev  # noqa: E402
from ks_tui.config import load_config  # noqa: E402
from ks_tui.engine import Session  # noqa: E402
from tests.support.fake_messages_api import FakeMessagesAPI, prompt_tokens, reply, text, thinking, tool_use  # noqa: E402
from tests.support.workspace import GIT_IDENTITY, HOST_VARS, make_workspace  # noqa: E402

WINDOW = 200_000
UNBOUNDED_TURNS = 24
KERNEL = ROOT / "kernels" / "flash_attn_fwd" / "best" / "kernel.cu"


def script(turns: int, kernel: str) -> list:
    steps = []
    for i in range(turns - 1):
        think = thinking(f"turn {i}: " + "weighing the next change to the key loop; " * 50)
        say = text(f"Turn {i}. " + "The producer's wait shows in the consumers' time, so " * 20)
        kind = i % 4
        if kind == 0:
            call = tool_use("read_file", {"path": "kernel.cpp"})
        elif kind == 1:
            call = tool_use("write_file", {"path": "kernel.cpp", "content": kernel + f"// revision {i}\n"})
        elif kind == 2:
            call = tool_use("read_file", {"path": "kernel.cpp", "offset": 1 + 37 * i % 2000, "limit": 200})
        else:
            call = tool_use("list_attempts", {})
        steps.append(reply(think, say, call))
    steps.append(reply(text("Done.")))
    return steps


def compactions(seen: list[ev.Event]) -> list[dict]:
    """Each compaction with the turn it came before (the model turns answered so far, plus one)."""
    out, turns = [], 0
    for e in seen:
        if isinstance(e, ev.Usage):
            turns += 1
        elif isinstance(e, ev.ContextCompacted):
            out.append({"turn_before": turns + 1, "levels": e.levels, "reason": e.reason,
                        "tokens_before": e.tokens_before, "tokens_after": e.tokens_after, "cleared": e.cleared})
    return out


def run(ws: Path, turns: int, kernel: str, bounded: bool) -> dict:
    if not bounded:  # the unbounded prompt grows ~60k tokens a cycle: it passes 200k within 20 turns
        turns = min(turns, UNBOUNDED_TURNS)
    api = FakeMessagesAPI(script(turns, kernel), context_window=WINDOW if bounded else None)
    api.start()
    os.environ["ANTHROPIC_BASE_URL"] = api.url
    try:
        cfg = load_config(ws).with_overrides(max_turns=turns, context_window=WINDOW if bounded else 10**9)
        session = Session.create(ws, "attention_cpu", cfg, autonomous=True, human_present=False)
        seen: list[ev.Event] = []
        session.subscribe(seen.append)
        fit = session._fit_context
        spent: list[float] = []

        def timed() -> int:
            t = time.perf_counter()
            estimate = fit()
            spent.append(time.perf_counter() - t)
            return estimate
        session._fit_context = timed  # the engine's own method, timed where it runs
        end = session.run_forever()
        # Resuming reads the whole trace and replays it, compactions included.
        t = time.perf_counter()
        again = Session.open(ws, session.id, cfg, autonomous=True, human_present=False)
        resume_s = time.perf_counter() - t
        assert again.conv.messages == session.conv.messages and len(again.conv) == len(session.conv)
    finally:
        api.close()
    prompts = [prompt_tokens(b) for b in api.requests]
    over = next((i + 1 for i, p in enumerate(prompts) if p > WINDOW), None)
    return {
        "end": end.reason,
        "requests": len(api.requests),
        "refused": len(api.rejected),
        "max_prompt_tokens": max(prompts),
        "first_request_over_200k": over,
        "prompt_tokens": prompts,
        "compactions": compactions(seen),
        "fit_ms": {"median": round(1e3 * statistics.median(spent), 3), "max": round(1e3 * max(spent), 3),
                   "calls": len(spent)},
        "trace_mb": round(session.trace_path.stat().st_size / 1e6, 1),
        "resume_s": round(resume_s, 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=80)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    for name in HOST_VARS:
        os.environ.pop(name, None)
    os.environ.update(GIT_IDENTITY, ANTHROPIC_API_KEY="sk-bench", KS_API_MAX_RETRIES="0",
                      XDG_CONFIG_HOME=tempfile.mkdtemp(prefix="ks-bench-xdg-"))
    kernel = KERNEL.read_text()
    out = {"command": "python benchmarks/long_session.py " + " ".join(sys.argv[1:]),
           "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
           "machine": f"{platform.node()} {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs",
           "python": platform.python_version(), "turns": args.turns, "window_tokens": WINDOW,
           "kernel_chars": len(kernel), "token_count": "the scripted server's: 4 characters a token"}
    with tempfile.TemporaryDirectory(prefix="ks-long-") as tmp:
        for bounded in (False, True):
            ws = make_workspace(Path(tmp) / ("bounded" if bounded else "unbounded"))
            out["bounded" if bounded else "unbounded"] = run(ws, args.turns, kernel, bounded)
    u, b = out["unbounded"], out["bounded"]
    print(f"unbounded: prompt passes {WINDOW} tokens at request {u['first_request_over_200k']} "
          f"(largest {u['max_prompt_tokens']}); a session without compaction ends there")
    print(f"bounded:   {b['requests']} requests, {b['refused']} refused, largest prompt {b['max_prompt_tokens']}, "
          f"{len(b['compactions'])} compactions; ended: {b['end']}")
    for c in b["compactions"]:
        print(f"  before turn {c['turn_before']}: levels {c['levels']}, ~{c['tokens_before']} -> ~{c['tokens_after']}"
              f" tokens, {c['cleared']} items")
    print(f"_fit_context per turn: median {b['fit_ms']['median']} ms, max {b['fit_ms']['max']} ms")
    print(f"trace {b['trace_mb']} MB; resuming it (read, replay, the same conversation) {b['resume_s']} s")
    if args.out:
        args.out.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
