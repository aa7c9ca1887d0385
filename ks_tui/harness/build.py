"""Compile a kernel file to a shared library, with a content-addressed cache.

The cache key is sha256(source + command + compiler version), so a warm re-check of an
unchanged kernel loads the cached library instead of recompiling. The source is compiled
under the task's kernel file name in a scratch folder, so diagnostics read `kernel.cu:12`
whatever path the candidate came from. Standard library only.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from functools import lru_cache
from pathlib import Path

from ks_tui.harness.compiler_output import forbidden_includes, parse_errors, parse_ptxas, summarize_sass

CACHE_VERSION = 2  # bump when the cached record's shape changes (2: kernels' perf_warnings)
DEFAULT_MAX_ENTRIES = 2000  # a few hundred MB of CUDA libraries at most; KS_CACHE_MAX_ENTRIES


def cache_root() -> Path:
    env = os.environ.get("KS_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "ks"


@lru_cache(maxsize=None)
def compiler_version(compiler: str) -> str:
    exe = shutil.which(compiler)
    if exe is None:
        return ""
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    # nvcc's last line names the exact build; g++'s first line does.
    lines = [ln for ln in out.stdout.splitlines() if ln.strip()]
    return f"{exe} | {lines[0] if lines else ''} | {lines[-1] if lines else ''}"


def compile_command(language: str, compiler: str, flags: list[str], arch: str | None,
                    src_name: str, out_name: str) -> list[str]:
    if language == "cuda":
        sm = (arch or "sm_90a").removeprefix("sm_")
        # nvcc's -O is the host code's level only (the device code comes out byte for byte the same at -O0..-O3);
        # the host code is launch glue, and -O1 compiles it in two thirds of -O3's time. A task's own -O wins.
        base = [compiler, f"-gencode=arch=compute_{sm},code=sm_{sm}", "-O1", "-shared",
                "-Xcompiler", "-fPIC", "-Xptxas", "-v"]
        if not any("split-compile" in f for f in flags):
            # One big file with many template instantiations: nvcc's optimizer and ptxas work on
            # them in parallel threads (0 = one per CPU); the machine code is the same.
            base.append(f"-split-compile={os.environ.get('KS_NVCC_SPLIT', '0')}")
    else:
        base = [compiler, "-O3", "-shared", "-fPIC"]
    return [*base, *flags, "-o", out_name, src_name]


def _demangle(names: list[str]) -> dict[str, str]:
    exe = shutil.which("c++filt")
    if not exe or not names:
        return {}
    try:
        out = subprocess.run([exe], input="\n".join(names), capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    return dict(zip(names, out.stdout.splitlines()))


def sass_summary(lib: Path) -> tuple[dict | None, str | None]:
    exe = shutil.which("cuobjdump")
    if exe is None:
        return None, "cuobjdump not found on PATH"
    try:
        out = subprocess.run([exe, "--dump-sass", str(lib)], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"cuobjdump failed: {e}"
    if out.returncode != 0:
        return None, f"cuobjdump exited {out.returncode}: {out.stderr.strip()[-200:]}"
    return summarize_sass(out.stdout), None


def _mtime(p: Path) -> float:
    try:
        return p.stat().st_mtime
    except OSError:
        return 0.0


def _evict(build_dir: Path, keep: Path) -> None:
    """Drop the least recently used builds beyond the limit (never `keep`)."""
    try:
        limit = int(os.environ.get("KS_CACHE_MAX_ENTRIES", DEFAULT_MAX_ENTRIES))
        entries = [p for p in build_dir.glob("??/*") if p.is_dir() and not p.name.startswith("build-")]
    except (OSError, ValueError):
        return
    if len(entries) <= limit:
        return
    for old in sorted(entries, key=_mtime)[: len(entries) - limit]:
        if old != keep:
            shutil.rmtree(old, ignore_errors=True)


def build_plan(src_bytes: bytes, *, language: str, compiler: str, flags: list[str], arch: str | None,
               shown_name: str) -> tuple[str, list[str], str, str]:
    """(file name compiled, command, compiler version, cache key) of one build on this machine."""
    suffix = ".cu" if language == "cuda" else ".cpp"
    name = shown_name if shown_name.endswith(suffix) or language != "cuda" else shown_name + suffix
    cmd = compile_command(language, compiler, flags, arch, name, "kernel.so")
    version = compiler_version(compiler)
    key = hashlib.sha256(b"\0".join([src_bytes, json.dumps(cmd).encode(), version.encode(),
                                     str(CACHE_VERSION).encode()])).hexdigest()
    return name, cmd, version, key


def cache_entry(key: str) -> Path:
    """The folder of one cached build: compile.json and kernel.so."""
    return cache_root() / "build" / key[:2] / key


def build(source: Path, *, language: str, compiler: str, flags: list[str], arch: str | None,
          shown_name: str, timeout: float | None = None, sass_later: bool = False) -> tuple[dict, Path | None]:
    """Compile `source`; returns (the result's `compile` record, the library path or None).

    sass_later: leave a CUDA build's SASS summary pending (harness/sass_later.py makes it)."""
    src_bytes = Path(source).read_bytes()
    name, cmd, version, key = build_plan(src_bytes, language=language, compiler=compiler, flags=flags,
                                         arch=arch, shown_name=shown_name)
    entry = cache_entry(key)
    record_path, lib_path = entry / "compile.json", entry / "kernel.so"

    if record_path.is_file() and lib_path.is_file():
        try:
            record = json.loads(record_path.read_text())
            record.update(cached=True, seconds=0.0)
            os.utime(entry)  # recently used: the last to be evicted
            return record, lib_path
        except (OSError, ValueError):
            pass  # a torn record: rebuild below

    record: dict = {"ok": False, "cached": False, "seconds": 0.0, "command": " ".join(cmd),
                    "log": "", "errors": [], "key": key}
    if language == "cuda":
        record.update(kernels=[], sass=None, sass_reason=None)
    banned = forbidden_includes(src_bytes.decode("utf-8", "replace"), shown_name)
    if banned:
        record["log"] = "\n".join(f"{e['file']}:{e['line']}: error: {e['message']}" for e in banned)
        record["errors"] = banned
        return record, None
    if not version:
        record["log"] = f"compiler {compiler!r} not found on PATH"
        record["errors"] = [{"file": shown_name, "line": None, "column": None, "message": record["log"]}]
        return record, None

    entry.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="build-", dir=entry.parent))
    published = False
    try:
        (scratch / name).write_bytes(src_bytes)
        t0 = time.monotonic()
        try:
            proc = subprocess.run(cmd, cwd=scratch, capture_output=True, text=True, errors="replace",
                                  timeout=timeout)
            log, ok = (proc.stdout + proc.stderr), proc.returncode == 0
        except subprocess.TimeoutExpired as e:
            # On POSIX the partial output comes back as bytes even with text=True.
            partial = e.stderr.decode("utf-8", "replace") if isinstance(e.stderr, bytes) else e.stderr or ""
            log, ok = f"compiler timed out after {timeout:.0f}s\n{partial}", False
        record["seconds"] = round(time.monotonic() - t0, 4)
        record["log"] = log[-20000:]
        record["ok"] = ok
        if not ok:
            record["errors"] = parse_errors(log, shown_name) or [
                {"file": shown_name, "line": None, "column": None,
                 "message": (log.strip().splitlines() or ["compiler failed"])[-1]}]
            return record, None
        if language == "cuda":
            kernels = parse_ptxas(log)
            names = _demangle([k["name"] for k in kernels])
            for k in kernels:
                k["demangled"] = names.get(k["name"], k["name"])
            record["kernels"] = kernels
            if sass_later:
                from ks_tui.harness.sass_later import PENDING

                record["sass_reason"] = PENDING
            else:
                record["sass"], record["sass_reason"] = sass_summary(scratch / "kernel.so")
        (scratch / "compile.json").write_text(json.dumps(record))
        try:
            os.replace(scratch, entry)  # atomic publish
            published = True
        except OSError:
            pass  # an identical build finished first: use its library
        if published:
            _evict(cache_root() / "build", keep=entry)
        return record, lib_path
    finally:
        if not published:
            shutil.rmtree(scratch, ignore_errors=True)
