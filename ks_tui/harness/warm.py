"""A pre-started harness child for long-lived callers (the engine behind the TUI and headless runs, `ks mcp`).

Starting the child costs its Python start-up and the torch import (seconds with CUDA), every run. A caller
that runs the harness again and again owns a `WarmPool`: right after a run ends it starts the NEXT child,
which loads the task, imports torch and numpy, and then blocks reading one JSON job (the `run` arguments)
from its stdin. The next run_harness(..., pool=pool) whose key matches hands the job to that child instead
of spawning a cold one.

Where kernels run sandboxed (harness/sandbox.py), the child is started inside the same sandbox, with a scratch
folder of its own that the run then uses (its result file, TMPDIR); under bubblewrap it serves only kernels whose
source lies in the task's workspace, the part of the file system it was given.

Crash isolation is as without the pool: each child serves exactly one run and is never reused; a crashed,
hung, killed or cancelled child is handled by run_harness as a cold one would be. The pool holds at most one
idle child, kills it when the key no longer matches, on close(), and at interpreter exit; a child whose parent
dies sees its stdin end and exits (or kills its group once it has a job, as --die-with-parent does).

One-shot commands (`ks check`, `ks bench`) exit right after their run: their pool lives in a server process that
outlives them (harness/standby.py).
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass
from pathlib import Path

from ks_tui.harness.leftovers import MARK_VARIABLE, end_leftovers


def enabled() -> bool:
    return os.environ.get("KS_WARM_HARNESS", "1").strip().lower() not in ("0", "no", "false", "off")


def pool_key(task_dir: Path, env: dict[str, str], box_mode: str = "none") -> tuple:
    """What a pre-started child was made for: the interpreter, the task folder, the environment (the run's
    own mark aside), the sandbox. A child started under another KS_THREADS, cache folder, PATH or sandbox is
    not used."""
    return (sys.executable, str(Path(task_dir).resolve()),
            tuple(sorted((k, v) for k, v in env.items() if k != MARK_VARIABLE)), box_mode)


@dataclass
class WarmChild:
    proc: subprocess.Popen
    mark: str
    key: tuple
    spawned: float  # time.time() of the spawn
    sandbox: object = None      # harness.sandbox.Sandbox it runs in (None: none)
    scratch: Path | None = None  # a sandboxed child's own scratch folder: the run's result and TMPDIR go there
    roots: tuple = ()           # under bubblewrap, the folders it can read: a source elsewhere runs cold

    def alive(self) -> bool:
        return self.proc.poll() is None

    def can_read(self, source: Path) -> bool:
        if getattr(self.sandbox, "mode", "none") != "bwrap":
            return True
        src = Path(source).resolve()
        return any(src == r or r in src.parents for r in self.roots)

    def hand(self, job: list[str]) -> None:
        """Give the child its one job; stdin then stays open (and unwritten) as the parent-alive pipe."""
        self.proc.stdin.write((json.dumps(job) + "\n").encode())
        self.proc.stdin.flush()

    def kill(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        end_leftovers(self.proc.pid, self.mark)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.remove_scratch()

    def remove_scratch(self) -> None:
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
        release = getattr(self.proc, "release", None)  # a standby server's child (harness/standby.py)
        if release is not None:
            release()


_POOLS: "weakref.WeakSet[WarmPool]" = weakref.WeakSet()


class WarmPool:
    """At most one pre-started harness child. Thread-safe; close() when done (also run at exit)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._child: WarmChild | None = None
        self._closed = False
        _POOLS.add(self)

    def take(self, key: tuple) -> WarmChild | None:
        """The idle child when it is alive and was made for KEY (the caller now owns it); else None, and a
        child made for another key is killed."""
        with self._lock:
            child, self._child = self._child, None
        if child is None:
            return None
        if child.key == key and child.alive():
            return child
        child.kill()
        return None

    def prestart(self, task_dir: Path, env: dict[str, str], mark: str, box=None) -> None:
        """Start the next child for task_dir under env (which carries the run mark `mark`) inside `box` (a
        harness.sandbox.Sandbox, or None), replacing any idle one. Failing to start is not an error: the
        next run starts cold."""
        from ks_tui.harness import sandbox
        from ks_tui.harness.build import cache_root

        task_dir = Path(task_dir).resolve()
        mode = box.mode if box is not None else "none"
        key = pool_key(task_dir, env, mode)
        cmd = [sys.executable, "-m", "ks_tui.harness", "warm", "--task", str(task_dir)]
        scratch, roots = None, ()
        if box is not None and box.active:
            scratch = Path(tempfile.mkdtemp(prefix="ks-harness-"))
            (scratch / "tmp").mkdir()
            env = dict(env, TMPDIR=str(scratch / "tmp"))
            env.setdefault("KS_CACHE_DIR", str(cache_root()))
            roots = (task_dir, task_dir.parent.parent)  # the task and its workspace
            cmd = sandbox.wrap(cmd, box, scratch=scratch, writable=[cache_root()], readable=list(roots))
        try:
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    start_new_session=True, env=env)
        except OSError:
            if scratch is not None:
                shutil.rmtree(scratch, ignore_errors=True)
            return
        child = WarmChild(proc, mark, key, time.time(), box, scratch, roots)
        with self._lock:
            old, self._child = self._child, child
            closed = self._closed
        if old is not None:
            old.kill()
        if closed:  # closed while starting: leave nothing behind
            with self._lock:
                self._child = None
            child.kill()

    def prime(self, task_dir: Path, box=None) -> None:
        """Start the next child for task_dir under this process's environment, as run_harness would run it
        (inside `box`, the sandbox runs get; by default the one in force here)."""
        from ks_tui.harness import sandbox
        from ks_tui.harness.client import child_env
        from ks_tui.harness.leftovers import new_mark

        if box is None:
            try:
                box = sandbox.current()
            except Exception:  # KS_SANDBOX asks for a mode this machine lacks: the run will say so
                return
        mark = new_mark()
        self.prestart(task_dir, child_env(mark), mark, box)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            child, self._child = self._child, None
        if child is not None:
            child.kill()

    def drop_dead(self) -> str | None:
        """Forget an idle child that died without a job: the end of what it printed (None when there was none)."""
        with self._lock:
            child = self._child
            if child is None or child.alive():
                return None
            self._child = None
        said = b""
        if child.proc.stdout is not None:
            os.set_blocking(child.proc.stdout.fileno(), False)  # something it started may hold the pipe open
            try:
                said = child.proc.stdout.read() or b""
            except OSError:
                pass
        child.kill()
        return f"exit code {child.proc.returncode}: " + said.decode("utf-8", "replace")[-2000:]

    @property
    def idle_pid(self) -> int | None:
        with self._lock:
            return self._child.proc.pid if self._child is not None else None


@atexit.register
def _close_all() -> None:
    for pool in list(_POOLS):
        pool.close()


# ------------------------------------------------------------------ the child side

def serve(task: str, started_at: float, run_main) -> int:
    """`python -m ks_tui.harness warm --task DIR`: load what every run loads, then wait for one job, which
    run_main (the entry's main) runs as `python -m ks_tui.harness run ...` would. A GPU task's libraries make their
    first calls on the quick scenarios while it waits (`_prewarm`)."""
    t0 = time.time()
    task_dir = Path(task).resolve()
    loaded = None
    try:
        from ks_tui.harness.runner import thread_count
        from ks_tui.task import load_task

        loaded = load_task(task_dir, task_dir.parent.parent)
        if loaded.device == "cpu":
            # As the runner does, before torch's OpenMP starts: the kernel and torch get the same count.
            os.environ["OMP_NUM_THREADS"] = str(thread_count(loaded))
        import numpy  # noqa: F401
        import torch  # noqa: F401

        import ks_tui.harness.correctness  # noqa: F401
        import ks_tui.harness.timing  # noqa: F401
    except Exception:
        pass  # the job, run as usual, reports whatever is wrong
    ready = time.time()
    job = _JobLine()
    pre = _prewarm(loaded, job) if loaded is not None else {}
    line = job.wait()  # the parent's end (EOF) before a job: nothing to do
    if not line.strip():
        return 0
    try:
        argv = json.loads(line)
    except ValueError:
        return 2
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv) or argv[:1] != ["run"]:
        return 2
    got = job.at
    warm = {"started_at": got, "warm_start": True, "warm_pid": os.getpid(),
            "warm_preload_s": round(ready - t0, 4), "warm_idle_s": round(got - ready, 4),
            "warm_process_start_s": round(t0 - started_at, 4), **pre}
    return run_main(argv, warm=warm)


class _JobLine:
    """The parent's one line (the job), read on a thread, so this one can warm the libraries up meanwhile."""

    def __init__(self) -> None:
        self.line, self.at = b"", 0.0
        self._got = threading.Event()
        threading.Thread(target=self._read, name="ks-warm-job", daemon=True).start()

    def _read(self) -> None:
        try:
            self.line = sys.stdin.buffer.readline()
        finally:
            self.at = time.time()
            self._got.set()

    def arrived(self) -> bool:
        return self._got.is_set()

    def wait(self) -> bytes:
        self._got.wait()
        return self.line


# nvidia-smi's utilization covers up to the last second: the run's "GPU busy before this run" reading must not
# see the warm-up's own last calls.
_QUIET_BEFORE_RUN_S = 1.0


def _prewarm(task, job: _JobLine) -> dict:
    """While no job has come: the libraries' first calls on the task's quick scenarios (FA3 loading its kernels,
    cuDNN's plans, harness/warmup.py), on this thread, which will run the job and time them. Stops at the job's
    arrival (the call in progress finishes), then keeps the GPU quiet for a second before the run reads its
    utilization. Only for GPU tasks with baselines; KS_BASELINE_WARMUP=0 turns it off."""
    from ks_tui.harness import warmup

    if task.device != "cuda" or not task.baselines or not warmup.enabled():
        return {}
    try:
        import torch

        from ks_tui.harness.runner import _draw_seed, load_reference

        if not torch.cuda.is_available():
            return {}
    except Exception:
        return {}

    class _Imported:  # warmup wants the runner's background import; torch is here already
        @staticmethod
        def result():
            return torch

    t0 = time.monotonic()
    pre = warmup.LibraryWarmup(_Imported, load_reference, task, task.select(quick=True, ids=None), 0, _draw_seed)
    pre.run_here(until=job.arrived)
    pre.stop("the job came")
    if not job.arrived():  # it may wait long (a standby server's child): the warm-up's memory goes back
        torch.cuda.empty_cache()
    quiet = _QUIET_BEFORE_RUN_S - (time.monotonic() - pre.last_call_end) if pre.last_call_end else 0.0
    if job.arrived() and quiet > 0:
        time.sleep(quiet)
    t = pre.timings()
    return {"warm_prewarm_calls": t["warmup_calls"], "warm_prewarm_s": round(time.monotonic() - t0, 4),
            "warm_prewarm_stop": t["warmup_stop"]}
