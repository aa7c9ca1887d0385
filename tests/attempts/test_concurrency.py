"""Two sessions written at the same time by two processes keep apart (branches, notes)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ks_tui.attempts import AttemptStore

ROOT = Path(__file__).resolve().parents[2]

WRITER = """
import sys
from ks_tui.attempts import AttemptStore
from tests.attempts.conftest import result_for
store = AttemptStore(sys.argv[1])
sid = sys.argv[2]
kernel = store.kernel_path(sid)
for i in range(6):
    kernel.write_text(kernel.read_text() + f"// {sid} step {i}\\n")
    store.record(sid, result_for(kernel, speedup=1.0 + i / 10))
"""


def test_two_processes_recording_in_two_sessions_at_once(workspace):
    store = AttemptStore(workspace)
    a, b = store.new_session("toy"), store.new_session("toy")
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(workspace), s.id], cwd=ROOT,
                              stderr=subprocess.PIPE, text=True) for s in (a, b)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    for s in (a, b):
        atts = store.attempts(s.id)
        assert [x.number for x in atts] == [1, 2, 3, 4, 5, 6]
        assert all(store.result(s.id, x.number)["geomean_speedup"] == x.speedup for x in atts)
        assert all(f"{s.id} step" in store.kernel_at(s.id, x.number).decode() for x in atts)
        other = b if s is a else a
        assert other.id not in store.kernel_path(s.id).read_text()


REMARKER = """
import sys
from ks_tui.attempts import AttemptStore
store = AttemptStore(sys.argv[1])
for i in range(5):
    store.remark(sys.argv[2], 1, f"{sys.argv[3]} remark {i}")
"""


def test_remarks_from_processes_at_once_while_results_are_written_are_all_kept(workspace):
    from tests.attempts.conftest import result_for

    store = AttemptStore(workspace)
    sid = store.new_session("toy").id
    kernel = store.kernel_path(sid)
    kernel.write_text(kernel.read_text() + "// first\n")
    store.record(sid, result_for(kernel, speedup=1.0))
    other = store.new_session("toy").id  # a session recording results (the same notes lock) meanwhile
    procs = [subprocess.Popen([sys.executable, "-c", REMARKER, str(workspace), sid, name], cwd=ROOT,
                              stderr=subprocess.PIPE, text=True) for name in ("p", "q", "r")]
    procs.append(subprocess.Popen([sys.executable, "-c", WRITER, str(workspace), other], cwd=ROOT,
                                  stderr=subprocess.PIPE, text=True))
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    texts = sorted(r["text"] for r in store.attempts(sid)[0].remarks)
    assert texts == sorted(f"{n} remark {i}" for n in "pqr" for i in range(5))
    assert store.result(sid, 1)["geomean_speedup"] == 1.0
    assert [a.number for a in store.attempts(other)] == [1, 2, 3, 4, 5, 6]
