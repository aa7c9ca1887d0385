"""Run harness jobs on a cluster's workers: compile once per architecture, ship the library,
watch every job, and re-run one whose worker died or hung (or fail naming the worker)."""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import dataclass, field
from typing import Callable

from ks_tui.cluster import worker as wk
from ks_tui.errors import KsError

GRACE_S = 30.0   # past the harness's own timeout, a job that has not come back is on a hung worker
POLL_S = 0.5
IDENTIFY_S = 30.0  # a worker that cannot say who it is in this time is left out of the run


@dataclass
class Job:
    key: str                       # unique within one run
    label: str                     # how messages name it: "shard 2/4 (10 scenarios)", "candidate fast"
    source: bytes                  # the kernel file's bytes
    ids: list[str] | None          # scenario ids (None: the run's selection, quick or all)
    seed: int
    worker: str                    # where it is planned (loosely: Dask may move it off a dead worker)
    ran_on: str = ""               # the worker that last said it started it
    started: float | None = None   # monotonic time of that start
    submitted: float = 0.0
    retried: bool = False
    deadline_slots: int = 1        # jobs ahead of it on its worker, itself included
    sha: str = field(init=False)

    def __post_init__(self) -> None:
        self.sha = hashlib.sha256(self.source).hexdigest()


@dataclass
class Stats:
    """Where a run's time went, for the result's `cluster` record."""

    compile_s: float = 0.0
    compiled_on: dict = field(default_factory=dict)   # arch -> worker that built it
    shipped_bytes: int = 0                            # library bytes sent along with the jobs
    jobs_s: float = 0.0
    reruns: list = field(default_factory=list)
    unresponsive: list = field(default_factory=list)  # workers left out: no answer when asked who they are


class Cancelled(Exception):
    """The run's cancel event was set: its jobs are cancelled, no result is made."""


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0][:300] if text else type(e).__name__


class JobRunner:
    def __init__(self, cluster, task, options: dict, on_event: Callable[[dict], None] | None = None,
                 hang_s: float | None = None, cancel=None):
        self.cl, self.task, self.options = cluster, task, options
        self.cancel = cancel  # a threading.Event: set, the run stops at the next poll
        self.on_event = on_event
        # A job not back this long after it started is on a hung worker (the harness child's own
        # timeout ends a hanging kernel well before).
        self.limit = float(hang_s) if hang_s else float(options["timeout"]) + GRACE_S
        self.finished: set[str] = set()
        self.stats = Stats()
        self.hung: set[str] = set()
        self.identities: dict[str, dict] = {}
        self.token = secrets.token_hex(4)
        self._jobs: dict[str, Job] = {}
        self.last_builds: dict[str, dict] = {}
        self.identify_s = IDENTIFY_S

    # ---------------------------------------------------------------- events

    def _event(self, event) -> None:
        msg = event[1] if isinstance(event, tuple) else event
        if not isinstance(msg, dict):
            return
        key = msg.get("job")
        job = self._jobs.get(key) if isinstance(key, str) else None
        if job is not None and msg.get("event") == "start":
            job.ran_on, job.started = msg.get("worker", ""), time.monotonic()
        if job is not None:
            msg = {**msg, "label": job.label}
        self._tell(msg)

    def _tell(self, msg: dict) -> None:
        if self.on_event is not None:
            try:
                self.on_event(msg)
            except Exception:  # a display callback must not fail the run
                pass

    # ---------------------------------------------------------------- the run

    def run(self, jobs: list[Job], *, one_if_broken: bool = False) -> dict[str, dict]:
        """{job key: harness result}; KsError for a run that cannot finish. With one_if_broken,
        the jobs of a kernel that does not compile are cut to the first (the shards of one run
        would all fail the same way)."""
        client = self.cl.client
        bundle = wk.task_bundle(self.task)
        if not self.identities:
            self.prepare()
        builds = self.last_builds = self._compile(client, bundle, jobs)
        failed = {sha for sha, per_arch in builds.items()
                  if one_if_broken and per_arch and not any(b["record"].get("ok") for b in per_arch.values())}
        kept, seen = [], set()
        for job in jobs:
            if job.sha in failed and job.sha in seen:
                continue
            seen.add(job.sha)
            kept.append(job)
        self._jobs = {j.key: j for j in kept}
        topic = f"ks-progress-{self.token}"
        client.subscribe_topic(topic, self._event)
        t0 = time.monotonic()
        try:
            return self._watch(client, bundle, kept, builds, topic)
        finally:
            self.stats.jobs_s = round(time.monotonic() - t0, 4)
            try:
                client.unsubscribe_topic(topic)
            except Exception:
                pass

    def prepare(self) -> list[str]:
        """Ask every worker who it is (architecture, host, GPU); the addresses of those that
        answered in time. A worker that does not answer is left out of the run (and said so)."""
        from concurrent.futures import ThreadPoolExecutor, TimeoutError as Late

        client, bundle = self.cl.client, wk.task_bundle(self.task)
        workers = [w for w in self.cl.workers() if w not in self.hung]
        pool = ThreadPoolExecutor(max(1, len(workers)))
        try:
            asked = {w: pool.submit(client.run, wk.identity, bundle, workers=[w]) for w in workers}
            deadline = time.monotonic() + self.identify_s
            for w, f in asked.items():
                try:
                    self.identities.update(f.result(timeout=max(0.1, deadline - time.monotonic())))
                except Late:
                    self.hung.add(w)
                    self.stats.unresponsive.append(w)
                    self._tell({"event": "unresponsive", "worker": w, "why": f"no answer in {self.identify_s:g}s"})
                except Exception as e:  # it died between the listing and the question
                    self.stats.unresponsive.append(w)
                    self._tell({"event": "unresponsive", "worker": w, "why": _first_line(e)})
        finally:
            pool.shutdown(wait=False)
        if not self.identities:
            raise KsError(f"no worker of the cluster answered within {self.identify_s:g}s: "
                          f"{', '.join(workers) or 'it has none'}")
        return sorted(self.identities)

    def _compile(self, client, bundle: dict, jobs: list[Job]) -> dict[str, dict]:
        """{source sha: {arch: build}}: each source built once per architecture its workers have,
        on a worker of that architecture (one with the compiler when there is one)."""
        from distributed import wait

        by_arch: dict[str, list[str]] = {}
        for addr, ident in sorted(self.identities.items()):
            by_arch.setdefault(ident["arch"], []).append(addr)
        builder = {arch: next((a for a in addrs if self.identities[a].get("compiler")), addrs[0])
                   for arch, addrs in by_arch.items()}
        wanted: dict[tuple[str, str], bytes] = {}
        for job in jobs:
            arch = self.identities.get(job.worker, {}).get("arch")
            if arch is not None:
                wanted[(job.sha, arch)] = job.source
        t0 = time.monotonic()
        futures = {client.submit(wk.compile_source, bundle, src, key=f"ks-compile-{self.token}-{sha[:12]}-{i}",
                                 workers=[builder[arch]], allow_other_workers=True, pure=False): (sha, arch)
                   for i, ((sha, arch), src) in enumerate(wanted.items())}
        for arch in {arch for _, arch in wanted}:
            self.stats.compiled_on[arch] = builder[arch]
        for f in futures:
            self._tell({"event": "compile", "worker": builder[futures[f][1]], "label": "compile"})
        deadline = time.monotonic() + self.limit
        while time.monotonic() < deadline and not all(f.done() for f in futures):
            self._check_cancel(futures)
            try:
                wait(list(futures), timeout=POLL_S)
            except TimeoutError:
                pass
        builds: dict[str, dict] = {}
        for f, (sha, arch) in futures.items():
            if f.status != "finished":
                why = "did not finish" if f.status == "pending" else _first_line(f.exception())
                f.cancel()
                raise KsError(f"compiling on worker {builder[arch]} failed: {why}; nothing recorded")
            built = f.result()
            builds.setdefault(sha, {})[arch] = built
        self.stats.compile_s = round(time.monotonic() - t0, 4)
        return builds

    def _submit(self, client, bundle: dict, job: Job, builds: dict, topic: str, *, loose: bool = True):
        per_arch = builds.get(job.sha, {})
        self.stats.shipped_bytes += sum(len(b.get("library") or b"") for b in per_arch.values()
                                        if self.identities.get(job.worker, {}).get("arch") == b.get("arch"))
        job.submitted, job.started = time.monotonic(), None
        key = f"ks-job-{self.token}-{job.key}" + ("-rerun" if job.retried else "")
        return client.submit(wk.run_job, bundle, job.source, per_arch, job.ids, self.options, topic, job.key,
                             key=key, workers=[job.worker], allow_other_workers=loose, pure=False)

    def _watch(self, client, bundle: dict, jobs: list[Job], builds: dict, topic: str) -> dict[str, dict]:
        from distributed import wait

        futures = {}
        queued: dict[str, int] = {}
        for job in jobs:
            f = self._submit(client, bundle, job, builds, topic)
            # a job queued behind others on its worker may start late: its clock starts then
            job.deadline_slots = queued.get(job.worker, 0) + 1
            queued[job.worker] = job.deadline_slots
            futures[f] = job
        results: dict[str, dict] = {}
        while futures:
            self._check_cancel(futures)
            try:
                done, _ = wait(list(futures), timeout=POLL_S, return_when="FIRST_COMPLETED")
            except TimeoutError:
                done = set()
            for f in done:
                job = futures.pop(f)
                if f.status == "finished":
                    results[job.key] = f.result()
                    self.finished.add(job.key)
                    continue
                self._cancel(futures)
                raise self._failure(job, f)
            now = time.monotonic()
            for f, job in list(futures.items()):
                due = (job.started + self.limit) if job.started is not None else \
                    (job.submitted + self.limit * job.deadline_slots)
                if now > due:
                    futures.pop(f)
                    try:
                        futures[self._rerun(client, bundle, f, job, builds, topic)] = job
                    except KsError:
                        self._cancel(futures)
                        raise
        return results

    def _check_cancel(self, futures) -> None:
        if self.cancel is not None and self.cancel.is_set():
            self._cancel(futures)
            raise Cancelled()

    def _cancel(self, futures) -> None:
        for f in futures:
            try:
                f.cancel()
            except Exception:
                pass

    def _failure(self, job: Job, future) -> KsError:
        try:
            exc = future.exception(timeout=5)
        except Exception as e:  # the scheduler itself is gone
            return KsError(f"lost the cluster while running {job.label}: {_first_line(e)}; nothing recorded")
        if isinstance(exc, KsError):  # the harness's own bad-input error, raised on the worker
            return KsError(exc.message, hint=exc.hint)
        name = type(exc).__name__
        if name == "KilledWorker":
            last = getattr(getattr(exc, "last_worker", None), "address", None) or job.ran_on or job.worker
            return KsError(f"every worker that ran {job.label} died, the last {last}; nothing recorded")
        where = job.ran_on or job.worker
        return KsError(f"{job.label} failed on worker {where}: {name}: {_first_line(exc)}; nothing recorded")

    def _rerun(self, client, bundle, future, job: Job, builds: dict, topic: str):
        """The job's worker did not bring it back in time: run it once more on another worker."""
        bad = job.ran_on or job.worker
        self.hung.add(bad)
        if job.retried:
            raise KsError(f"worker {bad} did not finish {job.label} within {self.limit:g}s; nothing recorded")
        try:
            live = [w for w in self.cl.workers() if w not in self.hung and w in self.identities]
        except Exception:
            live = []
        if not live:
            raise KsError(f"worker {bad} did not finish {job.label} within {self.limit:g}s and no other worker "
                          "is left to run it; nothing recorded")
        try:
            future.cancel()
        except Exception:
            pass
        busy = {j.worker for j in self._jobs.values() if j is not job and j.key not in self.finished}
        job.worker = next((w for w in live if w not in busy), live[0])
        job.retried = True
        job.deadline_slots = 1 if job.worker not in busy else 2  # queued behind a running job
        self.stats.reruns.append({"job": job.label, "from": bad, "to": job.worker, "why": "no answer in time"})
        self._tell({"event": "rerun", "job": job.key, "label": job.label, "worker": job.worker, "from": bad})
        return self._submit(client, bundle, job, builds, topic, loose=False)
