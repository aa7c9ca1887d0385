"""ks_tui.harness.compare on a committed device call of the notebook: the figures the notes quote."""

from __future__ import annotations

import json
from pathlib import Path

from ks_tui.harness import compare

RESULTS = Path(__file__).resolve().parents[1] / "results"


def test_the_call_reads_as_the_notes_say():
    """Replayed from the committed run files (results/2026-12-05-h200-s23-call3-runs.json): next_nomemset saved
    under a microsecond on the median short launch, and next_kvthreads ran the d96 128-row launches over 3% faster
    and every d128 192-row (s2048, s2031) launch slower. The notes' figures, kept honest against the data."""
    runs = json.loads((RESULTS / "2026-12-05-h200-s23-call3-runs.json").read_text())["runs"]
    cands = [compare.Candidate(n, None, runs[n]) for n in ("v34", "nomemset", "kvthreads")]
    s = compare.summarize(cands)
    assert len(s["common"]) == 48 and not s["failed"]
    assert 0.5 < s["time_saved_us"]["nomemset"] < 1.5
    ratio = {i: s["time_ms"][i]["v34"] / s["time_ms"][i]["kvthreads"] for i in s["common"]}
    d96_128 = [i for i in ratio if i.startswith("d96") and not i.endswith("-s2048")]  # s2048 unmasked: 192 rows
    assert len(d96_128) == 5 and all(ratio[i] > 1.02 for i in d96_128)
    rows192 = ["d128-h16-16-s2048", "d128-h32-8-s2048", "d128-h64-8-s2048", "d128-h32-1-s2048", "d128-h16-16-s2031"]
    assert all(ratio[i] < 1.0 for i in rows192)
