"""Harness runs spread over a Dask distributed cluster (`--workers N|gpus`, `--cluster ADDRESS`).

A run is cut into jobs (a shard of the scenarios, or one candidate file); each job runs the
ordinary harness child (ks_tui.harness.client.run_harness) on one worker, so the kernel still
lives in its own process there, and each worker times its own baselines on its own device.
The kernel is compiled once per architecture on one worker and the library is shipped to the
others as bytes.

Nothing in this package imports dask at import time: without --workers/--cluster (and no
KS_CLUSTER or `cluster` in the config file) the single-machine path is unchanged.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ks_tui.errors import KsError


@dataclass(frozen=True)
class ClusterSpec:
    """Where jobs run: a local cluster of `workers` processes, or the scheduler at `address`."""

    workers: int | None = None   # local cluster size (resolved from "gpus" when given so)
    gpus: bool = False           # --workers gpus: one worker per visible GPU
    address: str | None = None   # a running scheduler, e.g. tcp://10.0.0.5:8786

    def describe(self) -> str:
        if self.address:
            return f"the Dask scheduler at {self.address}"
        return "a local cluster of " + ("one worker per GPU" if self.gpus else f"{self.workers} worker(s)")


def parse_workers(text: str | None) -> tuple[int | None, bool]:
    """--workers N|gpus as (N, gpus); KsError for anything else."""
    if text is None:
        return None, False
    t = text.strip().lower()
    if t == "gpus":
        return None, True
    if t.isdigit() and int(t) >= 1:
        return int(t), False
    raise KsError(f"--workers wants a number of workers (1 or more) or 'gpus', not {text!r}")


def configured_address(workspace: Path | None) -> str:
    """KS_CLUSTER, else the `cluster` key of the config files ("" when none names one)."""
    env = os.environ.get("KS_CLUSTER")
    if env is not None:
        return env.strip()
    from ks_tui import config

    paths = [config.user_config_path()] + ([Path(workspace) / ".ks" / "config.toml"] if workspace else [])
    if not any(p.is_file() for p in paths):
        return ""
    # Only the files here: the KS_* variables of the agent are not this command's business.
    xdg = {k: v for k, v in os.environ.items() if k == "XDG_CONFIG_HOME"}
    return config.load_config(workspace, env=xdg).cluster.strip()


def spec_from_args(args, workspace: Path | None = None) -> ClusterSpec | None:
    """The cluster a check/bench/compare command asked for, or None for the single-machine path."""
    workers, gpus = parse_workers(getattr(args, "workers", None))
    address = getattr(args, "cluster", None)
    if (workers or gpus) and address:
        raise KsError("give --workers (a local cluster) or --cluster (a running scheduler), not both")
    if workers or gpus:
        return ClusterSpec(workers=workers, gpus=gpus)
    if address is not None:
        if not address.strip():
            raise KsError("--cluster wants a scheduler address such as tcp://127.0.0.1:8786")
        return ClusterSpec(address=address.strip())
    if getattr(args, "no_cluster", False):
        return None
    found = configured_address(workspace)
    return ClusterSpec(address=found) if found else None


def add_arguments(parser) -> None:
    """--workers / --cluster / --no-cluster on a check, bench or compare parser."""
    parser.add_argument("--workers", metavar="N|gpus",
                        help="spread the run over a local Dask cluster of N worker processes ('gpus': one per "
                             "visible GPU, each pinned to its own)")
    parser.add_argument("--cluster", metavar="ADDRESS",
                        help="spread the run over the workers of a running Dask scheduler "
                             "(default: KS_CLUSTER or the config file's `cluster`)")
    parser.add_argument("--no-cluster", action="store_true",
                        help="run on this machine even when KS_CLUSTER or the config names a scheduler")


__all__ = ["ClusterSpec", "add_arguments", "configured_address", "parse_workers", "spec_from_args"]
