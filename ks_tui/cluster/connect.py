"""Start a local Dask cluster (one worker per GPU on a GPU box) or reach a running scheduler."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import time
from typing import TYPE_CHECKING

from ks_tui.errors import KsError

if TYPE_CHECKING:
    from distributed import Client, SpecCluster

CONNECT_TIMEOUT_S = 3.0     # an address nobody answers: one line, fast
WORKERS_TIMEOUT_S = 60.0    # a local cluster's workers start in seconds; a remote one may have none


def visible_gpus() -> list[str]:
    """The GPUs this process may use, as CUDA_VISIBLE_DEVICES entries: those it names, else
    one index per line of `nvidia-smi -L` (no GPU, or no nvidia-smi: none)."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [d.strip() for d in env.split(",") if d.strip() and d.strip() != "-1"]
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    try:
        out = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [str(i) for i, line in enumerate(ln for ln in out.stdout.splitlines() if ln.startswith("GPU "))]


def worker_environments(spec, device: str) -> list[dict[str, str]]:
    """One environment per local worker: on a CUDA task each worker owns one GPU."""
    gpus = visible_gpus() if (spec.gpus or device == "cuda") else []
    if spec.gpus:
        if not gpus:
            raise KsError("--workers gpus: no GPU is visible (nvidia-smi -L lists none)",
                          hint="give a number of workers instead")
        n = len(gpus)
    else:
        n = spec.workers
    if device != "cuda":
        return [{} for _ in range(n)]
    if n > len(gpus):
        raise KsError(f"--workers {n}: {len(gpus)} GPU(s) visible, and each worker owns one",
                      hint="use --workers gpus, or fewer workers")
    return [{"CUDA_VISIBLE_DEVICES": g} for g in gpus[:n]]


def _quiet() -> None:
    # Dask's own log lines (a worker lost, a connection refused) would interleave with ours.
    import dask

    dask.config.set({"distributed.admin.tick.limit": "1h", "logging.distributed": "error"})
    for name in ("distributed", "distributed.client", "distributed.scheduler", "distributed.nanny",
                 "distributed.worker", "distributed.core", "distributed.comm"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


class Cluster:
    """A client connected to workers; closes (and, when it started them, stops) them on exit."""

    def __init__(self, spec, device: str):
        self.spec, self.device = spec, device
        self.client: Client | None = None
        self.cluster: SpecCluster | None = None  # a local cluster this object started
        self.start_s = 0.0

    def __enter__(self) -> "Cluster":
        t0 = time.monotonic()
        try:
            if self.spec.address:
                self._connect(self.spec.address)
            else:
                self._start_local()
        except BaseException:
            self.close()
            raise
        self.start_s = round(time.monotonic() - t0, 4)
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        for part in (self.client, self.cluster):
            if part is not None:
                try:
                    part.close()
                except Exception:  # closing a cluster whose workers died: nothing left to do
                    pass
        self.client = self.cluster = None

    def _connect(self, address: str) -> None:
        from distributed import Client

        _quiet()
        try:
            self.client = client = Client(address, timeout=CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError, ValueError) as e:
            why = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            if "Timed out" in why or isinstance(e, TimeoutError):
                why = f"no answer within {CONNECT_TIMEOUT_S:g}s"
            raise KsError(f"cannot reach the Dask scheduler at {address}: {why}") from None
        self._wait_for(client, 1, f"the Dask scheduler at {address} has no workers")

    def _start_local(self) -> None:
        from distributed import Client, Nanny, Scheduler, SpecCluster

        import dask

        envs = worker_environments(self.spec, self.device)
        _quiet()
        # Dask sets OMP/MKL/OPENBLAS_NUM_THREADS=1 in its workers; the harness child must see the
        # environment a run on this machine sees (it sets the task's thread count itself).
        dask.config.set({"distributed.nanny.pre-spawn-environ": {}})
        # Nannies: a worker killed mid-run is restarted, and its job goes to a live worker.
        workers = {f"ks-{i}": {"cls": Nanny, "options": {"nthreads": 1, "env": env, "host": "127.0.0.1",
                                                         "memory_limit": 0, "dashboard": False,
                                                         "silence_logs": logging.CRITICAL}}
                   for i, env in enumerate(envs)}
        scheduler = {"cls": Scheduler, "options": {"host": "127.0.0.1", "port": 0, "dashboard": False,
                                                   "dashboard_address": "127.0.0.1:0"}}
        self.cluster = SpecCluster(workers=workers, scheduler=scheduler, silence_logs=logging.CRITICAL,
                                   name="ks")
        self.client = client = Client(self.cluster)
        self._wait_for(client, len(envs), f"the local cluster's {len(envs)} workers did not start")

    @staticmethod
    def _wait_for(client: Client, n: int, message: str) -> None:
        try:
            client.wait_for_workers(n, timeout=WORKERS_TIMEOUT_S)
        except (TimeoutError, OSError):
            raise KsError(f"{message} within {WORKERS_TIMEOUT_S:g}s") from None

    def workers(self) -> list[str]:
        if self.client is None:
            raise RuntimeError("Cluster.workers() needs the cluster entered (`with Cluster(...)`)")
        return sorted(self.client.scheduler_info(n_workers=-1)["workers"])
