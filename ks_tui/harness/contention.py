"""Was the machine shared while the kernel was timed? Other processes' CPU use, and other work on the GPU.

Interleaving the kernel with its baselines keeps their ratio fair on a busy box, but not steady: a
training job on the same GPU, or a compile on the same cores, moves both times by several percent
from one run to the next, and an A/B across runs then reads noise as a gain. So the harness measures
the sharing and says so in the result's warnings, next to the numbers it disturbed.

- CPU: the machine's busy time (/proc/stat) over the timing phase, less this process's own CPU time
  (its OpenMP threads and the baselines' included): what other processes used, in cores. Linux only.
- GPU: `nvidia-smi`'s utilization of this run's GPU, read once before this process has touched the
  GPU and once after timing, when it has been idle for longer than the driver's sample period. Any
  utilization then is another process's kernels. Without nvidia-smi, nothing is said.
Standard library only: the harness child runs on bare GPU boxes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

OTHER_CORES_WARN = 0.5  # other processes' average use over timing, in cores, that earns a warning
GPU_IDLE_S = 1.1  # the driver's utilization sample period is up to 1 s: idle this long before the last read
GPU_POLL_S = 0.15  # while waiting for that, read this often: a 0 ends the wait early (idle_reading)
_SMI_TIMEOUT_S = 10


# ------------------------------------------------------------------ CPU

@dataclass(frozen=True)
class CpuSnapshot:
    wall_s: float
    busy_s: float | None  # the whole machine's busy CPU time; None without /proc/stat
    own_s: float  # this process's CPU time, its waited-for children's included


def _machine_busy_s(stat: Path) -> float | None:
    """Busy CPU seconds of all cores since boot: every state of the `cpu` line but idle and iowait."""
    try:
        first = stat.read_text().split("\n", 1)[0].split()
    except OSError:
        return None
    if not first or first[0] != "cpu" or len(first) < 5:
        return None
    ticks = [int(x) for x in first[1:9]]  # user nice system idle iowait irq softirq steal (guest is in user)
    busy = sum(ticks) - ticks[3] - (ticks[4] if len(ticks) > 4 else 0)
    return busy / os.sysconf("SC_CLK_TCK")


def cpu_snapshot(stat: Path = Path("/proc/stat")) -> CpuSnapshot:
    t = os.times()
    return CpuSnapshot(time.monotonic(), _machine_busy_s(stat),
                       t.user + t.system + t.children_user + t.children_system)


def other_cores(before: CpuSnapshot, after: CpuSnapshot) -> float | None:
    """Average cores other processes kept busy between the two snapshots; None if unknown."""
    wall = after.wall_s - before.wall_s
    if before.busy_s is None or after.busy_s is None or wall <= 0:
        return None
    others = (after.busy_s - before.busy_s) - (after.own_s - before.own_s)
    return max(0.0, others / wall)  # the two clocks tick at different grains: a small negative is zero


# ------------------------------------------------------------------ GPU

def gpu_utilization() -> dict[str, int] | None:
    """PCI bus id (upper case, as nvidia-smi prints it) -> utilization in percent, of every GPU; None
    where nvidia-smi is missing or fails."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        out = subprocess.run([smi, "--query-gpu=pci.bus_id,utilization.gpu", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=_SMI_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError, ValueError):  # ValueError: output not text
        return None
    if out.returncode != 0:
        return None
    return parse_utilization(out.stdout)


def parse_utilization(text: str) -> dict[str, int]:
    """nvidia-smi's `pci.bus_id, utilization.gpu` CSV rows; a row it could not measure ([N/A]) is left out."""
    found = {}
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2 and parts[1].isdigit():
            found[parts[0].upper()] = int(parts[1])
    return found


def bus_id(props) -> str | None:
    """torch's device properties -> nvidia-smi's bus id form (00000000:19:00.0); None on an older torch."""
    try:
        return f"{props.pci_domain_id:08X}:{props.pci_bus_id:02X}:{props.pci_device_id:02X}.0"
    except AttributeError:
        return None


def this_gpu(readings: dict[str, int] | None, bus: str | None) -> int | None:
    """The reading of this run's GPU: by bus id, or the only one there is."""
    if not readings:
        return None
    if bus is not None and bus.upper() in readings:
        return readings[bus.upper()]
    return next(iter(readings.values())) if len(readings) == 1 else None


def idle_reading(read, bus: str | None, idle_since: float, idle_s: float = GPU_IDLE_S, poll_s: float = GPU_POLL_S,
                 clock=time.monotonic, sleep=time.sleep) -> int | None:
    """This GPU's utilization once this run has left it idle (since `idle_since`, on `clock`).

    The driver reports the share of its last sample period (1/6 s to 1 s, by product) in which any kernel
    ran. A reading taken after a whole period of this run's idleness is someone else's work; so is any
    reading at all, but a nonzero one taken sooner may still hold this run's last kernels. So: read every
    poll_s; a 0 settles it at once (no process, this one included, ran a kernel over a whole sample period,
    the same question the full wait asks, of a window as long); a nonzero reading only counts once idle_s
    has passed, as before. Without nvidia-smi (read gives None) there is nothing to wait for."""
    while True:
        late = clock() - idle_since >= idle_s
        reading = this_gpu(read(), bus)
        if reading is None or reading == 0 or late:
            return reading
        sleep(max(0.0, min(poll_s, idle_since + idle_s - clock())))


# ------------------------------------------------------------------ the verdict

def warnings(cores: float | None, cpus: int, gpu_before: int | None, gpu_after: int | None) -> list[str]:
    out = []
    if cores is not None and cores >= OTHER_CORES_WARN:
        out.append(f"other processes kept {cores:.1f} of {cpus} CPU cores busy while the kernel was timed: "
                   "times move between runs on a shared machine (the ratio to the baselines, timed alongside, "
                   "holds better); compare runs taken on a quiet one")
    busy = [f"{when} ({u}%)" for when, u in (("before this run used it", gpu_before),
                                              ("after timing, with this run idle", gpu_after)) if u]
    if busy:
        out.append("another process was running kernels on this GPU " + " and ".join(busy)
                   + ": its work shares the GPU with the timed kernel and its baselines; "
                   "compare runs taken on an idle GPU (nvidia-smi lists the processes)")
    return out
