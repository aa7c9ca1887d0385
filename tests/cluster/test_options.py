"""Which cluster a command uses: --workers, --cluster, KS_CLUSTER, the config file's `cluster`."""

from __future__ import annotations

import argparse

import pytest

from ks_tui.cluster import ClusterSpec, add_arguments, spec_from_args
from ks_tui.errors import KsError


def _args(*argv: str):
    p = argparse.ArgumentParser()
    add_arguments(p)
    return p.parse_args(list(argv))


def test_flags_then_the_environment_then_the_config_file(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("KS_CLUSTER", raising=False)
    ws = tmp_path / "ws"
    assert spec_from_args(_args(), ws) is None  # nothing named: this machine, no Dask
    (ws / ".ks").mkdir(parents=True)
    (ws / ".ks" / "config.toml").write_text('cluster = "tcp://10.0.0.5:8786"\n')
    assert spec_from_args(_args(), ws) == ClusterSpec(address="tcp://10.0.0.5:8786")
    monkeypatch.setenv("KS_CLUSTER", "tcp://head:8786")
    assert spec_from_args(_args(), ws) == ClusterSpec(address="tcp://head:8786")
    assert spec_from_args(_args("--cluster", "tcp://other:1"), ws) == ClusterSpec(address="tcp://other:1")
    assert spec_from_args(_args("--workers", "3"), ws) == ClusterSpec(workers=3)
    assert spec_from_args(_args("--workers", "gpus"), ws) == ClusterSpec(gpus=True)
    assert spec_from_args(_args("--no-cluster"), ws) is None
    monkeypatch.setenv("KS_CLUSTER", "")
    assert spec_from_args(_args(), ws) is None  # set but empty: none, the file is not read either


@pytest.mark.parametrize("argv", [["--workers", "0"], ["--workers", "-1"], ["--workers", "two"],
                                  ["--workers", "2", "--cluster", "tcp://a:1"], ["--cluster", " "]])
def test_bad_options_are_bad_input(argv, monkeypatch):
    monkeypatch.delenv("KS_CLUSTER", raising=False)
    with pytest.raises(KsError):
        spec_from_args(_args(*argv), None)


def test_gpus_on_a_machine_without_them_is_refused(monkeypatch):
    from ks_tui.cluster.connect import worker_environments

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with pytest.raises(KsError, match="no GPU is visible"):
        worker_environments(ClusterSpec(gpus=True), "cpu")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    assert worker_environments(ClusterSpec(gpus=True), "cuda") == [{"CUDA_VISIBLE_DEVICES": "2"},
                                                                  {"CUDA_VISIBLE_DEVICES": "3"}]
    with pytest.raises(KsError, match="2 GPU"):
        worker_environments(ClusterSpec(workers=3), "cuda")
    assert worker_environments(ClusterSpec(workers=3), "cpu") == [{}, {}, {}]
