"""What runs on a Dask worker: who it is, compiling a kernel once, and running one job.

These functions are shipped by reference (the worker imports ks_tui), take plain data (task
files and kernel source as bytes, so a worker on another host needs no shared folder), and
run the harness as its usual child process. Dask is imported only inside them.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import socket
import tempfile
import time
from pathlib import Path

from ks_tui.harness import build as build_mod

MAX_TASK_FILE = 4 << 20  # a task's own files are small; a big one (a results dump) does not travel


TASK_SUFFIXES = (".py", ".yaml", ".yml", ".json")  # the task's code and data; notes and logs stay home


def task_bundle(task) -> dict:
    """The task folder's files a harness child needs, as bytes: task.yaml, the kernel, the
    reference, the files task.yaml names as read-only, and the folder's other top-level code."""
    files: dict[str, bytes] = {}
    wanted = [task.yaml_path, task.kernel, task.reference, *[p for p in task.readonly if p.is_file()]]
    wanted += [p for p in sorted(task.dir.iterdir()) if p.is_file() and p.suffix in TASK_SUFFIXES
               and not p.name.startswith(".")]
    for p in wanted:
        try:
            rel = p.resolve().relative_to(task.dir.resolve()).as_posix()
        except ValueError:
            continue
        if p.stat().st_size <= MAX_TASK_FILE:
            files[rel] = p.read_bytes()
    return {"name": task.name, "files": files, "kernel": task.kernel.name, "device": task.device,
            "language": task.language, "compiler": task.build.compiler, "flags": list(task.build.flags),
            "arch": task.build.arch}


def _cpu_identity() -> str:
    """The CPU a -march=native build is made for: model name and feature flags."""
    model, flags = "", ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and not model:
                model = value.strip()
            elif key.strip() == "flags" and not flags:
                flags = value.strip()
    except OSError:
        pass
    return f"{platform.machine()} {model} " + hashlib.sha256(flags.encode()).hexdigest()[:12]


def architecture(bundle: dict) -> str:
    """Workers with equal architecture strings can load one another's library: for CUDA the task
    fixes the target (sm_90a), for the CPU the library is built for this host's CPU."""
    if bundle["language"] == "cuda":
        return f"cuda {bundle['arch'] or 'sm_90a'}"
    toolchain = hashlib.sha256(build_mod.compiler_version(bundle["compiler"]).encode()).hexdigest()[:12]
    return f"cpu {_cpu_identity()} {toolchain}"


def identity(bundle: dict, dask_worker=None) -> dict:
    """This worker as the client plans with it (run through Client.run on every worker)."""
    return {"arch": architecture(bundle), "host": socket.gethostname(), "pid": os.getpid(),
            "compiler": bool(shutil.which(bundle["compiler"])),
            "gpu": os.environ.get("CUDA_VISIBLE_DEVICES")}


def _write_task(bundle: dict, root: Path):
    from ks_tui.task import load_task

    task_dir = root / "kernels" / bundle["name"]
    for rel, data in bundle["files"].items():
        path = task_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return load_task(task_dir, root)


def _source_file(root: Path, bundle: dict, source: bytes) -> Path:
    path = root / "source" / bundle["kernel"]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(source)
    return path


def compile_source(bundle: dict, source: bytes) -> dict:
    """Compile once here; the record and the library's bytes go to the other workers."""
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="ks-compile-") as tmp:
        task = _write_task(bundle, Path(tmp))
        src = _source_file(Path(tmp), bundle, source)
        record, lib = build_mod.build(src, language=task.language, compiler=task.build.compiler,
                                      flags=task.build.flags, arch=task.build.arch, shown_name=task.kernel.name,
                                      timeout=task.timeout_s)
        data = lib.read_bytes() if lib is not None else None
    return {"arch": architecture(bundle), "record": record, "library": data,
            "seconds": round(time.monotonic() - t0, 4), "worker": _address()}


def install(bundle: dict, source: bytes, builds: dict) -> int:
    """Put the library built for this worker's architecture into this machine's build cache,
    where the harness child finds it as a cached build. The bytes installed (0: none fitted,
    or it was there already; the child then compiles as usual)."""
    built = builds.get(architecture(bundle))
    if not built or not built.get("library") or not built["record"].get("ok"):
        return 0
    _, _, _, key = build_mod.build_plan(source, language=bundle["language"], compiler=bundle["compiler"],
                                        flags=bundle["flags"], arch=bundle["arch"], shown_name=bundle["kernel"])
    entry = build_mod.cache_entry(key)
    if (entry / "compile.json").is_file() and (entry / "kernel.so").is_file():
        return 0
    entry.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="build-", dir=entry.parent))
    try:
        (scratch / "kernel.so").write_bytes(built["library"])
        (scratch / "compile.json").write_text(json.dumps(built["record"]))
        try:
            os.replace(scratch, entry)  # atomic, as the harness publishes its own builds
        except OSError:
            return 0  # another worker of this machine put it there first
        return len(built["library"])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _address() -> str:
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):
        return ""


def run_job(bundle: dict, source: bytes, builds: dict, ids: list[str] | None, options: dict,
            topic: str, job: str) -> dict:
    """One harness run on this worker: its result dict, with where and how it ran."""
    from distributed import get_worker

    from ks_tui.harness.client import run_harness

    worker = get_worker()
    address = worker.address
    started = time.time()

    def tell(msg: dict) -> None:
        try:
            worker.log_event(topic, {"job": job, "worker": address, **msg})
        except Exception:  # progress must never fail a run
            pass

    tell({"event": "start"})
    with tempfile.TemporaryDirectory(prefix="ks-job-") as tmp:
        root = Path(tmp)
        task = _write_task(bundle, root)
        src = _source_file(root, bundle, source)
        t0 = time.monotonic()
        shipped = install(bundle, source, builds)
        install_s = time.monotonic() - t0
        last: dict = {}

        def progress(p: dict) -> None:
            # One event per scenario and phase, not per line the child prints.
            step = (p.get("phase"), p.get("scenario"))
            if step != last.get("step"):
                last["step"] = step
                tell({"event": "progress", **{k: p.get(k) for k in ("done", "total", "scenario", "phase")}})

        result = run_harness(task, src, mode=options["mode"], quick=options["quick"], scenarios=ids,
                             timeout=options["timeout"], seed=options["seed"], on_progress=progress,
                             cached_baselines=options["cached_baselines"])
    result["worker"] = address
    result["cluster_job"] = {"job": job, "worker": address, "host": socket.gethostname(),
                             "gpu": os.environ.get("CUDA_VISIBLE_DEVICES"), "started_at": started,
                             "shipped_bytes": shipped, "install_s": round(install_s, 4),
                             "wall_s": round(time.time() - started, 4)}
    tell({"event": "done", "status": result.get("status")})
    return result
