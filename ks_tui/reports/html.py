"""`ks report SESSION --html FILE`: one self-contained page (plotly's JS and the styles inline, nothing
fetched), built from reports/data.py's dicts.

Plotly draws the plots: hover, zoom and a heat map come with it, and its whole bundle inlines, so the page
opens on a machine with no network. Every text that came from an attempt, a question or a result is escaped
here, for the tables (HTML) and for plotly's labels alike (plotly reads a few tags in labels; escaped, they
show as typed).
"""

from __future__ import annotations

import html
import math
import textwrap
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ks_tui.reports.data import FA3, FASTEST, mask_label

STATUS_COLORS = {"correct": "#2563eb", "incorrect": "#ea580c", "compile_error": "#dc2626",
                 "crashed": "#9333ea", "timeout": "#a16207", "unchecked": "#9ca3af"}
BEST_COLOR = "#059669"
QUESTION_COLOR = "#c026d3"
# Slower than the baseline red, level white, faster green (over log speedup, so 1.0x sits in the middle).
SPEEDUP_SCALE = [[0.0, "#b91c1c"], [0.5, "#f8fafc"], [1.0, "#15803d"]]
SOL_SCALE = [[0.0, "#f8fafc"], [1.0, "#1d4ed8"]]
PLOT_CONFIG = {"displaylogo": False, "responsive": True, "showSendToCloud": False,
               "modeBarButtonsToRemove": ["select2d", "lasso2d", "autoScale2d"]}
SHOWN_QUESTIONS = 12  # the most asked; the rest fold under a <details>
FONT = "-apple-system, BlinkMacSystemFont, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"


def write_report(store, sid: str | None, dest: Path | str, as_json: bool = False) -> int:
    """`ks report [SESSION] --html FILE`: gather, render, write; one line (or one JSON document) on stdout."""
    import json

    from ks_tui.errors import KsError
    from ks_tui.reports.data import gather

    dest = Path(dest)
    if dest.is_dir():
        raise KsError(f"{dest} is a folder", hint="name the page's file, e.g. report.html")
    if not dest.parent.is_dir():
        raise KsError(f"cannot write {dest}: no folder {dest.parent}")
    data = gather(store, sid)
    try:
        write_html(data, dest)
    except OSError as e:
        raise KsError(f"cannot write {dest}: {e.strerror or e}") from None
    size = dest.stat().st_size
    s = data["session"]
    if as_json:
        print(json.dumps({"file": str(dest), "bytes": size, "session": s.get("id"), "attempts": len(data["points"]),
                          "best_attempt": data["summary"].get("best_attempt")}))
    else:
        print(f"wrote {dest} ({size / 1e6:.1f} MB): session {s.get('id')}, {len(data['points'])} attempts")
    return 0


def write_html(data: dict[str, Any], dest: Path | str) -> Path:
    """Write the page to dest (through a temporary file, so a failed write leaves no half page)."""
    dest = Path(dest)
    part = dest.with_name(dest.name + ".part")
    try:
        part.write_text(render(data), encoding="utf-8")
        part.replace(dest)
    except OSError:
        part.unlink(missing_ok=True)
        raise
    return dest


def render(data: dict[str, Any]) -> str:
    from plotly.offline import get_plotlyjs

    s = data["session"]
    sections = [_header(data),
                _section("Speedup over attempts", _timeline_note(data), _figure(timeline(data), "timeline"))]
    grid = data["grid"]
    if grid["cells"]:
        best = data["best"] or {}
        where = f"attempt {best.get('number')} ({_e(best.get('mode') or '-')}, {_e(best.get('device') or '-')})"
        sections.append(_section("Per scenario: the best attempt's speedup",
                                 f"{where}; each cell its speedup over the fastest baseline that ran on that scenario.",
                                 _figure(heatmap(grid, "speedup"), "heat-speedup")))
        if grid["has_sol"]:
            sections.append(_section("Per scenario: fraction of the speed of light",
                                     "the kernel's time against the compute or memory bound of the device "
                                     "(1.0 = at the limit).", _figure(heatmap(grid, "sol_fraction"), "heat-sol")))
        sections.append(_section("Families against each baseline", _family_note(data["families"]),
                                 families_table(data["families"])))
    sections.append(_section("Questions", _question_note(data), efficacy_table(data["efficacy"])))
    sections.append(_section("Session", "", session_table(data)))
    sections.append(_section("Reproduce", "", commands_block(data["commands"])))
    title = f"KernelSeek session {s.get('id', '')} ({s.get('task', '')})"
    made = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return PAGE.format(title=_e(title), css=CSS, plotly=get_plotlyjs(), body="\n".join(sections),
                       footer=f"made by <code>ks report --html</code> on {made}; no part of this page is fetched")


# ------------------------------------------------------------------ figures

def timeline(data: dict[str, Any]):
    import plotly.graph_objects as go

    points = data["points"]
    fig = go.Figure()
    timed = [p["speedup"] for p in points if p["speedup"] is not None]
    lo, hi = (min(timed), max(timed)) if timed else (0.0, 1.0)
    lo, hi = min(lo, 1.0), max(hi, 1.0)
    pad = (hi - lo) * 0.08 or 0.1
    floor, top = lo - pad, hi + pad
    fig.add_hline(y=1.0, line=dict(color="#94a3b8", width=1, dash="dot"))
    best = [(p["number"], p["best_so_far"]) for p in points if p["best_so_far"] is not None]
    if best:
        fig.add_trace(go.Scatter(x=[b[0] for b in best], y=[b[1] for b in best], mode="lines", name="best so far",
                                 line=dict(color=BEST_COLOR, width=2.5, shape="hv"), hoverinfo="skip"))
    for status in _ordered_statuses(points):
        mine = [p for p in points if p["status"] == status]
        color = STATUS_COLORS.get(status, "#64748b")
        fig.add_trace(go.Scatter(
            x=[p["number"] for p in mine], y=[p["speedup"] if p["speedup"] is not None else floor for p in mine],
            mode="markers", name=_pe(status.replace("_", " ")),
            marker=dict(color=color, size=[16 if p["best"] else 8 for p in mine],
                        symbol=[_symbol(p) for p in mine],
                        line=dict(color=["#111827" if p["best"] else color for p in mine], width=1.5)),
            hovertext=[_point_hover(p) for p in mine], hoverinfo="text"))
    asks = data["asks"]
    if asks:
        fig.add_trace(go.Scatter(
            x=[a["after"] + 0.5 for a in asks], y=[top] * len(asks), mode="markers", name="question asked",
            marker=dict(color=QUESTION_COLOR, symbol="triangle-down", size=9),
            hovertext=[_ask_hover(a) for a in asks], hoverinfo="text"))
    fig.update_layout(**_layout(height=430), hovermode="closest",
                      legend=dict(orientation="h", y=-0.18, x=0, font=dict(size=12)))
    last = max((p["number"] for p in points), default=1)
    fig.update_xaxes(title_text="attempt", range=[0.4, last + 0.6], gridcolor="#eef2f7", zeroline=False,
                     **({"dtick": 1} if len(points) <= 20 else {}))
    fig.update_yaxes(title_text="speedup (x fastest baseline)", range=[floor - pad * 0.6, top + pad * 0.6],
                     gridcolor="#eef2f7", zeroline=False)
    return fig


def heatmap(grid: dict[str, Any], field: str):
    """Families (rows) x lengths (columns), one panel per mask value."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    masks = grid["masks"] or [None]
    families = [f["label"] for f in grid["families"]]
    columns = grid["columns"]
    xs = [_length(c) for c in columns] or ["-"]
    by = {(c["family"], c["column"], c["mask"]): c for c in grid["cells"]}
    fig = make_subplots(rows=1, cols=len(masks), shared_yaxes=True, horizontal_spacing=0.03,
                        subplot_titles=[_pe(mask_label(grid["mask"], m)) for m in masks])
    sol = field == "sol_fraction"
    values = [c[field] for c in grid["cells"] if c[field] is not None]
    if sol:
        bar: dict[str, Any] = dict(title=dict(text="SoL"))
        zmin, zmax, scale = 0.0, 1.0, SOL_SCALE
    else:  # colours by log(speedup): 0.8x as red as 1.25x is green
        r = _speedup_reach(values)
        zmin, zmax, scale = -r, r, SPEEDUP_SCALE
        ticks = _ratio_ticks(r)
        bar = dict(title=dict(text="speedup"), tickvals=[math.log(t) for t in ticks],
                   ticktext=[f"{t:.3g}x" for t in ticks])
    for i, m in enumerate(masks):
        z, text, hover = [], [], []
        for fam in families:
            zr, tr, hr = [], [], []
            for col in (columns or [None]):
                c = by.get((fam, col, m))
                v = c[field] if c else None
                zr.append(v if sol or v is None or v <= 0 else math.log(v))
                tr.append("" if c is None else ("✗" if not c["ok"] else "" if v is None else
                                                (f"{v:.2f}" if sol else f"{v:.2f}")))
                hr.append(_cell_hover(c, grid) if c else "")
            z.append(zr)
            text.append(tr)
            hover.append(hr)
        fig.add_trace(go.Heatmap(z=z, x=xs, y=[_pe(f) for f in families], text=text, texttemplate="%{text}",
                                 hovertext=hover,
                                 hoverinfo="text", colorscale=scale, zmin=zmin, zmax=zmax,
                                 xgap=2, ygap=2, showscale=i == len(masks) - 1,
                                 colorbar=dict(thickness=12, **bar)),
                      row=1, col=i + 1)
        fig.update_xaxes(title_text=_pe(grid["column"] or ""), type="category", row=1, col=i + 1)
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_layout(**_layout(height=max(260, 34 * len(families) + 130)))
    return fig


def _speedup_reach(values: list[float]) -> float:
    """|log speedup| the colours span: wide enough for 95% of the cells, so one outlier family does not wash
    out the rest (it saturates instead); at least 1.05x."""
    reach = sorted(abs(math.log(v)) for v in values if v > 0)
    return max(reach[min(len(reach) - 1, int(0.95 * len(reach)))] if reach else 0.0, math.log(1.05))


def _ratio_ticks(r: float) -> list[float]:
    """Colour-bar ticks symmetric around 1.0x within exp(+-r): the largest round ratio and one about halfway."""
    steps = [t for t in (1.05, 1.1, 1.25, 1.5, 2.0, 4.0, 10.0, 20.0, 50.0) if math.log(t) <= r * 1.0001]
    big = steps[-1]
    mid = min(steps[:-1], key=lambda t: abs(math.log(t) - math.log(big) / 2), default=None)
    up = [t for t in (mid, big) if t]
    return [1 / t for t in reversed(up)] + [1.0] + up


def _figure(fig, div_id: str) -> str:
    import plotly.io as pio

    return pio.to_html(fig, include_plotlyjs=False, full_html=False, config=PLOT_CONFIG, div_id=div_id,
                       default_width="100%")


def _layout(height: int) -> dict[str, Any]:
    return dict(template="plotly_white", height=height, margin=dict(l=60, r=20, t=36, b=40),
                font=dict(family=FONT, size=13, color="#1f2937"), paper_bgcolor="white", plot_bgcolor="white",
                hoverlabel=dict(font=dict(family=FONT, size=12), align="left"))


def _ordered_statuses(points: list[dict]) -> list[str]:
    seen = {p["status"] for p in points}
    return [s for s in STATUS_COLORS if s in seen] + sorted(seen - set(STATUS_COLORS))


def _symbol(p: dict) -> str:
    if p["speedup"] is None:
        return "x-thin-open" if p["status"] == "correct" else "x"
    if p["best"]:
        return "star"
    return "circle" if p["full_grid"] else "circle-open"


def _point_hover(p: dict) -> str:
    sp = "-" if p["speedup"] is None else f"{p['speedup']:.4f}x"
    lines = [f"<b>#{p['number']}</b>  {_pe(p['status'])}  {_pe(p['correct'])}  {sp}"
             + ("  <b>best</b>" if p["best"] else ""),
             _pe(" · ".join(x for x in (p["mode"], p["device"], p["author"]) if x))]
    lines += _wrap(p["summary"])
    if p["question"]:
        lines.append(f"after question {_pe(p['question'])}")
    for r in p["remarks"][:2]:
        lines += _wrap("remark: " + r, limit=2)
    return "<br>".join(lines)


def _ask_hover(a: dict) -> str:
    head = f"<b>{_pe(a['id'] or 'typed question')}</b> after #{a['after']}"
    extra = ", ".join(_pe(x) for x in (a["chosen_by"] and f"chosen by {a['chosen_by']}", a["point"]) if x)
    return "<br>".join([head + (f" ({extra})" if extra else ""), *_wrap(a["text"], limit=4)])


def _cell_hover(c: dict, grid: dict) -> str:
    lines = [f"<b>{_pe(c['id'])}</b>"]
    if not c["ok"]:
        lines.append("failed: " + _pe(c["error"]))
    if c["speedup"] is not None:
        lines.append(f"speedup {c['speedup']:.3f}x over {_pe(c['baseline'] or 'the fastest baseline')}")
    if c["time_ms"] is not None:
        t = f"time {c['time_ms']:.4g} ms"
        if c["baseline_ms"] is not None:
            t += f" (baseline {c['baseline_ms']:.4g} ms)"
        lines.append(t)
    if c["tflops"] is not None:
        lines.append(f"{c['tflops']:.1f} TFLOP/s" if c["tflops"] >= 1 else f"{c['tflops'] * 1000:.1f} GFLOP/s")
    if c["sol_fraction"] is not None:
        lines.append(f"speed of light: {c['sol_fraction']:.2f} ({_pe(c['sol_bound'] or '-')} bound)")
    shape = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in c["shape"].items())
    lines += _wrap(shape)
    return "<br>".join(lines)


def _length(v: Any) -> str:
    return _pe(v)


def _wrap(text: str, width: int = 90, limit: int = 6) -> list[str]:
    lines = textwrap.wrap(str(text), width=width) or []
    if len(lines) > limit:
        lines = lines[:limit]
        lines[-1] += " …"
    return [_pe(x) for x in lines]


# ------------------------------------------------------------------ sections and tables

def _header(data: dict[str, Any]) -> str:
    s, r, best = data["session"], data["summary"], data["best"]
    points = data["points"]
    failed = sum(1 for p in points if p["status"] not in ("correct", "unchecked"))
    t = r["tokens"]
    cards = [
        ("best speedup", f"{best['speedup']:.3f}x" if best and best["speedup"] is not None else "-",
         f"attempt {best['number']}, {best['correct']}, {best['mode'] or '-'}" if best else "no correct timed attempt"),
        ("attempts", str(len(points)), f"{len(points) - failed} ran correct, {failed} failed"),
        ("questions asked", str(len(data["asks"])),
         f"{sum(1 for q in data['efficacy'] if q['new_best'])} of {len(data['efficacy'])} questions led to a new best"),
        ("tokens", _count(t.get("input_tokens", 0) + t.get("output_tokens", 0)),
         f"{_count(t.get('input_tokens', 0))} in, {_count(t.get('output_tokens', 0))} out"),
        ("cost", f"${r['cost_usd']:.2f}", "no model turns recorded" if not r["model_turns"]
         else f"{r['model_turns']} model turns" + ("" if r["priced"] else "; some had no price")),
    ]
    cards_html = "".join(f'<div class="card"><div class="k">{_e(k)}</div><div class="v">{_e(v)}</div>'
                         f'<div class="sub">{_e(sub)}</div></div>' for k, v, sub in cards)
    devices = ", ".join(data["environment"]["devices"]) or "-"
    return (f'<header><h1>Session <span class="mono">{_e(s.get("id", ""))}</span></h1>'
            f'<div class="meta">task <b>{_e(s.get("task", ""))}</b> · branch '
            f'<span class="mono">{_e(s.get("branch", ""))}'
            f'</span> · started {_e(str(s.get("created", ""))[:16].replace("T", " "))} · {_e(devices)}</div>'
            f'<div class="cards">{cards_html}</div></header>')


def _section(title: str, note: str, body: str) -> str:
    note_html = f'<p class="note">{note}</p>' if note else ""
    return f'<section><h2>{_e(title)}</h2>{note_html}{body}</section>'


def _timeline_note(data: dict) -> str:
    return ("Each attempt is a point, coloured by its status: filled for whole-grid runs, open for quick or subset "
            "runs (their geomean covers other scenarios), ✕ on the floor for runs with no timing, a star for the best. "
            "The line is the best so far as the attempt log marks it; triangles mark the questions asked. "
            "Hover for an attempt's summary.")


def _family_note(fam: dict) -> str:
    note = "Geometric mean speedup per family and mask over each baseline that ran; the last row is the whole grid."
    if fam["fa3_missing"]:
        note += (f' <span class="warn">FA3 did not run ({_e(fam["skipped"][FA3])}): these speedups are against '
                 "weaker baselines.</span>")
    return note


def _question_note(data: dict) -> str:
    return ("Each question asked in this session: how often, how many asks had their following attempts measured "
            "(settled), after how many of those the best rose (led to a gain), and the median change of the best.")


def families_table(fam: dict[str, Any]) -> str:
    cols = fam["columns"]
    head = "".join(f"<th>{_e(_baseline_name(c))}</th>" for c in cols)
    sol_head = "<th>SoL</th>" if fam["has_sol"] else ""
    rows = []
    for r in fam["rows"]:
        cells = "".join(_speed_cell(r["by"].get(c)) for c in cols)
        sol = f"<td class='num'>{_fmt(r['sol'], '.2f')}</td>" if fam["has_sol"] else ""
        n = f"{r['correct']}/{r['n']}" if r["correct"] != r["n"] else str(r["n"])
        rows.append(f"<tr><td>{_e(r['family'])}</td><td>{_e(r['mask'])}</td><td class='num'>{n}</td>{cells}{sol}</tr>")
    total = "".join(_speed_cell(fam["overall"].get(c)) for c in cols)
    rows.append(f"<tr class='total'><td>whole grid</td><td></td><td class='num'>{sum(r['n'] for r in fam['rows'])}"
                f"</td>{total}{'<td></td>' if fam['has_sol'] else ''}</tr>")
    return (f"<div class='scroll'><table><thead><tr><th>family</th><th>mask</th><th>n</th>{head}{sol_head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table></div>")


def efficacy_table(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "<p class='empty'>No question was asked in this session.</p>"
    body = []
    for q in rows:
        gain = "-" if q["median_gain"] is None else f"{q['median_gain']:+.1%}"
        led = f"{q['new_best']}/{q['settled']}" if q["settled"] else "-"
        cls = " class='hit'" if q["new_best"] else ""
        body.append(f"<tr{cls}><td><span class='mono'>{_e(q['id'])}</span>"
                    f"<div class='qtext'>{_e(q['text'] or '')}</div>"
                    f"</td><td>{_e(q['category'] or '')}</td><td class='num'>{q['asked']}</td>"
                    f"<td class='num'>{q['settled']}</td><td class='num'>{led}</td><td class='num'>{gain}</td></tr>")
    head = ("<thead><tr><th>question</th><th>category</th><th>asked</th><th>settled</th>"
            "<th>led to a gain</th><th>median gain</th></tr></thead>")
    out = f"<div class='scroll'><table>{head}<tbody>{''.join(body[:SHOWN_QUESTIONS])}</tbody></table></div>"
    if len(body) > SHOWN_QUESTIONS:
        out += (f"<details><summary>{len(body) - SHOWN_QUESTIONS} more questions</summary><div class='scroll'><table>"
                f"{head}<tbody>{''.join(body[SHOWN_QUESTIONS:])}</tbody></table></div></details>")
    return out


def session_table(data: dict[str, Any]) -> str:
    r, env = data["summary"], data["environment"]
    t = r["tokens"]
    rows = [("models", ", ".join(m for m in r["models"] if m) or "-"),
            ("model turns", str(r["model_turns"])),
            ("tokens", f"{t.get('input_tokens', 0):,} in, {t.get('output_tokens', 0):,} out, "
                       f"{t.get('cache_read_tokens', 0):,} cache read, {t.get('cache_write_tokens', 0):,} cache write"),
            ("cost", f"${r['cost_usd']:.4f}" + ("" if r["priced"] else " (some turns had no price in the config)")),
            ("devices", "; ".join(f"{d} ({n} attempts)" for d, n in env["devices"].items()) or "-"),
            ("best attempt measured on", " · ".join(x for x in (env["best_device"],
                                                                env["torch"] and f"torch {env['torch']}",
                                                                env["cuda"] and f"CUDA {env['cuda']}") if x) or "-"),
            ("build", env["compile"] or "-"),
            ("decision points", ", ".join(f"{k} {v}" for k, v in r["decision_points"].items() if k) or "-"),
            ("errors logged", str(r["errors"]))]
    if r.get("last_end"):
        rows.append(("last run ended", str(r["last_end"])))
    for e in r.get("best_elsewhere") or []:
        rows.append((f"fastest on {e['device']}", f"{e['speedup']:.3f}x (attempt {e['attempt']}; {e['mode']})"))
    body = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows)
    return f"<table class='kv'><tbody>{body}</tbody></table>"


def commands_block(commands: list[tuple[str, str]]) -> str:
    lines = "\n".join(f"<span class='c'># {_e(what)}</span>\n{_e(cmd)}" for what, cmd in commands)
    return f"<pre class='cmds'>{lines}</pre>"


def _speed_cell(v: float | None) -> str:
    if v is None:
        return "<td class='num na'>-</td>"
    return f"<td class='num' style='background:{_speed_color(v)}'>{v:.3f}x</td>"


def _speed_color(v: float) -> str:
    """A pale green above 1.0x, a pale red below, stronger the further from level (full at 1.5x / 0.67x)."""
    x = max(-1.0, min(1.0, math.log(v) / math.log(1.5)))
    rgb = (220, 252, 231) if x >= 0 else (254, 226, 226)
    strong = (134, 239, 172) if x >= 0 else (252, 165, 165)
    a = abs(x)
    return "rgb({},{},{})".format(*(round(p + (q - p) * a) for p, q in zip(rgb, strong))) if a > 0.02 else "#f8fafc"


def _baseline_name(name: str) -> str:
    return {FASTEST: "fastest baseline", FA3: "FA3", "fa2": "FA2", "fa4": "FA4", "sdpa_cudnn": "cuDNN (SDPA)",
            "sdpa_flash": "FA2 (SDPA)", "torch_sdpa": "torch SDPA"}.get(name, name)


def _fmt(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def _count(n: int) -> str:
    return f"{n / 1e6:.1f}M" if n >= 1e6 else f"{n / 1e3:.1f}k" if n >= 1e4 else str(n)


def _e(x: Any) -> str:
    """Text for the page's HTML."""
    return html.escape(str(x), quote=True)


def _pe(x: Any) -> str:
    """Text for plotly's labels: it reads a few tags there and decodes &lt; &gt; &amp; (not &quot;)."""
    return html.escape(str(x), quote=False)


CSS = """
:root { --fg:#1f2937; --muted:#64748b; --line:#e5e7eb; --bg:#f5f7fa; --card:#ffffff; --accent:#2563eb; }
* { box-sizing: border-box; }
body { margin:0; background:var(--bg); color:var(--fg); font: 14px/1.5 """ + FONT + """; }
main { max-width: 1280px; margin: 0 auto; padding: 28px 28px 40px; }
header h1 { font-size: 22px; margin: 0 0 4px; font-weight: 650; }
.meta { color: var(--muted); margin-bottom: 18px; }
.mono, code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(190px, 1fr)); gap: 12px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 12px 16px; }
.card .k { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.card .v { font-size: 26px; font-weight: 650; margin: 2px 0; }
.card .sub { color: var(--muted); font-size: 12.5px; }
section { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 16px 20px 18px;
          margin-top: 18px; }
h2 { font-size: 16px; margin: 0 0 4px; font-weight: 650; }
.note { color: var(--muted); margin: 0 0 10px; font-size: 13px; }
.warn { color: #b45309; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { padding: 5px 10px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
thead th { color: var(--muted); font-weight: 600; border-bottom: 2px solid var(--line); white-space: nowrap; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.na { color: #cbd5e1; }
tr.total td { font-weight: 650; border-top: 2px solid var(--line); }
tr.hit td:first-child { border-left: 3px solid #16a34a; }
.qtext { color: var(--muted); font-size: 12.5px; max-width: 760px; }
table.kv th { width: 220px; color: var(--muted); font-weight: 500; }
pre.cmds { background: #0f172a; color: #e2e8f0; padding: 14px 16px; border-radius: 8px; overflow-x: auto;
           font-size: 13px; line-height: 1.6; margin: 0; }
pre.cmds .c { color: #94a3b8; }
.empty { color: var(--muted); }
details summary { cursor: pointer; color: var(--accent); margin: 10px 0 4px; }
footer { color: var(--muted); font-size: 12px; margin-top: 18px; text-align: center; }
"""

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{css}</style>
<script>{plotly}</script>
</head>
<body>
<main>
{body}
<footer>{footer}</footer>
</main>
</body>
</html>
"""
