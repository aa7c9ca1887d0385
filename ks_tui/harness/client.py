"""Parent side: run the harness child, watch it, and always come back with a result dict.

No torch here. The child runs in its own process group so a timeout or a cancel kills the
kernel and anything it spawned; a signal death becomes `crashed` with the stderr tail. At the
end of every run, however it ended, whatever the kernel left running is killed and named in the
result's warnings (harness/leftovers.py).
"""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

from ks_tui.errors import KsError
from ks_tui.harness import sandbox, taskguard
from ks_tui.harness import scratch as scratch_folders
from ks_tui.harness.build import cache_root
from ks_tui.harness.leftovers import end_leftovers, marked_environ, new_mark
from ks_tui.harness.result import skeleton, summarize, where_text
from ks_tui.harness.secret_env import child_environ, redact

TAIL_LINES = 60
LINE_LIMIT = 1 << 20   # a kernel printing without newlines must not grow the parent's memory
TAIL_LINE_CHARS = 2000
POLL_S = 0.05


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


class _StderrReader(threading.Thread):
    """Drains the child's merged stdout/stderr: JSON progress lines vs. everything else."""

    def __init__(self, stream, on_progress):
        super().__init__(daemon=True)
        self.stream, self.on_progress = stream, on_progress
        self.tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
        self.compile: dict | None = None
        self.scenarios: dict[str, dict] = {}
        self.last_progress: dict | None = None
        self.bad_input: str | None = None

    def run(self) -> None:
        for raw in iter(lambda: self.stream.readline(LINE_LIMIT), b""):
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if not self._take(line):
                self.tail.append(line[:TAIL_LINE_CHARS])
        self.stream.close()

    def _take(self, line: str) -> bool:
        """Use one of the harness's JSON lines; False for anything else (kernel output, tracebacks).

        The kernel shares this pipe, so a line only counts when its shape is right: a kernel
        printing `{"partial": 5}` must not kill the thread that drains the pipe.
        """
        if not line.startswith("{"):
            return False
        try:
            msg = json.loads(line)
        except ValueError:
            return False
        if not isinstance(msg, dict):
            return False
        if isinstance(msg.get("progress"), dict):
            self.last_progress = msg["progress"]
            if self.on_progress:
                try:
                    self.on_progress(msg["progress"])
                except Exception:  # a UI callback must not kill the watcher
                    pass
        elif isinstance(msg.get("partial"), dict):
            part = msg["partial"]
            if isinstance(part.get("compile"), dict):
                self.compile = part["compile"]
            elif isinstance(part.get("scenario"), dict) and isinstance(part["scenario"].get("id"), str):
                self.scenarios[part["scenario"]["id"]] = part["scenario"]
            else:
                return False
        elif isinstance(msg.get("bad_input"), str):
            self.bad_input = msg["bad_input"]
        else:
            return False
        return True


def child_command(task, source: Path, mode: str, quick: bool, scenarios, seed, out: Path,
                  cached_baselines: bool, wrapper: list[str] | None = None) -> list[str]:
    # Under a wrapper (ncu, compute-sanitizer) the child's stdin is the wrapper's to pass on or not:
    # no --die-with-parent there; the wrapper's process group is killed all the same.
    cmd = [*(wrapper or []), sys.executable, "-m", "ks_tui.harness", "run", "--task", str(task.dir),
           "--source", str(source), "--mode", mode, "--out", str(out)]
    if not wrapper:
        cmd.append("--die-with-parent")
    if quick:
        cmd.append("--quick")
    if scenarios:
        cmd += ["--scenarios", ",".join(scenarios)]
    if seed is not None:
        cmd += ["--seed", str(seed)]
    if cached_baselines:
        cmd.append("--cached-baselines")
    return cmd


def run_harness(task, source: Path | None = None, *, mode: str = "check", quick: bool = False,
                scenarios: list[str] | None = None, timeout: float | None = None, seed: int | None = None,
                on_progress: Callable[[dict], None] | None = None,
                cancel: threading.Event | None = None, cached_baselines: bool = False,
                wrapper: list[str] | None = None, env: dict | None = None, pool=None) -> dict:
    """Compile, check (and for mode="bench" time) one kernel in a child process.

    `wrapper`: a command the child runs under (ncu, compute-sanitizer), `env`: extra variables for it.
    Kernel failures are statuses in the returned dict; KsError only for bad input. With a
    harness.warm.WarmPool, a pre-started child of the same key serves the run, and the next one is
    started when it ends.
    """
    if mode not in ("check", "bench", "profile"):
        raise KsError(f"mode must be check, bench or profile, not {mode!r}")
    source = Path(source).resolve() if source else task.kernel
    if not source.is_file():
        raise KsError(f"kernel source not found: {source}")
    try:
        with open(source, "rb"):
            pass
    except OSError as e:
        raise KsError(f"cannot read kernel source {source}: {e.strerror or e}") from None
    if scenarios:
        for sid in scenarios:
            task.scenario(sid)  # KsError naming the unknown id
    timeout = float(timeout if timeout is not None else task.timeout_s)
    if not timeout > 0:  # also NaN, which never compares as elapsed
        raise KsError("--timeout must be a positive number of seconds")

    box = sandbox.current()  # KsError when KS_SANDBOX asks for a mode this machine lacks
    guard = taskguard.TaskGuard(taskguard.protected_files(task, source))
    scratch_folders.sweep_once()  # what killed runs left in the temporary folder (a day old)
    with tempfile.TemporaryDirectory(prefix="ks-harness-") as tmp:
        # A profiler or sanitizer run (wrapper) is a person's explicit request and needs the GPU's counters
        # and its own report files: it runs unboxed, with the scrubbed environment all the same.
        used = box if not wrapper else sandbox.Sandbox("none", "a profiler or sanitizer run")
        mark = new_mark()  # inherited by everything the child starts: how leftovers are found at the end
        # An allow-listed environment: the kernel is untrusted code and no credential is in its reach.
        env = dict(child_env(mark), **(env or {}))
        # A pre-started child made for this environment and sandbox; a sandboxed one brings its own scratch folder.
        warm = _take_warm(pool, task, env, used, source) if not wrapper else None
        scratch = warm.scratch if warm is not None and warm.scratch is not None else Path(tmp)
        out = scratch / "result.json"
        cmd = child_command(task, source, mode, quick, scenarios, seed, out, cached_baselines, wrapper)
        if warm is not None and not _hand(warm, cmd):
            warm, scratch = None, Path(tmp)  # it died just now: start cold
            out = scratch / "result.json"
            cmd = child_command(task, source, mode, quick, scenarios, seed, out, cached_baselines, wrapper)
        if warm is None:
            # The child's temporary files go to the run's scratch folder: inside the sandbox nothing else is writable.
            (scratch / "tmp").mkdir()
            cmd = sandbox.wrap(cmd, used, scratch=scratch, writable=[cache_root()],
                               readable=[task.dir, source, Path(task.dir).parent.parent])
        env["TMPDIR"] = str(scratch / "tmp")
        if "KS_CACHE_DIR" not in env:  # the same cache inside the sandbox, whatever HOME/XDG say there
            env["KS_CACHE_DIR"] = str(cache_root())
        spawned = time.time()
        t0 = time.monotonic()
        if warm is not None:  # pre-started under its own mark; it has the job, and holds stdin as below
            proc, mark = warm.proc, warm.mark
        else:
            # stdin: a pipe held open and never written; the child kills itself at its end (--die-with-parent),
            # so a `kill -9` of ks leaves no kernel running on.
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, start_new_session=True, env=env)
        reader = _StderrReader(proc.stdout, on_progress)
        reader.start()
        ended_by = None
        try:
            while proc.poll() is None:
                if cancel is not None and cancel.is_set():
                    ended_by = "cancelled"
                elif time.monotonic() - t0 > timeout:
                    ended_by = "timeout"
                if ended_by:
                    _kill_group(proc)
                    break
                time.sleep(POLL_S)
        except BaseException:  # KeyboardInterrupt in the parent: never leave the child running
            _kill_group(proc)
            try:
                proc.wait(timeout=5)  # reap it: no zombie left behind
                end_leftovers(proc.pid, mark)  # and nothing the kernel started outside its group
            except BaseException:
                pass
            raise
        finally:
            proc.stdin.close()
        code = _child_code(proc.wait(), used if warm is None else (warm.sandbox or sandbox.Sandbox("none", "")))
        wall = time.monotonic() - t0
        left = end_leftovers(proc.pid, mark)  # before the join: a leftover holding the pipe would stall it
        reader.join(timeout=5)
        # the next run's child starts loading (inside the same sandbox) while this result is read
        if pool is not None and not wrapper:
            pool.prime(task.dir, used)

        if reader.bad_input is not None and code == 2 and _said_in(out, reader.bad_input):
            raise KsError(reader.bad_input)
        result, distrust = None, ""
        expected = [s.id for s in task.select(quick=quick, ids=scenarios)]
        if ended_by is None and out.is_file():
            try:
                result = json.loads(out.read_text())
            except ValueError:
                result = None
            distrust = _distrust(result, expected, code, reader)
            if distrust:
                result = None
            else:
                summarize(result, total=len(expected))  # the verdict's numbers from its scenarios, not as written
        if result is None:
            result = _result_without_child(task, source, mode, quick, scenarios, seed, reader,
                                           code, ended_by, timeout, len(expected), distrust)
        if warm is not None:
            warm.remove_scratch()  # its result is read: the pre-started child's own folder goes too

    changed, unrestored = guard.restore()
    if changed:
        names = ", ".join(sorted({_short(f, task) for f in changed}))
        result["status"] = "crashed"
        result["message"] = (f"{taskguard.MESSAGE} ({names}); "
                             + (f"could not restore: {'; '.join(unrestored)}" if unrestored else "restored"))
        result["task_files_modified"] = sorted(str(f) for f in changed)
    tail = "\n".join(reader.tail)
    result["stderr_tail"] = tail[-8000:]
    result["sandbox"] = used.mode
    lost = getattr(proc, "lost", "")  # a standby server's child whose server died (harness/standby.py)
    if lost:
        result.setdefault("warnings", []).append(f"{lost}: the harness child's exit status is unknown")
    if left:
        result.setdefault("warnings", []).append(
            f"the kernel left {len(left)} process(es) running after the harness child ended "
            f"(pid {', '.join(map(str, left))}); killed")
    timings = result.setdefault("timings", {})
    started = timings.pop("started_at", None)
    if started:
        timings["startup_s"] = round(max(0.0, started - spawned), 4)
    timings["wall_s"] = round(wall, 4)
    if "total_s" in timings:  # what no phase accounts for: interpreter exit, pipes, JSON
        inside = sum(timings.get(k, 0.0) for k in ("startup_s", "setup_s", "total_s"))
        timings["other_s"] = round(max(0.0, wall - inside), 4)
    return redact(result)  # a kernel that printed a credential it found anyway: not into any record


def _child_code(code: int, box) -> int:
    """The harness child's exit status as subprocess gives it for a direct child: bubblewrap and unshare
    report a child killed by signal N as exit code 128 + N."""
    if box.active and 128 < code < 128 + 65:
        return -(code - 128)
    return code


def _short(path: Path, task) -> str:
    try:
        return str(Path(path).relative_to(task.dir))
    except ValueError:
        return Path(path).name


def child_env(mark: str) -> dict[str, str]:
    """The harness child's environment (a pre-started child's too: harness/warm.py): allow-listed, since the
    kernel is untrusted code and no credential may be in its reach."""
    return dict(marked_environ(mark, child_environ()), PYTHONUNBUFFERED="1")


def _take_warm(pool, task, env: dict, box, source: Path):
    """The pool's pre-started child made for this environment and sandbox, when it can read the source; None
    to start one cold."""
    if pool is None:
        return None
    from ks_tui.harness.warm import pool_key

    warm = pool.take(pool_key(task.dir, env, box.mode))
    if warm is not None and not warm.can_read(source):
        warm.kill()
        return None
    return warm


def _hand(warm, cmd: list[str]) -> bool:
    """Give the pre-started child its job (the run's arguments); False when it died just now."""
    try:
        warm.hand(cmd[cmd.index("ks_tui.harness") + 1:])
    except OSError:
        warm.kill()
        return False
    return True


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _said_in(out: Path, bad_input: str) -> bool:
    """The child wrote the same bad-input message to its result file (see harness/__main__.py)."""
    try:
        return json.loads(out.read_text()).get("bad_input") == bad_input
    except (OSError, ValueError, AttributeError):
        return False


def _last_words(tail) -> str:
    """The line of a dead child's output that says why: faulthandler's "Fatal Python error"
    line when there is one, else the last line that is not part of its stack dump."""
    lines = [ln for ln in tail if ln.strip()]
    fatal = next((ln for ln in reversed(lines) if ln.startswith("Fatal Python error")), None)
    if fatal:
        return fatal
    dump = ("Extension modules:", "Current thread", "Thread 0x", "  File ", "Stack (most recent call first)")
    return next((ln for ln in reversed(lines) if not ln.startswith(dump) and not ln.startswith("  <")), "")


def _distrust(result, expected: list[str], code: int | None, reader: _StderrReader) -> str:
    """Why a result file is not the harness's own verdict ("" when it is).

    The kernel runs inside the harness child and could write the result file itself (its
    path is on the command line) and exit. These checks refuse such a verdict unless it is
    as complete as the harness's: written by a child that exited 0, with every scenario asked
    for, each one's verdict as streamed while the run went on."""
    if code != 0:
        return f"a result was written but the harness child then exited with code {code}"
    if not isinstance(result, dict) or not isinstance(result.get("scenarios"), list):
        return "the result file is not a harness result"
    if result.get("status") not in ("correct", "incorrect"):
        return ""  # compile_error and the child's own crash reports carry what they have
    got = {s.get("id"): s for s in result["scenarios"] if isinstance(s, dict)}
    if sorted(got) != sorted(expected) or len(result["scenarios"]) != len(expected):
        return "the result does not hold the scenarios the run was asked for"
    if any(bool(got[i].get("ok")) != bool(s.get("ok")) for i, s in reader.scenarios.items() if i in got):
        return "the result's verdicts differ from those the run streamed"
    if result["status"] == "correct" and not all(s.get("ok") for s in got.values()):
        return "the result says correct while a scenario failed"
    return ""


def _result_without_child(task, source, mode, quick, scenarios, seed, reader: _StderrReader, code: int | None,
                          ended_by: str | None, timeout: float, total: int, distrust: str = "") -> dict:
    """The child died or was killed before writing its result: build one from what it streamed."""
    result = skeleton(task, source, mode, quick, seed, scenarios)
    result["compile"] = reader.compile
    result["scenarios"] = list(reader.scenarios.values())
    at = where_text(reader.last_progress)
    if ended_by == "timeout":
        result["status"] = "timeout"
        result["message"] = f"killed after {timeout:g}s{at}"
    elif ended_by == "cancelled":
        result["status"] = "cancelled"
        result["message"] = f"cancelled{at}"
    elif distrust:
        result["status"] = "crashed"
        result["message"] = f"result refused: {distrust}"
    else:
        result["status"] = "crashed"
        how = _signal_name(code) if code is not None and code < 0 else f"exit code {code}"
        last = _last_words(reader.tail)
        result["message"] = f"harness child died ({how}){at}" + (f": {last.strip()[:200]}" if last else "")
    summarize(result, total=total)
    return result
