"""`ks report SESSION`: what a session did, from its trace and its attempts."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace
from typing import Any

from ks_tui.attempts.remarks import remark_text


def build_report(info: dict, records: list[dict], attempts: list[dict]) -> dict[str, Any]:
    tokens: Counter[str] = Counter()
    models: Counter[str] = Counter()
    cost, priced, turns = 0.0, True, 0
    points: Counter[str] = Counter()
    questions, errors = [], 0
    stop_reasons: Counter[str] = Counter()
    ended = None
    compactions, removed, largest = 0, 0, 0  # the context window (agent/context.py)
    for rec in records:
        kind, p = rec.get("kind"), rec.get("payload", {})
        if kind == "usage":
            for k in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"):
                n = p.get(k, 0)
                tokens[k] += n if isinstance(n, int) else 0  # an edited line: skip its value
            cost = p.get("session_cost_usd", cost)
            priced = priced and p.get("priced", True)
            turns = max(turns, p.get("turn", 0))
            if isinstance(p.get("context_tokens"), int):
                largest = max(largest, p["context_tokens"])
        elif kind == "context_compacted":
            compactions += 1
            removed += p.get("removed", 0) if isinstance(p.get("removed"), int) else 0
        elif kind == "assistant_message":
            models[p.get("model", "")] += 1
            stop_reasons[p.get("stop_reason", "")] += 1
        elif kind == "question":
            questions.append({"id": p.get("question_id"), "chosen_by": p.get("chosen_by"), "text": p.get("text")})
        elif kind == "decision_point":
            points[p.get("point")] += 1
        elif kind == "error":
            errors += 1
        elif kind == "session_end":
            ended = p.get("reason")
    # The store's mark (attempts/store.py mark_best), as `ks log` shows it: a faster --scenarios subset or a run on
    # another device is not the session's best.
    best = next((a for a in attempts if a.get("best")), None)
    return {"session": info, "model_turns": turns, "models": dict(models), "stop_reasons": dict(stop_reasons),
            "tokens": dict(tokens), "cost_usd": round(cost, 6), "priced": priced,
            "attempts": attempts, "best_attempt": best["number"] if best else None,
            "best_speedup": best["speedup"] if best else None,
            "best_scope": (best.get("mode") or "", best.get("device") or "") if best else None,
            "best_elsewhere": _fastest_elsewhere(attempts, (best or {}).get("device") or ""), "questions": questions,
            "decision_points": dict(points), "errors": errors, "last_end": ended, "events": len(records),
            "context": {"largest_prompt_tokens": largest, "compactions": compactions, "messages_removed": removed}}


def report_text(r: dict) -> str:
    s = r["session"]
    t = r["tokens"]
    lines = [f"session {s.get('id')}  task {s.get('task')}  branch {s.get('branch')}",
             f"model turns: {r['model_turns']}  models: {', '.join(m for m in r['models'] if m) or '-'}",
             f"tokens: {t.get('input_tokens', 0)} in, {t.get('output_tokens', 0)} out, "
             f"{t.get('cache_read_tokens', 0)} cache read, {t.get('cache_write_tokens', 0)} cache write",
             "cost: " + (f"${r['cost_usd']:.4f}" if r["priced"] else "unpriced (no price for the model in the config)"
                         if not r["cost_usd"] else f"${r['cost_usd']:.4f} and some turns unpriced"),
             *_context_lines(r.get("context") or {}),
             "best: " + (f"{r['best_speedup']:.3f}x (attempt {r['best_attempt']}{_scope(r.get('best_scope'))})"
                         if r["best_attempt"] else "-"),
             *[f"  fastest on {e['device']}: {e['speedup']:.3f}x (attempt {e['attempt']}; {e['mode']})"
               for e in r.get("best_elsewhere") or []],
             f"attempts ({len(r['attempts'])}):"]
    for a in r["attempts"]:
        sp = "-" if a.get("speedup") is None else f"{a['speedup']:.3f}x"
        q = f"  after {a['question']}" if a.get("question") else ""
        lines.append(f"  {a['number']:>3} {a.get('author', ''):5} {a.get('status', ''):13} {a.get('correct') or '':>7} "
                     f"{sp:>8} {a.get('mode') or '-':<12} {a.get('summary', '')}{q}")
        lines += [f"        remark {remark_text(r)}" for r in a.get("remarks") or []]
    lines.append(f"questions asked ({len(r['questions'])}):")
    lines += [f"  [{q['id']}] ({q['chosen_by']}) {q['text']}" for q in r["questions"]]
    if r["errors"]:
        lines.append(f"errors logged: {r['errors']}")
    if r["last_end"]:
        lines.append(f"last run ended: {r['last_end']}")
    return "\n".join(lines)


def _fastest_elsewhere(attempts: list[dict], here: str) -> list[dict]:
    """The fastest run on each device other than `here`: a session that moved machines keeps those
    figures, not comparable with here's."""
    from ks_tui.attempts.model import fastest_on

    runs = [SimpleNamespace(**{"rollback_of": None, "mode": "", "device": "", "speedup": None, **a}) for a in attempts]
    out = []
    for device in sorted({a.device for a in runs if a.device and a.device != here}):
        top = fastest_on(runs, device)  # type: ignore[arg-type]  # attempt dicts as objects with Attempt's fields
        if top:
            out.append({"device": device, "attempt": top.number, "speedup": top.speedup, "mode": top.mode or "-"})
    return out


def _scope(scope) -> str:
    """"; bench on NVIDIA H200" for the best line: what its speedup was measured over, and where."""
    mode, device = scope or ("", "")
    where = " on ".join(x for x in (mode, device) if x)
    return f"; {where}" if where else ""


def _context_lines(c: dict) -> list[str]:
    """The largest prompt and the compactions (agent/context.py); nothing without a model turn."""
    if not c.get("largest_prompt_tokens") and not c.get("compactions"):
        return []
    line = f"largest prompt: {c.get('largest_prompt_tokens', 0)} tokens"
    if c.get("compactions"):
        line += f"; older turns compacted {c['compactions']} times"
        if c.get("messages_removed"):
            line += f", {c['messages_removed']} messages removed"
    return [line]
