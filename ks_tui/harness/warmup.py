"""The libraries' first calls, made while the kernel compiles and is checked (child process, GPU benches).

The runner uses it for GPU benches only (on the CPU first calls are cheap, and the cores belong to the check).
A library's first call in a process costs far more than the calls the bench times: FA3 loads its kernels
(~4 s on an H100), cuDNN builds a plan for every new shape (0.1-0.45 s each, tens of seconds over a big grid).
The bench used to pay all of it between its timed blocks. Here each baseline is called once per scenario, in
the bench's order, each group of baselines on a CUDA stream of its own: the first group on the thread that will
time them (torch keeps cuDNN's plans per thread), while the check runs on another (`run_here`), the other groups
on threads of their own from the moment torch is imported. The bench stops them before its first timed block
(the call in progress finishes: nothing of this runs beside a timed call) and makes whatever first calls are
left itself, as before. (FA3's load stalls the GPU work beside it: on an H100 a quick check took 1.7 s without it,
5.4-6.4 s beside it; it pays off during a compile and in an idle pre-started child.)

Only the libraries' state is kept (loaded modules, plans); every output is thrown away, nothing here is timed
or judged, and a failure is only recorded (the bench meets it again and reports it as always). Baselines in one
of the reference's `BASELINE_GROUPS` share a thread (torch's SDPA backends switch on a process-wide flag), the
others get one each; a reference without that list gets one group for all its baselines. KS_BASELINE_WARMUP=0
turns it off.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time

from ks_tui.harness.reference_api import Unavailable

# Draw number of the throw-away inputs: a seed of its own, never one the check or the bench uses.
WARMUP_DRAW = 900


def enabled() -> bool:
    return os.environ.get("KS_BASELINE_WARMUP", "1").strip().lower() not in ("0", "no", "false", "off")


def groups(names: list[str], declared) -> list[list[str]]:
    """The threads' baseline lists. Without declared groups, one for all (nothing is known about shared state);
    with them, one per group (its names in `names`) and one for each baseline in no group."""
    if not declared:
        return [list(names)] if names else []
    out, placed = [], set()
    for group in declared:
        mine = [n for n in names if n in group and n not in placed]
        placed.update(mine)
        if mine:
            out.append(mine)
    return out + [[n] for n in names if n not in placed]


class LibraryWarmup:
    """Start with the runner's pieces; stop() at the bench's start; cancel() when no bench follows."""

    def __init__(self, torch_import, load_reference, task, scenarios, seed: int, draw_seed, not_before=None):
        """not_before: a runner._Background to wait for first (the GPU's utilization read before this process
        uses it: work of ours then would read as another process's)."""
        self.task, self.scenarios, self.seed = task, list(scenarios), seed
        self._not_before = not_before
        self._torch_import, self._load_reference, self._draw_seed = torch_import, load_reference, draw_seed
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.calls, self.failed, self.wait_s = 0, 0, 0.0
        self.seconds: dict[str, float] = {}   # per thread: its wall time
        self.stopped_by = ""
        self.last_call_end = 0.0  # time.monotonic() when the last call's GPU work was done
        self._finished = 0  # threads that went through every scenario
        self._threads: list[threading.Thread] = []
        self._ready = threading.Event()  # set once the starter knows the groups
        self._here = None  # (torch, reference, first group): for run_here
        self._groups = 0  # how many groups there are
        self._next: dict[str, int] = {}  # per group: the scenario it goes on with (run_here may be called again)
        self._starter = threading.Thread(target=self._start, name="ks-warmup", daemon=True)
        self._starter.start()

    # ---------------------------------------------------------------- the threads

    def _start(self) -> None:
        try:
            torch = self._torch_import.result()
            ref = self._load_reference(self.task)
        except BaseException as e:  # the runner meets the same failure and reports it
            self.stopped_by = f"{type(e).__name__}: {e}"[:200]
            self._ready.set()
            return
        if self._not_before is not None:
            with contextlib.suppress(BaseException):  # its failure is the runner's to report
                self._not_before.result()
        factories = getattr(ref, "BASELINES", None) or {}
        names = [n for n in self.task.baselines if n in factories]
        found = groups(names, getattr(ref, "BASELINE_GROUPS", None))
        self._here = (torch, ref, found[0]) if found else None
        self._groups = len(found)
        self._ready.set()
        for group in found[1:]:
            t = threading.Thread(target=self._work, args=(torch, ref, group), name=f"ks-warmup-{group[0]}",
                                 daemon=True)
            with self._lock:
                if self._stop.is_set():
                    return
                self._threads.append(t)
            t.start()

    def run_here(self, until) -> None:
        """Warm the first group up on the calling thread (the one that will time the baselines: torch keeps
        cuDNN's plans per thread) until `until()` is true, the group is done, or stop()/cancel()."""
        while not self._ready.wait(0.05):  # torch is still being imported
            if until is not None and until():
                return
        if self._here is not None and not self._stop.is_set():
            self._work(*self._here, until=until)

    def _work(self, torch, ref, group: list[str], until=None) -> None:
        t0 = time.monotonic()

        def over() -> bool:
            return self._stop.is_set() or (until is not None and until())

        key = "+".join(group)
        device = self.task.device
        first = self._next.get(key, 0)
        if first >= len(self.scenarios):
            return
        try:
            stream = torch.cuda.Stream() if device == "cuda" else None
            with torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext():
                for i in range(first, len(self.scenarios)):
                    sc = self.scenarios[i]
                    if over():
                        return
                    gen = torch.Generator(device=device)
                    gen.manual_seed(self._draw_seed(self.seed, sc.id, WARMUP_DRAW))
                    inputs = ref.make_inputs(sc.params, gen, device)
                    for name in group:
                        if over():
                            return
                        try:
                            ref.BASELINES[name](inputs, sc.params)()
                            if stream is not None:
                                stream.synchronize()
                            with self._lock:
                                self.calls += 1
                                self.last_call_end = time.monotonic()
                        except Unavailable:
                            pass  # the bench records why
                        except Exception as e:
                            with self._lock:
                                self.failed += 1
                            if "CUDA" in str(e):  # the context is broken (the kernel's doing): stop for good
                                self.stopped_by = f"{name}: {type(e).__name__}: {e}"[:200]
                                self._next[key] = len(self.scenarios)
                                return
                    del inputs
                    self._next[key] = i + 1
            with self._lock:
                self._finished += 1
        except BaseException as e:
            self.stopped_by = f"{key}: {type(e).__name__}: {e}"[:200]
        finally:
            self.seconds[key] = round(self.seconds.get(key, 0.0) + time.monotonic() - t0, 4)

    # ---------------------------------------------------------------- the runner's side

    def stop(self, reason: str = "bench started") -> None:
        """The bench starts (or the job, in a pre-started child): no more first calls; wait for the ones in progress
        (no GPU work beside the timing)."""
        t0 = time.monotonic()
        self._stop.set()
        self._starter.join()
        with self._lock:
            threads = list(self._threads)
        for t in threads:
            t.join()
        self.wait_s = time.monotonic() - t0
        if not self.stopped_by:
            self.stopped_by = "all done" if self._groups and self._finished == self._groups else reason

    def cancel(self) -> None:
        """No bench follows (a compile error, a failed check): stop at the next call, without waiting."""
        self._stop.set()

    def timings(self) -> dict:
        return {"warmup_s": max(self.seconds.values(), default=0.0), "warmup_wait_s": round(self.wait_s, 4),
                "warmup_calls": self.calls, "warmup_failed": self.failed, "warmup_stop": self.stopped_by}
