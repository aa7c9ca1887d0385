"""Where untrusted code runs: the harness child (compile and kernel) inside a sandbox when the machine allows one.

Modes, strongest first, the first that works on this machine is used (KS_SANDBOX picks one, or `off`):
- `bwrap`: bubblewrap. New user/pid/net/ipc/uts namespaces; the whole file system read-only, the user's home
  hidden except the folders Python and the task need, /etc/shadow and host keys hidden; writable only the run's
  scratch folder and the build cache; no network; the GPU device nodes (/dev/nvidia*, /dev/dri) passed through.
  The namespace dies with the child, so nothing the kernel started outlives the run.
- `unshare`: util-linux's unshare, where bubblewrap is not installed: new pid, net, ipc and mount namespaces (no
  network, a /proc that shows only the run, everything killed with it); the file system as the user sees it.
- `none`: the child runs as the user. The environment scrub (secret_env.py), the task-file hashes
  (taskguard.py) and the leftover sweep (leftovers.py) still hold in every mode.
Standard library only.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ks_tui.errors import KsError

ENV_VAR = "KS_SANDBOX"
MODES = ("bwrap", "unshare")
OFF = ("off", "none", "0", "false", "no")
PROBE_TIMEOUT_S = 20
# bubblewrap's namespace sets, strongest first: a user namespace is refused where unprivileged ones are off, but
# root (CI, the GPU machines) can do without it.
_BWRAP_NAMESPACES = (("--unshare-all",),
                     ("--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts"))
_HIDDEN_FILES = ("/etc/shadow", "/etc/gshadow", "/etc/sudoers")
_HIDDEN_DIRS = ("/etc/ssh", "/root/.ssh")


@dataclass(frozen=True)
class Sandbox:
    mode: str            # "bwrap", "unshare" or "none"
    detail: str          # what it does, or why none is used
    flags: tuple = ()    # bwrap's namespace flags that worked here

    @property
    def active(self) -> bool:
        return self.mode != "none"

    def describe(self) -> str:
        return f"{self.mode}: {self.detail}"


def _setting() -> str:
    value = os.environ.get(ENV_VAR, "auto").strip().lower() or "auto"
    if value in OFF:
        return "off"
    if value not in ("auto", *MODES):
        raise KsError(f"{ENV_VAR}={value!r}: use auto, bwrap, unshare or off")
    return value


def _works(cmd: list[str]) -> str:
    """"" when CMD runs `true` and exits 0; else its first line of complaint."""
    try:
        out = subprocess.run([*cmd, "true"], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S,
                             stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        return str(e)
    if out.returncode == 0:
        return ""
    return (out.stderr.strip().splitlines() or [f"exit code {out.returncode}"])[-1]


@lru_cache(maxsize=None)
def _probe(setting: str) -> Sandbox:
    if setting == "off":
        return Sandbox("none", f"turned off ({ENV_VAR}=off)")
    reasons = []
    if setting in ("auto", "bwrap"):
        exe = shutil.which("bwrap")
        if exe is None:
            reasons.append("bwrap not installed (Debian/Ubuntu package bubblewrap)")
        else:
            for flags in _BWRAP_NAMESPACES:
                why = _works([exe, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", *flags,
                              "--die-with-parent"])
                if not why:
                    users = "user, " if "--unshare-all" in flags else ""
                    return Sandbox("bwrap", f"bubblewrap {exe}: own {users}pid, net, ipc namespaces; file system "
                                            "read-only but the run's scratch folder and the build cache; home hidden; "
                                            "no network", flags)
            reasons.append(f"bwrap refused: {why}")
    if setting in ("auto", "unshare"):
        exe = shutil.which("unshare")
        if exe is None:
            reasons.append("unshare not found (util-linux)")
        else:
            why = _works([exe, *_UNSHARE_FLAGS])
            if not why:
                return Sandbox("unshare", f"util-linux {exe}: own pid, net, ipc, mount namespaces; no network; "
                                          "file system as the user sees it (install bubblewrap for a read-only one)")
            reasons.append(f"unshare refused: {why}")
    if setting != "auto":
        raise KsError(f"{ENV_VAR}={setting} but it cannot run here: {'; '.join(reasons)}",
                      hint=f"{ENV_VAR}=auto uses the strongest mode this machine allows")
    return Sandbox("none", "; ".join(reasons) or "no sandbox tool")


_UNSHARE_FLAGS = ("--pid", "--net", "--ipc", "--mount", "--fork", "--kill-child", "--mount-proc")
# unshare makes the command pid 1 of the new namespace, and pid 1 gets no signal it has no handler for: a kernel's
# abort() (or a SIGTERM the command sends itself) would not end it. A shell stands as pid 1 and waits for the
# command (the trailing `exit` keeps it from exec'ing it); a signal's death comes back as exit code 128 + N.
_UNSHARE_INIT = ("/bin/sh", "-c", '"$@"; exit $?', "ks-init")


def current() -> Sandbox:
    """The sandbox harness runs get here (probed once per process). KsError when KS_SANDBOX names a mode that
    cannot run."""
    return _probe(_setting())


def for_mode(mode: str) -> Sandbox | None:
    """The sandbox of a mode `current()` chose in another process (the standby server's children must run in the
    same one); None when that mode cannot run here."""
    try:
        return _probe("off" if mode == "none" else mode)
    except KsError:
        return None


def warning_line() -> str:
    """One line for the start of a session or run when kernels run unconfined; "" when a sandbox is active or it
    was turned off on purpose."""
    try:
        box = current()
    except KsError as e:
        return f"warning: {e.message}"
    if box.active or _setting() == "off":
        return ""
    return (f"warning: no sandbox for kernels on this machine ({box.detail}); they run with your rights "
            "(environment scrubbed, task files checked)")


def _under(path: Path, folder: Path) -> bool:
    try:
        path.relative_to(folder)
        return True
    except ValueError:
        return False


def _needed_paths() -> list[Path]:
    """Folders the child must read that may lie under the hidden home: Python, its packages, the tools on PATH."""
    names = [sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable)),
             *sys.path]
    for var in ("PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "CUDA_HOME", "CUDA_PATH", "VIRTUAL_ENV", "CONDA_PREFIX"):
        names += os.environ.get(var, "").split(os.pathsep)
    return [Path(n) for n in names if n and os.path.isabs(n)]


def _outermost(paths: list[Path]) -> list[Path]:
    out: list[Path] = []
    for p in sorted(set(paths), key=lambda p: len(p.parts)):
        if not any(_under(p, q) for q in out):
            out.append(p)
    return out


def wrap(cmd: list[str], box: Sandbox, *, scratch: Path, writable: list[Path], readable: list[Path]) -> list[str]:
    """CMD run inside BOX. SCRATCH and WRITABLE stay writable (created when missing); READABLE (the task, the
    kernel source) stays readable even where it lies under the hidden home."""
    if box.mode == "unshare":
        return [shutil.which("unshare") or "unshare", *_UNSHARE_FLAGS, *_UNSHARE_INIT, *cmd]
    if box.mode != "bwrap":
        return list(cmd)
    for w in writable:
        Path(w).mkdir(parents=True, exist_ok=True)
    args = [shutil.which("bwrap") or "bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--tmpfs", "/dev/shm", *box.flags, "--die-with-parent"]
    for node in sorted(glob.glob("/dev/nvidia*") + glob.glob("/dev/dri")):  # the GPU stays reachable
        args += ["--dev-bind", node, node]
    for f in _HIDDEN_FILES:
        if os.path.isfile(f):
            args += ["--ro-bind", "/dev/null", f]
    home = Path(os.environ.get("HOME") or "/nonexistent").resolve()
    hidden = [Path(d) for d in _HIDDEN_DIRS if os.path.isdir(d)]
    if home.is_dir() and home != Path("/"):
        hidden.append(home)
    hidden = _outermost(hidden)
    for d in hidden:
        args += ["--tmpfs", str(d)]
    keep_rw = _outermost([Path(w).resolve() for w in [scratch, *writable]])
    # Never a folder that holds a hidden one: "/" (sys.path's first entry when started from /) would swallow every
    # other path, and the home itself would undo the hiding.
    needed = [p for p in (Path(r).resolve() for r in [*readable, *_needed_paths()] if os.path.exists(r))
              if not any(_under(d, p) for d in hidden)]
    keep_ro = [p for p in _outermost(needed)
               if any(_under(p, d) for d in hidden) and not any(_under(p, w) for w in keep_rw)]
    for p in keep_ro:
        args += ["--ro-bind", str(p), str(p)]
    for p in keep_rw:
        args += ["--bind", str(p), str(p)]
    return [*args, "--chdir", str(scratch), *cmd]


def wrap_shell(cmd: list[str], box: Sandbox) -> list[str]:
    """CMD (an agent's shell command) in a pid namespace of its own, so that whatever it starts dies with it; the
    file system, devices and network as they are."""
    if box.mode == "bwrap":
        # root keeps its capabilities (bubblewrap drops them by default): the command may install or chown as before
        caps = ["--cap-add", "ALL"] if os.geteuid() == 0 else []
        return [shutil.which("bwrap") or "bwrap", "--dev-bind", "/", "/", "--proc", "/proc", *caps, "--unshare-pid",
                "--die-with-parent", *cmd]
    if box.mode == "unshare":
        return [shutil.which("unshare") or "unshare", "--pid", "--mount", "--fork", "--kill-child", "--mount-proc",
                *_UNSHARE_INIT, *cmd]
    return list(cmd)


def doctor_report() -> dict:
    """For `ks doctor`: whether kernels run sandboxed, in which mode, and how to turn it off."""
    try:
        box = current()
    except KsError as e:
        return {"active": False, "mode": "none", "detail": e.message, "switch": f"{ENV_VAR}=auto|bwrap|unshare|off"}
    return {"active": box.active, "mode": box.mode, "detail": box.detail,
            "switch": f"{ENV_VAR}=auto|bwrap|unshare|off (now {os.environ.get(ENV_VAR, 'auto')})"}
