"""A harness child kept waiting between one-shot commands (`ks check`, `ks bench`), so the next one skips the start-up.

Each one-shot command is a new process, and its harness child pays Python's start-up, the torch import and the
libraries' first calls (FA3 loading its kernels, cuDNN's plans) every time: seconds that a long-lived caller hides
with a harness.warm.WarmPool. Here the pool lives in a small server process that outlives the command:

- After a run, the command starts the server for its key (interpreter, task folder, the child's environment,
  sandbox, and a fingerprint of the task's own files and of ks_tui's code) unless one answers already. The
  server pre-starts a harness child exactly as the engine's pool does and waits on a Unix socket in a folder
  only this user can open.
- The next command with the same key connects, and the server passes it the waiting child's stdin and stdout
  (SCM_RIGHTS). From then on the command drives the child as if it had spawned it: it writes the job, reads the
  progress lines, holds stdin open as the parent-alive pipe, kills the child's process group on a timeout or
  Ctrl-C. The server, the child's parent, reports its exit status over the socket, then pre-starts the next.
- Crash isolation is unchanged: each child serves one run. A command that finds no server, a busy one, or one
  that dies on it, runs cold.
- The server exits after KS_STANDBY_IDLE_S seconds without a job (default 600), on `ks standby stop`, and when a
  newer server for the same task folder replaces it (the task's files or ks changed). KS_STANDBY=0: none.

Standard library only: the server never imports torch; its child does.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
import selectors
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ks_tui.harness.leftovers import MARK_VARIABLE, new_mark

IDLE_S = 600.0
CONNECT_TIMEOUT_S = 2.0
_MAX_MESSAGE = 1 << 16
_NAME_CHARS = 24
_SOCKET_PATH_MAX = 107  # sun_path's 108 bytes, less the closing NUL


def enabled() -> bool:
    """Off with KS_STANDBY=0, and inside a KernelSeek run or an agent's command (their sweep would end it)."""
    if os.environ.get("KS_STANDBY", "1").strip().lower() in ("0", "no", "false", "off"):
        return False
    return not os.environ.get(MARK_VARIABLE)


def idle_seconds() -> float:
    try:
        value = float(os.environ.get("KS_STANDBY_IDLE_S", IDLE_S))
    except ValueError:
        return IDLE_S
    return value if value > 0 else IDLE_S


def folder() -> Path | None:
    """Where the servers' sockets live: a folder of this user's that nobody else can enter; None when it cannot
    be made so, or its sockets' paths would be too long (then no server is started or used)."""
    base = os.environ.get("KS_STANDBY_DIR")
    if base:
        path = Path(base)
    elif os.environ.get("XDG_RUNTIME_DIR"):
        path = Path(os.environ["XDG_RUNTIME_DIR"]) / "ks-standby"
    else:
        path = Path(tempfile.gettempdir()) / f"ks-standby-{os.getuid()}"
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = path.stat()
    except OSError:
        return None
    # Whoever can connect can have a kernel run as this user: refuse a folder someone else owns or can enter.
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        return None
    if len(os.fsencode(path / f"{'0' * _NAME_CHARS}.sock")) > _SOCKET_PATH_MAX:  # too long for a Unix socket
        return None
    return path


def _stamp(files) -> str:
    h = hashlib.sha256()
    for p in files:
        try:
            st = p.stat()
        except OSError:
            continue
        h.update(f"{p}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


@functools.lru_cache(maxsize=1)
def _code_stamp() -> str:
    """ks_tui's own code, once per process (a command takes and primes: one walk of the package, not two)."""
    return _stamp(sorted(Path(__file__).resolve().parent.parent.rglob("*.py")))


def _fingerprint(task_dir: Path) -> str:
    """What makes a waiting child stale: the task's own files (task.yaml, reference.py, ...; not the kernels the
    runs bring) and ks_tui's code, by size and modification time."""
    own = sorted(p for p in Path(task_dir).iterdir() if p.is_file() and p.suffix in (".py", ".yaml", ".yml", ".json"))
    return f"{_code_stamp()}:{_stamp(own)}"


def family(key: tuple) -> str:
    """A name for a pool key (harness.warm.pool_key): servers of one family differ only by the code they run."""
    text = json.dumps([list(map(str, key[:2])), [list(kv) for kv in key[2]], key[3]])
    return hashlib.sha256(text.encode()).hexdigest()[:_NAME_CHARS]


def address(key: tuple, task_dir: Path) -> str:
    """The server's name for a pool key and the task's present files (and ks_tui's code)."""
    return hashlib.sha256(f"{family(key)}:{_fingerprint(task_dir)}".encode()).hexdigest()[:_NAME_CHARS]


# ------------------------------------------------------------------ the command's side

class _RemoteChild:
    """A Popen look-alike for the server's child: its pipes were passed to this process; its exit status comes
    from the server, its parent. `returncode` LOST when the server died first (the child's own end is then seen
    through a pidfd, its status is not)."""

    LOST = 1

    def __init__(self, conn: socket.socket, pid: int, stdin, stdout, rest: bytes) -> None:
        self.pid, self.stdin, self.stdout = pid, stdin, stdout
        self.returncode: int | None = None
        self.lost = ""
        self._conn, self._buf = conn, rest
        try:
            self._pidfd: int | None = os.pidfd_open(pid)
        except (OSError, AttributeError):
            self._pidfd = None
        conn.setblocking(False)

    def poll(self) -> int | None:
        if self.returncode is not None:
            return self.returncode
        self._read()
        if b"\n" in self._buf:
            line, self._buf = self._buf.split(b"\n", 1)
            try:
                self.returncode = int(json.loads(line)["exit"])
            except (ValueError, KeyError, TypeError):
                self.lost = "the standby server sent something else than an exit status"
        if self.lost and self.returncode is None and not self._alive():
            self.returncode = self.LOST
        return self.returncode

    def _read(self) -> None:
        if self.lost:
            return
        try:
            data = self._conn.recv(_MAX_MESSAGE)
        except BlockingIOError:
            return
        except OSError as e:
            data, self.lost = b"", f"the standby server's socket failed: {e}"
        if data:
            self._buf += data
        elif not self.lost:
            self.lost = "the standby server ended before the harness child"

    def _alive(self) -> bool:
        if self._pidfd is None:
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                return False
            except PermissionError:
                return True
            return True
        import select

        readable, _, _ = select.select([self._pidfd], [], [], 0)
        return not readable

    def wait(self, timeout: float | None = None) -> int:
        end = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if end is not None and time.monotonic() > end:
                raise subprocess.TimeoutExpired("standby harness child", timeout or 0)
            time.sleep(0.02)
        assert self.returncode is not None
        return self.returncode

    def release(self) -> None:
        """This run is over (its result read): the server may remove what the child left."""
        try:
            self._conn.close()
        except OSError:
            pass
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None


def _request(path: Path, op: dict, fds: bool = False):
    """Send one request; (reply dict, passed fds, bytes after the reply's line, the socket when fds else None);
    None when no server answers."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(CONNECT_TIMEOUT_S)
    got: list[int] = []
    try:
        conn.connect(str(path))
        conn.sendall(json.dumps(op).encode() + b"\n")
        buf = b""
        while b"\n" not in buf:
            data, passed, _flags, _addr = socket.recv_fds(conn, _MAX_MESSAGE, 2)
            got += passed
            if not data:
                raise OSError("closed")
            buf += data
        line, rest = buf.split(b"\n", 1)
        reply = json.loads(line)
        if not isinstance(reply, dict):
            raise ValueError("not an object")
    except (OSError, ValueError):
        for fd in got:
            os.close(fd)
        conn.close()
        return None
    if not fds:
        conn.close()
        return reply, [], b"", None
    return reply, got, rest, conn


class StandbyPool:
    """The pool interface run_harness uses (take, prime), served by a standby server. `started` holds the pid of
    a server this process started (the command says so once)."""

    def __init__(self, idle_s: float | None = None) -> None:
        self.idle_s = idle_seconds() if idle_s is None else idle_s
        self.started: int | None = None

    def take(self, key: tuple):
        from ks_tui.harness import sandbox
        from ks_tui.harness.warm import WarmChild

        where = folder()
        if where is None:
            return None
        path = where / f"{address(key, Path(key[1]))}.sock"
        if not path.exists():
            return None
        answer = _request(path, {"op": "take"}, fds=True)
        if answer is None:
            return None
        reply, fds, rest, conn = answer
        if len(fds) != 2 or not isinstance(reply.get("pid"), int):
            for fd in fds:
                os.close(fd)
            conn.close()
            return None
        proc = _RemoteChild(conn, reply["pid"], os.fdopen(fds[0], "wb"), os.fdopen(fds[1], "rb"), rest)
        scratch = Path(reply["scratch"]) if reply.get("scratch") else None
        return WarmChild(proc, str(reply.get("mark", "")), key, float(reply.get("spawned", time.time())),  # type: ignore[arg-type]
                         sandbox.Sandbox(str(reply.get("box", "none")), "the standby server's"), scratch,
                         tuple(Path(r) for r in reply.get("roots", [])))

    def prime(self, task_dir: Path, box=None) -> None:
        """Make sure a server waits for the next run of task_dir (as run_harness would run it, inside `box`)."""
        from ks_tui.harness import sandbox
        from ks_tui.harness.client import child_env
        from ks_tui.harness.warm import pool_key

        where = folder()
        if where is None:
            return
        try:
            box = box or sandbox.current()
        except Exception:
            return
        task_dir = Path(task_dir).resolve()
        env = child_env(new_mark())  # the server's own mark; it gives each child a fresh one
        key = pool_key(task_dir, env, box.mode)
        name = address(key, task_dir)
        if _request(where / f"{name}.sock", {"op": "ping"}) is not None:
            return
        _stop_stale(where, family(key), name)
        cmd = [sys.executable, "-m", "ks_tui.harness", "standby", "--task", str(task_dir), "--box", box.mode,
               "--address", name, "--idle", str(self.idle_s)]
        try:
            with open(where / f"{name}.log", "wb") as log:
                proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                        start_new_session=True, close_fds=True, env=env, cwd="/")
        except OSError:
            return
        self.started = proc.pid

    def close(self) -> None:
        pass  # the server is meant to outlive this process


def servers() -> list[dict]:
    """What each live server says of itself (pid, task, box, idle_s, since, busy)."""
    where = folder()
    if where is None:
        return []
    out = []
    for sock in sorted(where.glob("*.sock")):
        answer = _request(sock, {"op": "ping"})
        if answer is not None:
            out.append(answer[0])
        elif not _locked(where / f"{sock.stem}.lock"):  # its server is gone: tidy its files
            for suffix in (".sock", ".lock", ".log"):
                (where / f"{sock.stem}{suffix}").unlink(missing_ok=True)
    return out


def _locked(lock: Path) -> bool:
    try:
        with open(lock, "a") as f:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return False


def stop(task_dir: Path | None = None) -> list[dict]:
    """Ask every server (or those of task_dir) to end; a busy one ends after its run. What each said."""
    where = folder()
    if where is None:
        return []
    said = []
    for sock in sorted(where.glob("*.sock")):
        answer = _request(sock, {"op": "stop", "task": str(task_dir.resolve()) if task_dir else None})
        if answer is not None and answer[0].get("stopping"):
            said.append(answer[0])
    return said


def _stop_stale(where: Path, kind: str, keep: str) -> None:
    """A server of the same family under another name waits with stale task files or code: end it."""
    for sock in where.glob("*.sock"):
        if sock.stem != keep:
            _request(sock, {"op": "stop", "family": kind})


# ------------------------------------------------------------------ the server

def serve(task: str, box_mode: str, name: str, idle_s: float) -> int:
    """`python -m ks_tui.harness standby ...`: keep one pre-started harness child for `name`'s key until idle_s
    pass without a job. Its environment is the children's (the run mark aside), as the command computed it."""
    from ks_tui.harness import sandbox
    from ks_tui.harness.warm import WarmPool, pool_key

    where = folder()
    if where is None:
        return 2
    task_dir = Path(task).resolve()
    lock = open(where / f"{name}.lock", "a")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return 0  # another server took this name first
    box = sandbox.for_mode(box_mode)
    env = {k: v for k, v in os.environ.items() if k != MARK_VARIABLE}
    if box is None or address(pool_key(task_dir, env, box.mode), task_dir) != name:
        print(f"standby: not the key it was started for ({box_mode}); exiting", flush=True)
        return 2
    path = where / f"{name}.sock"
    path.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(8)
    server = _Server(listener, WarmPool(), task_dir, box, env, idle_s)
    signal.signal(signal.SIGTERM, lambda *_: server.end("terminated"))
    try:
        server.loop()
    finally:
        server.pool.close()
        if path.exists() and path.stat().st_ino == os.fstat(listener.fileno()).st_ino:
            path.unlink(missing_ok=True)
        listener.close()
        lock.close()
    return 0


class _Server:
    """One idle child at most, one run at a time; everything on one thread around a selector."""

    RESTARTS = 3  # children that die while idle, in a row, before the server gives up

    def __init__(self, listener, pool, task_dir: Path, box, env: dict, idle_s: float) -> None:
        self.listener, self.pool, self.task_dir, self.box, self.env = listener, pool, task_dir, box, env
        self.idle_s = idle_s
        self.key = None
        self.family = ""
        self.sel = selectors.DefaultSelector()
        self.sel.register(listener, selectors.EVENT_READ, "accept")
        self.deadline = time.monotonic() + idle_s
        self.since = time.time()
        self.running = None     # (WarmChild, its command's socket) during a run
        self.after: list = []   # (socket, scratch) of ended runs: the scratch goes when the command hangs up
        self.stopping = ""
        self.idle_deaths = 0
        self.runs = 0
        self._start_child()

    def end(self, why: str) -> None:
        self.stopping = why

    def _start_child(self) -> None:
        from ks_tui.harness.warm import pool_key

        mark = new_mark()
        env = dict(self.env, **{MARK_VARIABLE: mark})
        self.key = pool_key(self.task_dir, env, self.box.mode)
        self.family = family(self.key)
        self.pool.prestart(self.task_dir, env, mark, self.box)

    def loop(self) -> None:
        while not (self.stopping and self.running is None):
            if self.running is None and time.monotonic() > self.deadline:
                print(f"standby: idle {self.idle_s:g} s; exiting after {self.runs} run(s)", flush=True)
                return
            if self.running is None and self.pool.idle_pid is None:
                return  # the idle child died too often (see _idle_death)
            for sel_key, _ in self.sel.select(timeout=self._tick()):
                if sel_key.data == "accept":
                    self._on_accept()
                else:
                    self._on_hangup(sel_key.data)
            self._watch_children()

    # -- events
    def _tick(self) -> float:
        """How long to wait for a socket: a run's end is seen by polling its child, so poll often then."""
        return 0.02 if self.running is not None else 0.5

    def _on_accept(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        conn.settimeout(CONNECT_TIMEOUT_S)
        try:
            uid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[1]
            if uid != os.getuid():
                raise OSError("another user")
            req = json.loads(conn.makefile("rb").readline(_MAX_MESSAGE))
            self._answer(conn, req if isinstance(req, dict) else {})
        except (OSError, ValueError):
            conn.close()

    def _answer(self, conn: socket.socket, req: dict) -> None:
        op = req.get("op")
        about = {"pid": os.getpid(), "family": self.family, "task": str(self.task_dir), "box": self.box.mode,
                 "idle_s": self.idle_s, "since": self.since, "runs": self.runs, "busy": self.running is not None,
                 "child": self.running[0].proc.pid if self.running else self.pool.idle_pid}
        if op == "ping":
            _send(conn, about)
        elif op == "stop":
            if req.get("task") in (None, str(self.task_dir)) and req.get("family") in (None, self.family):
                self.end("asked to stop")
                _send(conn, dict(about, stopping=True))
            else:
                _send(conn, dict(about, stopping=False))
        elif op == "take" and self.running is None and not self.stopping:
            self._hand_over(conn)
            return
        else:
            _send(conn, dict(about, refused="busy" if self.running is not None else "not a request"))
        conn.close()

    def _hand_over(self, conn: socket.socket) -> None:
        child = self.pool.take(self.key)
        if child is None:  # died just now: the command runs cold, the next one finds a fresh child
            _send(conn, {"refused": "no child ready"})
            conn.close()
            self._start_child()
            return
        hello = {"pid": child.proc.pid, "mark": child.mark, "spawned": child.spawned, "box": self.box.mode,
                 "scratch": str(child.scratch) if child.scratch else None, "roots": [str(r) for r in child.roots]}
        try:
            socket.send_fds(conn, [json.dumps(hello).encode() + b"\n"],
                            [child.proc.stdin.fileno(), child.proc.stdout.fileno()])
        except OSError:
            conn.close()
            child.kill()
            self._start_child()
            return
        # The command holds the child's pipes now: its end (or death) is the child's parent-alive signal.
        child.proc.stdin.close()
        child.proc.stdout.close()
        conn.setblocking(False)
        self.running = (child, conn)
        self.sel.register(conn, selectors.EVENT_READ, conn)
        self.runs += 1

    def _on_hangup(self, conn: socket.socket) -> None:
        try:
            if conn.recv(_MAX_MESSAGE):
                return  # the command says nothing after its request; ignore whatever it is
        except BlockingIOError:
            return
        except OSError:
            pass
        self.sel.unregister(conn)
        conn.close()
        if self.running is not None and self.running[1] is conn:
            self.running = (self.running[0], None)  # the command is gone; the child ends at its stdin's end
        for i, (c, scratch) in enumerate(self.after):
            if c is conn:
                del self.after[i]
                _remove(scratch)
                break

    def _watch_children(self) -> None:
        if self.running is not None:
            child, conn = self.running
            code = child.proc.poll()
            if code is None:
                return
            self.running = None
            if conn is not None:
                try:
                    conn.sendall(json.dumps({"exit": code}).encode() + b"\n")
                    self.after.append((conn, child.scratch))  # the command reads the result, then hangs up
                except OSError:
                    _remove(child.scratch)
            else:
                _remove(child.scratch)
            self.deadline = time.monotonic() + self.idle_s
            self.idle_deaths = 0
            if not self.stopping:
                self._start_child()
            return
        said = self.pool.drop_dead()
        if said is None:
            return
        # The idle child died without a job (a crash at import, the driver): said in the log; try again a few times.
        print(f"standby: the waiting child died: {said}", flush=True)
        self.idle_deaths += 1
        if self.idle_deaths <= self.RESTARTS:
            self._start_child()


def _send(conn: socket.socket, msg: dict) -> None:
    try:
        conn.sendall(json.dumps(msg).encode() + b"\n")
    except OSError:
        pass


def _remove(path: Path | None) -> None:
    if path is not None:
        import shutil

        shutil.rmtree(path, ignore_errors=True)
