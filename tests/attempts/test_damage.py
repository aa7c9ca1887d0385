"""Damage the session 22 audit did to sessions: a result file that is not one, a workspace
moved to another folder, an export cut short, one session's unreadable session.json. Each
is refused in one line or mended, and nothing recorded is lost. Real git, real `ks`."""

from __future__ import annotations

import gzip
import io
import json
import shutil
import tarfile

import pytest

from tests.attempts.conftest import git, result_for
from tests.attempts.test_cli import bad_input, ks, toy_session  # noqa: F401 - toy_session is a fixture


@pytest.mark.parametrize("edit, words", [
    (lambda r: r.update(geomean_speedup=float("nan")), "'geomean_speedup' must be a positive finite number"),
    (lambda r: r.update(geomean_speedup=1e400), "'geomean_speedup' must be a positive finite number"),
    (lambda r: r.update(selection=5), "'selection' must be a list of scenario ids"),
])
def test_a_result_file_with_impossible_values_records_nothing(toy_session, tmp_path, edit, words):  # noqa: F811
    ws, sid, kernel = toy_session
    kernel.write_text(kernel.read_text() + "// measured elsewhere\n")
    result = result_for(kernel, speedup=1.5)
    edit(result)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(result))  # NaN and inf go out as the bare words Python's json accepts back
    bad_input(ks("try", "-s", sid, "--result", str(path), cwd=ws), words)
    bad_input(ks("try", "-s", sid, "--result", str(tmp_path), cwd=ws), "cannot read")  # a folder
    assert json.loads(ks("log", "-s", sid, "--json", cwd=ws).stdout)["attempts"] == []
    assert "// measured elsewhere" in kernel.read_text()


def test_a_moved_workspace_mends_its_worktree_link_and_keeps_the_unrecorded_edit(toy_session, tmp_path):  # noqa: F811
    ws, sid, kernel = toy_session
    kernel.write_text(kernel.read_text() + "// v1\n")
    assert ks("try", "-s", sid, "--no-run", cwd=ws).returncode == 0
    kernel.write_text(kernel.read_text() + "// typed, not yet recorded\n")
    moved = tmp_path / "moved"
    shutil.move(str(ws), str(moved))

    out = ks("try", "-s", sid, "--no-run", cwd=moved)
    assert out.returncode == 0, out.stderr
    log = json.loads(ks("log", "-s", sid, "--json", cwd=moved).stdout)["attempts"]
    assert [a["number"] for a in log] == [1, 2]
    wt = moved / "sessions" / sid / "worktree"
    assert "// typed, not yet recorded" in git(wt, "show", "HEAD:kernels/toy/kernel.cpp")


def test_an_export_cut_short_is_refused_before_anything_is_imported(toy_session, tmp_path):  # noqa: F811
    ws, sid, kernel = toy_session
    kernel.write_text(kernel.read_text() + "// v1\n")
    res = tmp_path / "r.json"
    res.write_text(json.dumps(result_for(kernel, speedup=1.3)))
    assert ks("try", "-s", sid, "--result", str(res), cwd=ws).returncode == 0
    export = tmp_path / "s.tgz"
    assert ks("session", "export", sid, str(export), cwd=ws).returncode == 0

    raw = gzip.decompress(export.read_bytes())
    bundle = next(m for m in tarfile.open(fileobj=io.BytesIO(raw)) if m.name == "session.bundle")
    cut = tmp_path / "cut.tgz"  # ends after the bundle: tar reads it as whole, without results or trace
    cut.write_bytes(gzip.compress(raw[:bundle.offset_data + (bundle.size + 511) // 512 * 512]))
    damaged = tmp_path / "damaged.tgz"  # gzip's checksum no longer matches
    data = bytearray(export.read_bytes())
    data[len(data) // 3] ^= 0xFF
    damaged.write_bytes(bytes(data))

    clone = tmp_path / "clone"
    git(tmp_path, "clone", "--quiet", str(ws), str(clone))
    for bad, words in ((cut, "no results.json"), (damaged, "not a session export")):
        bad_input(ks("session", "import", str(bad), cwd=clone), words)
    assert not (clone / "sessions").exists() or not any((clone / "sessions").iterdir())
    out = ks("session", "import", str(export), cwd=clone)  # the whole export still imports afterwards
    assert out.returncode == 0, out.stderr
    assert json.loads(ks("log", "-s", sid, "--json", cwd=clone).stdout)["attempts"][0]["speedup"] == 1.3


def test_one_unreadable_session_file_does_not_hide_the_other_sessions(toy_session):  # noqa: F811
    ws, sid, _ = toy_session
    other = ks("session", "new", "toy", cwd=ws).stdout.strip()
    (ws / "sessions" / sid / "session.json").write_text("{bad")
    out = ks("sessions", cwd=ws)
    assert out.returncode == 0, out.stderr
    assert sid in out.stdout and other in out.stdout
    bad_input(ks("log", "-s", sid, cwd=ws), "unreadable session file")  # that session itself names the file
