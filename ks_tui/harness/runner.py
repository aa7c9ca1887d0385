"""The child process's work: compile, check every scenario, time, re-check, one result.

Runs inside `python -m ks_tui.harness run ...`, never in the UI's process, so a kernel that
segfaults or spins takes only this process down. Progress and partial results go to stderr
as JSON lines so the parent can report what finished before a crash.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import importlib.util
import json
import os
import platform
import random
import sys
import threading
import time
from pathlib import Path

from ks_tui.harness import build as build_mod
from ks_tui.harness import contention, prefetch, sass_later, warmup
from ks_tui.harness.reference_api import Unavailable, check_reference
from ks_tui.harness.result import failure_message, skeleton, summarize


class BadTaskInput(Exception):
    """The task's own files (reference.py) are broken: bad input, not a kernel failure."""


def emit(kind: str, payload) -> None:
    sys.stderr.write(json.dumps({kind: payload}) + "\n")
    sys.stderr.flush()


def thread_count(task) -> int:
    """KS_THREADS (a run-time choice) beats the task's timing.threads, which beats all cores."""
    env = os.environ.get("KS_THREADS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    if task.timing.threads:
        return task.timing.threads
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def load_reference(task):
    spec = importlib.util.spec_from_file_location(f"ks_reference_{task.name}", task.reference)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        raise BadTaskInput(f"{task.reference}: cannot import: {type(e).__name__}: {e}") from None
    problems = check_reference(module, str(task.reference))
    if problems:
        raise BadTaskInput("; ".join(problems))
    known = getattr(module, "BASELINES", None) or {}
    unknown = [b for b in task.baselines if b not in known]
    if unknown:  # a misspelt name would leave the run without a geomean and say nothing
        raise BadTaskInput(f"{task.yaml_path}: baselines: unknown {', '.join(map(repr, unknown))} "
                           f"(the reference provides: {', '.join(sorted(known)) or 'none'})")
    return module


class _Background:
    """fn(*args) on a thread (an import or nvidia-smi: the GIL is free while the compiler runs)."""

    def __init__(self, fn, *args):
        self.value, self.error, self.seconds = None, None, 0.0
        self._thread = threading.Thread(target=self._work, args=(fn, args), daemon=True)
        self._thread.start()

    def _work(self, fn, args) -> None:
        t0 = time.monotonic()
        try:
            self.value = fn(*args)
        except BaseException as e:  # re-raised on the main thread
            self.error = e
        self.seconds = time.monotonic() - t0

    def done(self) -> bool:
        return not self._thread.is_alive()

    def result(self):
        self._thread.join()
        if self.error is not None:
            raise self.error
        return self.value


def _draw_seed(seed: int, scenario_id: str, draw: int) -> int:
    # Keyed by the scenario's id, not its position in this run's selection, so `--seed N`
    # with `--scenarios ID` reproduces exactly the inputs that ID got in the full run.
    digest = hashlib.blake2b(f"{seed}:{scenario_id}:{draw}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 2


class Runner:
    def __init__(self, task, source: Path, mode: str, quick: bool, scenario_ids, seed: int | None,
                 cached_baselines: bool = False):
        self.task, self.source, self.mode = task, Path(source), mode
        self.scenarios = task.select(quick=quick, ids=scenario_ids)
        self.seed = seed if seed is not None else random.SystemRandom().randrange(1 << 31)
        self.cached_baselines = cached_baselines
        self.result = skeleton(task, self.source, mode, quick, self.seed, scenario_ids)
        self.timings = self.result["timings"]
        self.at: dict = {}  # the last progress sent: where an exception (e.g. a CUDA fault) hit
        self._kernel_ran = False  # after the first call, a CUDA error may be the kernel's doing
        self._phase = "check"     # which timings the kernel calls and references count into (_spent)
        self.gpu_before = None  # nvidia-smi's reading at the start (GPU bench runs), on a thread
        self._sass_job = None  # the build's SASS summary, made on a thread (harness/sass_later.py)
        self._prefetch = None  # references computed while the compiler ran (harness/prefetch.py)
        self._warmup = None  # the libraries' first calls, made during the compile and the check (harness/warmup.py)
        # A bench judges the last draw after timing, in the timed buffers (the re-check): the check takes the others.
        self.check_draws = task.timing.draws - 1 if mode == "bench" else task.timing.draws

    def _progress(self, done: int, scenario: str, phase: str) -> None:
        self.at = {"done": done, "total": len(self.scenarios), "scenario": scenario, "phase": phase}
        emit("progress", self.at)

    # ------------------------------------------------------------ phases

    def run(self) -> dict:
        t_all = time.monotonic()
        try:
            self._run()
        finally:
            if self._warmup is not None:  # no bench came (a failed check, a crash): no more first calls
                self._warmup.cancel()
                self.timings.update(self._warmup.timings())
            if self._sass_job is not None:  # made while the kernel was checked: on the record before it is written
                self._sass_job.finish(self.timings)
            self.timings["total_s"] = round(time.monotonic() - t_all, 4)
        return self.result

    def _run(self) -> None:
        task, res = self.task, self.result
        threads = thread_count(task)
        if task.device == "cpu":
            # Same thread count for the kernel's OpenMP and torch's baseline; set before either loads.
            os.environ["OMP_NUM_THREADS"] = str(threads)
        torch_import = _Background(importlib.import_module, "torch")  # ~1 s, overlapped with the compiler
        # The GPU's utilization before this process touches it: any is another process's work.
        if task.device == "cuda" and self.mode == "bench":
            self.gpu_before = _Background(contention.gpu_utilization)
        if prefetch.enabled():
            self._prefetch = prefetch.RefPrefetch(torch_import, load_reference, task, self.scenarios, self.seed,
                                                  _draw_seed, threads if task.device == "cpu" else None,
                                                  draws=self.check_draws)
        if (task.device == "cuda" and self.mode == "bench" and task.baselines and not self.cached_baselines
                and warmup.enabled()):
            self._warmup = warmup.LibraryWarmup(torch_import, load_reference, task, self.scenarios, self.seed,
                                                _draw_seed, not_before=self.gpu_before)
        self._progress(0, "", "compile")
        t0 = time.monotonic()

        def build():
            return build_mod.build(
                self.source, language=task.language, compiler=task.build.compiler, flags=task.build.flags,
                arch=task.build.arch, shown_name=task.kernel.name, timeout=task.timeout_s, sass_later=True)

        if self._warmup is not None:  # the compiler runs on a thread; this one, idle otherwise, warms up libraries
            compiling = _Background(build)
            self._warmup.run_here(until=compiling.done)
            record, lib_path = compiling.result()
            self.timings["compile_s"] = round(compiling.seconds, 4)  # the compiler's own time
        else:
            record, lib_path = build()
            self.timings["compile_s"] = round(time.monotonic() - t0, 4)
        if self._prefetch is not None and not prefetch.finish_all():
            # The compiler is done: a cached build ends before torch is imported, and the thread must not start
            # a reference the check would then wait for (joined below, once torch is here).
            self._prefetch.cancel()
        self._sass_job = sass_later.start(record, lib_path)
        res["compile"] = record
        emit("partial", {"compile": record})
        if lib_path is None:
            if self._prefetch is not None:  # not joined: a compile error is reported without waiting for torch
                self._prefetch.cancel()
                self._prefetch = None
            e = record["errors"][0] if record["errors"] else {}
            where = f"{e.get('file')}:{e['line']}: " if e.get("line") else ""
            res["status"], res["message"] = "compile_error", f"{where}{e.get('message', 'compile failed')}"
            return

        t0 = time.monotonic()
        torch = torch_import.result()
        self.timings["import_wait_s"] = round(time.monotonic() - t0, 4)
        if self._prefetch is not None:  # the compiler is done: no more references made ahead
            self._prefetch.stop(finish=prefetch.finish_all())
            self.timings.update(self._prefetch.timings())
        self.torch = torch
        if task.device == "cpu":
            torch.set_num_threads(threads)
            res["threads"] = threads
        t1 = time.monotonic()
        ref = load_reference(task)
        self._describe_device()
        self.timings["import_s"] = round(torch_import.seconds + time.monotonic() - t1, 4)

        try:
            lib = ctypes.CDLL(str(lib_path))
            fn = getattr(lib, task.entry)
        except (OSError, AttributeError) as e:
            res["status"], res["message"] = "compile_error", f"cannot load {task.entry} from the library: {e}"
            return

        # The legacy default stream: torch's own streams are non-blocking, so a kernel that ignored
        # its `stream` argument (a common slip) would run outside the timing events and time as ~0.
        stream = torch.cuda.default_stream() if task.device == "cuda" else None
        self.stream_ptr = stream.cuda_stream if stream is not None else 0
        ctx = torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext()
        with ctx:
            if self._warmup is not None:
                self._check_beside_warmup(ref, fn, stream)
            else:
                self._check_all(ref, fn)
            if all(s["ok"] for s in res["scenarios"]) and self.mode == "bench":
                self._bench_all(ref, fn, stream)
            elif self.mode == "bench":  # not timed: the draws left for after timing are judged here
                self._last_draws(ref, fn)
            if all(s["ok"] for s in res["scenarios"]) and self.mode == "profile":
                self._profile_launch(ref, fn)
        summarize(res)
        res["status"] = "correct" if all(s["ok"] for s in res["scenarios"]) else "incorrect"
        res["message"] = failure_message(res)
        if self.mode == "bench" and res["status"] != "correct" and not any(s["time_ms"] for s in res["scenarios"]):
            res["message"] += " (not timed: timing needs every scenario correct)"

    def _check_beside_warmup(self, ref, fn, stream) -> None:
        """The check on a thread of its own while this one, which will time the libraries, makes their first calls
        (harness/warmup.py): torch keeps cuDNN's plans per thread, so they must be built where the bench runs."""
        def check() -> None:
            with self.torch.cuda.stream(stream):
                self._check_all(ref, fn)

        checker = _Background(check)
        self._warmup.run_here(until=checker.done)
        checker.result()

    def _describe_device(self) -> None:
        torch, res = self.torch, self.result
        res["torch"] = torch.__version__
        res["cuda"] = torch.version.cuda
        if self.task.device == "cuda":
            if not torch.cuda.is_available():
                raise BadTaskInput("this task needs a CUDA device and none is visible")
            res["device"] = torch.cuda.get_device_name()
        else:
            res["device"] = _cpu_name()

    def _sync(self) -> None:
        if self.task.device == "cuda":
            self.torch.cuda.synchronize()

    # ------------------------------------------------------------ correctness

    @contextlib.contextmanager
    def _spent(self, key: str):
        """Add the wall time of the block to timings[key] (seconds, summed over scenarios): where a check
        or a bench spends its time, shown by `ks bench` and kept in the result."""
        t0 = time.monotonic()
        try:
            yield
        finally:
            self.timings[key] = round(self.timings.get(key, 0.0) + time.monotonic() - t0, 4)

    def _new_inputs(self, ref, sc, draw: int) -> dict:
        gen = self.torch.Generator(device=self.task.device)
        gen.manual_seed(_draw_seed(self.seed, sc.id, draw))
        return self._task_code(sc, "make_inputs", ref.make_inputs, sc.params, gen, self.task.device)

    def _task_code(self, sc, name: str, fn, *args):
        """Call the task's own reference code: its failure is bad task input (exit 2, naming the
        file and scenario), not a kernel crash. A CUDA error once the kernel has run is the
        kernel's: it broke the context the reference then used."""
        try:
            return fn(*args)
        except Exception as e:
            if self._kernel_ran and self.task.device == "cuda" and "CUDA" in str(e):
                raise
            raise BadTaskInput(f"{self.task.reference}: {name} failed on scenario {sc.id} "
                               f"({_params_text(sc.params)}): {type(e).__name__}: {e}") from None

    def _call_and_judge(self, ref, fn, inputs: dict, out, p: dict, refs=None) -> dict:
        """Poison the output, call once, and judge; inputs must come back untouched. refs: the references of
        these inputs when already computed (harness/prefetch.py)."""
        torch = self.torch
        before = {k: v.clone() for k, v in inputs.items()}
        out.fill_(float("nan"))
        self._sync()
        self._kernel_ran = True
        with self._spent(f"{self._phase}_kernel_s"):
            rc = ref.call_kernel(fn, inputs, out, p, self.stream_ptr)
            self._sync()
        if rc != 0:
            return {"ok": False, "max_abs": None, "bound": None, "where": "",
                    "what": f"kernel returned {rc} (unsupported shape?)"}
        for name, t in inputs.items():
            if not torch.equal(t, before[name]):
                return {"ok": False, "max_abs": None, "bound": None, "where": name,
                        "what": f"kernel wrote into its input {name!r}"}
        from ks_tui.harness.correctness import judge

        with self._spent(f"{self._phase}_reference_s"):  # the references (unless prefetched) and the rule
            return judge(out, ref, inputs, p, self.task.tolerance, refs)

    def _check_one(self, ref, fn, sc) -> dict:
        entry = {"id": sc.id, "shape": _shape(ref, sc.params), "ok": False, "error": None, "draws": 0,
                 "time_ms": None, "tflops": None, "baseline": None, "baselines": {},
                 "skipped_baselines": {}, "speedup": None}
        self._judge_draws(ref, fn, sc, range(self.check_draws), entry)
        return entry

    def _judge_draws(self, ref, fn, sc, draws: range, entry: dict, buffers: tuple | None = None) -> None:
        """Judge these draws of a scenario into `entry` (ok, the worst verdict, draws judged); the first refills
        `buffers` (inputs, out) when given, else new ones; the rest refill the same buffers (a kernel caching
        results by pointer fails)."""
        p = sc.params
        for draw in draws:
            with self._spent("check_inputs_s" if self._phase == "check" else "bench_inputs_s"):
                fresh = self._new_inputs(ref, sc, draw)
                if buffers is None:
                    buffers = (fresh, self._task_code(sc, "make_output", ref.make_output, p, fresh))
                else:
                    for k, v in fresh.items():
                        buffers[0][k].copy_(v)
                    del fresh
            inputs, out = buffers
            pre = self._prefetch.take(self.torch, sc.id, draw, inputs) if self._prefetch is not None else None
            verdict = self._call_and_judge(ref, fn, inputs, out, p, pre)
            verdict["draw"] = draw
            entry["draws"] += 1
            worst = entry["error"]
            if not verdict["ok"]:
                entry["ok"], entry["error"] = False, verdict
                return
            if worst is None or (verdict["max_abs"] or 0) > (worst["max_abs"] or 0):
                entry["error"] = verdict
            entry["ok"] = True

    def _last_draws(self, ref, fn) -> None:
        """A bench that timed nothing (a scenario failed its check): the scenarios that passed are judged on the
        draws that were left for after timing, so every `ok` still means every draw (a second pass of the check: its
        seconds count as the check's; its progress shows as "recheck", so the check's count does not go back)."""
        t0 = time.monotonic()
        n = len(self.scenarios)
        for i, (sc, entry) in enumerate(zip(self.scenarios, self.result["scenarios"])):
            if entry["ok"]:
                self._progress(i, sc.id, "recheck")
                self._judge_draws(ref, fn, sc, range(self.check_draws, self.task.timing.draws), entry)
                emit("partial", {"scenario": entry})
        self._progress(n, "", "recheck")
        self.timings["check_s"] = round(self.timings.get("check_s", 0.0) + time.monotonic() - t0, 4)

    def _check_all(self, ref, fn) -> None:
        self._phase = "check"
        t0 = time.monotonic()
        n = len(self.scenarios)
        for i, sc in enumerate(self.scenarios):
            self._progress(i, sc.id, "check")
            entry = self._check_one(ref, fn, sc)
            self.result["scenarios"].append(entry)
            emit("partial", {"scenario": entry})
        self._progress(n, "", "check")
        self.timings["check_s"] = round(time.monotonic() - t0, 4)
        if self._prefetch is not None:
            self.timings.update(self._prefetch.timings())
            self._prefetch = None  # what was not used is freed

    # ------------------------------------------------------------ timing

    def _bench_all(self, ref, fn, stream) -> None:
        from ks_tui.harness.baseline_cache import BaselineCache
        from ks_tui.harness.timing import GpuTimer

        torch, task = self.torch, self.task
        self._phase = "recheck"  # the kernel calls and references of the re-checks after timing
        t0 = time.monotonic()
        if self._warmup is not None:  # nothing of it may run beside a timed block
            self._warmup.stop()
            self.timings.update(self._warmup.timings())
            self._warmup = None
        gpu = GpuTimer(torch, stream) if task.device == "cuda" else None
        # Baselines are timed afresh, interleaved with the kernel: an H200's clock sinks from
        # 1980 to ~1700 MHz under load, so times from another run carry another clock
        # (cuDNN +12% within one process; ratios from the cache moved 4%). The cache is
        # written always and read only when asked (--cached-baselines: the fastest loop).
        cache = BaselineCache(build_mod.cache_root(), _environment(torch, self.result)) if gpu else None
        n = len(self.scenarios)
        light = self._light(ref)
        clock = self._clock_recorder() if gpu else None
        cpu_before = contention.cpu_snapshot()
        if clock is not None:
            clock.start()
        for i, (sc, entry) in enumerate(zip(self.scenarios, self.result["scenarios"])):
            self._progress(i, sc.id, "bench")
            t_sc = time.monotonic()
            self._bench_one(ref, fn, sc, entry, gpu, cache)
            entry["family"] = task.family_of(sc)
            if clock is not None and clock.ok:
                entry["clock_mhz"] = clock.window(t_sc, time.monotonic())
            light.judge(sc, entry)
            emit("partial", {"scenario": entry})
        cores = contention.other_cores(cpu_before, contention.cpu_snapshot())
        if clock is not None:
            self.result["clocks"] = clock.stop()
            from ks_tui.harness import clocks
            self.result["warnings"] += clocks.warnings(self.result["clocks"])
        if gpu is not None:
            self.result["l2_persisting"] = gpu.persisting.status()
        light.finish()
        self._progress(n, "", "bench")
        if cache is not None:
            cache.save()
        self.timings["bench_s"] = round(time.monotonic() - t0, 4)
        self._judge_sharing(cores)

    def _light(self, ref):
        """The speed-of-light judge, its peaks measured now when the cache lacks them (harness/sol.py)."""
        from ks_tui.harness.sol import Light, compute_dtype

        t0 = time.monotonic()
        light = Light(self.torch, self.task, ref, self.result, build_mod.cache_root())
        light.ensure_peaks(sorted({compute_dtype(sc.params) for sc in self.scenarios}))
        self.timings["peaks_s"] = round(time.monotonic() - t0, 4)
        return light

    def _clock_recorder(self):
        from ks_tui.harness.clocks import ClockRecorder

        props = self.torch.cuda.get_device_properties(self.torch.cuda.current_device())
        return ClockRecorder(contention.bus_id(props), self.torch.cuda.current_device())

    def _profile_launch(self, ref, fn) -> None:
        """One call of the kernel per scenario between cudaProfilerStart and Stop: what a profiler
        started with `--profile-from-start off` (ncu, harness/profile.py) records, and nothing else."""
        torch = self.torch
        for i, sc in enumerate(self.scenarios):
            self._progress(i, sc.id, "profile")
            inputs, out = self._fresh_set(ref, sc, 700)
            self._sync()
            if self.task.device == "cuda":
                torch.cuda.profiler.start()
            ref.call_kernel(fn, inputs, out, sc.params, self.stream_ptr)
            self._sync()
            if self.task.device == "cuda":
                torch.cuda.profiler.stop()
        self.result["profiled"] = [sc.id for sc in self.scenarios]

    def _judge_sharing(self, cores: float | None) -> None:
        """The result's `sharing` record, and a warning where the timing phase shared the machine."""
        t0 = time.monotonic()
        before = after = None
        if self.gpu_before is not None:
            self._sync()
            idle_since = time.monotonic()  # this run idle for a whole sample period: what is left is not ours
            bus = contention.bus_id(self.torch.cuda.get_device_properties(self.torch.cuda.current_device()))
            before = contention.this_gpu(self.gpu_before.result(), bus)
            after = contention.idle_reading(contention.gpu_utilization, bus, idle_since)
            self.timings["sharing_s"] = round(time.monotonic() - t0, 4)
        cpus = os.cpu_count() or 1
        self.result["sharing"] = {"other_cpu_cores": None if cores is None else round(cores, 2), "cpus": cpus,
                                  "gpu_utilization_before": before, "gpu_utilization_after": after}
        self.result["warnings"] += contention.warnings(cores, cpus, before, after)

    def _baseline_calls(self, ref, name: str, sets: list, p: dict, entry: dict):
        """The timed callables of one baseline (one per input set), tried once; None if skipped."""
        factories = getattr(ref, "BASELINES", {}) or {}
        if name not in factories:
            entry["skipped_baselines"][name] = "not provided by the task's reference.py"
            return None
        try:
            calls = [factories[name](s[0], p) for s in sets]
            calls[0]()
            self._sync()
            return calls
        except Unavailable as e:
            entry["skipped_baselines"][name] = str(e) or "unavailable"
        except Exception as e:  # a library failing must not fail the kernel
            entry["skipped_baselines"][name] = f"{type(e).__name__}: {e}"[:300]
            self._sync_quietly()
        return None

    def _bench_one(self, ref, fn, sc, entry: dict, gpu, cache) -> None:
        from ks_tui.harness.timing import time_cpu

        task, p = self.task, sc.params
        with self._spent("bench_inputs_s"):
            sets = self._input_sets(ref, sc, gpu)
        funcs = {"": [(lambda s=s: ref.call_kernel(fn, s[0], s[1], p, self.stream_ptr)) for s in sets]}
        for name in task.baselines:
            hit = cache.get(name, p) if (self.cached_baselines and cache is not None) else None
            if hit:
                entry["baselines"][name] = hit["median_ms"]
                entry.setdefault("cached_baselines", []).append(name)
                continue
            with self._spent("bench_baseline_setup_s"):  # each library's first call (plans, autotuning)
                calls = self._baseline_calls(ref, name, sets, p, entry)
            if calls is not None:
                funcs[name] = calls
        if gpu is not None:
            spec = task.timing.for_run(self.result["quick"])  # --quick may time with a smaller budget
            with self._spent("bench_timed_s"):
                timed, errors = gpu.time_interleaved(funcs, spec, rounds=spec.rounds, alone=("",))
            if "" in errors:
                raise errors[""]  # the kernel failing while timed is a crash, not a skip
            for name, e in errors.items():  # e.g. out of memory in a library: skip, do not fail
                entry["skipped_baselines"][name] = f"{type(e).__name__}: {e}"[:300]
                self._sync_quietly()
        else:
            with self._spent("bench_timed_s"):
                timed = time_cpu(funcs, task.timing.for_run(self.result["quick"]))
        kt = timed.pop("")
        entry["time_ms"], entry["timing"] = kt["median_ms"], kt
        if "after" in kt:  # taking turns: each function's median by the function that ran just before (the kernel's
            # name is "" inside the timer); one place for all, where a power-state carry-over would show
            named = {"": "kernel"}
            kt["after"] = {named.get(b, b): ms for b, ms in kt["after"].items()}
            kt["baselines_after"] = {name: {named.get(b, b): ms for b, ms in bt.pop("after", {}).items()}
                                     for name, bt in timed.items()}
        from ks_tui.harness.timing import hidden_work_reason

        hidden = hidden_work_reason(kt)
        if hidden:
            entry.setdefault("invalid", []).append(hidden)
        entry["tflops"] = task.flops_of(sc) / (kt["median_ms"] * 1e-3) / 1e12
        for name, bt in timed.items():
            entry["baselines"][name] = bt["median_ms"]
            if cache is not None:
                cache.put(name, p, bt)
        if entry["baselines"]:
            best = min(entry["baselines"], key=entry["baselines"].get)
            entry["baseline"] = {"name": best, "time_ms": entry["baselines"][best]}
            medians = entry["baselines"][best] / entry["time_ms"]
            paired = (kt.get("paired") or {}).get(best)
            if paired:
                # Taking turns, the median of each turn's library/kernel ratio: the two calls of a turn share the
                # machine's state, so its drift cancels. On an H100 two benches of 182 scenarios moved per
                # scenario by p95 1.9% this way against 3.4% with the ratio of the medians, geomeans unbiased.
                entry["speedup"], entry["speedup_of_medians"] = paired, medians
            else:  # no turns (CPU, cached baselines): the ratio of the medians
                entry["speedup"] = medians
        # Re-check after timing: the scenario's last draw, data the kernel has not seen, in the same buffers the
        # timed calls used (a kernel that replays old answers once warmed up fails here).
        self._judge_draws(ref, fn, sc, range(self.check_draws, self.task.timing.draws), entry, sets[0])
        if not entry["ok"]:
            entry["error"]["what"] = "re-check after timing failed: " + entry["error"]["what"]

    def _input_sets(self, ref, sc, gpu) -> list[tuple]:
        inputs, out = self._fresh_set(ref, sc, 500)
        sets = [(inputs, out)]
        if gpu is not None:
            nbytes = sum(t.numel() * t.element_size() for t in inputs.values()) + out.numel() * out.element_size()
            for extra in range(1, gpu.rotation_sets(nbytes)):
                sets.append(self._fresh_set(ref, sc, 500 + extra))
        return sets

    def _fresh_set(self, ref, sc, draw: int) -> tuple:
        inputs = self._new_inputs(ref, sc, draw)
        return inputs, self._task_code(sc, "make_output", ref.make_output, sc.params, inputs)

    def _sync_quietly(self) -> None:
        try:
            self._sync()
        except Exception:
            pass


def _params_text(p: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in p.items())


def _shape(ref, p: dict) -> dict:
    shape_of = getattr(ref, "shape_of", None)
    return shape_of(p) if callable(shape_of) else dict(p)


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _environment(torch, result: dict) -> dict:
    env = {"device": result["device"], "torch": torch.__version__, "cuda": torch.version.cuda,
           "threads": result.get("threads")}
    try:
        env["cudnn"] = torch.backends.cudnn.version() if torch.cuda.is_available() else None
    except Exception:
        env["cudnn"] = None
    # The baseline cache's key: a library upgrade must not reuse another version's timings.
    for mod in ("flash_attn", "flash_attn_interface", "fa3_fwd_interface"):
        try:
            env[mod] = getattr(__import__(mod), "__version__", None) or "importable"
        except Exception:
            env[mod] = None
    return env
