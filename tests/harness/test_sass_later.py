"""The SASS summary made on a thread while the kernel is checked (harness/sass_later.py)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from ks_tui.harness import sass_later
from ks_tui.harness.build import build
from tests.harness.test_build import TINY_CU


def test_a_pending_summary_is_made_put_on_the_record_and_cached(tmp_path):
    entry = tmp_path / "ab" / "abcd"
    entry.mkdir(parents=True)
    src = entry / "k.cpp"
    src.write_text('extern "C" int f() { return 1; }\n')
    subprocess.run(["g++", "-shared", "-fPIC", "-o", str(entry / "kernel.so"), str(src)], check=True)
    record = {"ok": True, "sass": None, "sass_reason": sass_later.PENDING, "kernels": []}
    (entry / "compile.json").write_text(json.dumps(record))
    job = sass_later.start(record, entry / "kernel.so")
    assert job is not None
    timings: dict = {}
    job.finish(timings)
    assert record["sass_reason"] != sass_later.PENDING
    if shutil.which("cuobjdump") is None:
        assert record["sass"] is None and "cuobjdump not found" in record["sass_reason"]
    assert timings["sass_s"] >= 0 and timings["sass_wait_s"] >= 0
    cached = json.loads((entry / "compile.json").read_text())
    assert (cached["sass"], cached["sass_reason"]) == (record["sass"], record["sass_reason"])


def test_nothing_is_started_for_a_finished_or_failed_build(tmp_path):
    assert sass_later.start({"sass": {"BAR": 1}, "sass_reason": None}, tmp_path / "kernel.so") is None
    assert sass_later.start({"sass": None, "sass_reason": sass_later.PENDING}, None) is None
    assert sass_later.start(None, None) is None


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_nvcc_build_leaves_the_summary_pending_and_the_job_completes_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KS_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "tiny.cu"
    src.write_text(TINY_CU)
    kw = dict(language="cuda", compiler="nvcc", flags=[], arch="sm_90a", shown_name="kernel.cu", timeout=300)
    record, lib = build(src, sass_later=True, **kw)
    assert record["ok"] and record["sass_reason"] == sass_later.PENDING
    sass_later.start(record, lib).finish()
    again, _ = build(src, sass_later=True, **kw)
    assert again["cached"] and again["sass"] == record["sass"] and again["sass_reason"] == record["sass_reason"]
    if shutil.which("cuobjdump") is not None:
        assert record["sass"]["BAR"] >= 1
