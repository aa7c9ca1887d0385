"""A profile kept with an attempt (`ks profile N`) is shown by `ks show N`, in text and in --json."""

from __future__ import annotations

import json

from ks_tui.attempts import AttemptStore
from ks_tui.harness import profile as prof
from tests.attempts.conftest import result_for
from tests.attempts.test_cli import ks

LAUNCH = {"kernel": "toy_kernel", "duration_us": 12.5, "sm_throughput_pct": 71.0, "tensor_pipe_pct": 64.0,
          "achieved_occupancy_pct": 18.0, "l2_hit_pct": 55.0, "top_stalls": [["barrier", 1.5], ["wait", 0.7]]}


def test_ks_show_prints_the_profile_kept_with_the_attempt(workspace):
    store = AttemptStore(workspace)
    sid = store.new_session("toy").id
    kernel = store.kernel_path(sid)
    kernel.write_text(kernel.read_text() + "// faster\n")
    attempt = store.record(sid, result_for(kernel))
    prof.keep(store.sessions_dir, sid, attempt.number, {"n16": {"launches": [LAUNCH]}})
    text = ks("show", str(attempt.number), "--session", sid, cwd=workspace)
    assert text.returncode == 0, text.stderr
    assert "profile of n16 (1 launch, ncu):" in text.stdout
    assert "toy_kernel 12.5 us: SM 71%, tensor 64%, occupancy 18%, L2 hit 55%" in text.stdout
    assert "top stalls (cycles per issue): barrier 1.50, wait 0.70" in text.stdout
    doc = json.loads(ks("show", str(attempt.number), "--session", sid, "--json", cwd=workspace).stdout)
    assert doc["profile"]["n16"]["launches"][0]["kernel"] == "toy_kernel"
