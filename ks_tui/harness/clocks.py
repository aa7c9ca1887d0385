"""The GPU's SM clock and throttle reasons before, during and after a bench, through NVML.

A kernel and a baseline timed at different clocks differ by the clock, not by the code: an H200 sinks
from 1980 to ~1700 MHz under load. So every GPU bench samples the SM clock from a thread while it
times, records the reasons the driver gives for any slowdown (power cap, thermal, ...), and warns when
the clock moved by more than CLOCK_MOVED (idle samples, between scenarios, are left out: an idle GPU
drops its clock and that is no measurement's clock).

NVML comes from the `nvidia-ml-py` package (module `pynvml`), imported lazily: without it the result
says "clock not recorded (nvidia-ml-py not installed)" and nothing else changes.
"""

from __future__ import annotations

import statistics
import threading
import time

NOT_INSTALLED = "clock not recorded (nvidia-ml-py not installed)"
CLOCK_MOVED = 0.03  # a relative move of the SM clock worth a warning
SAMPLE_S = 0.05

# NVML's clock event (throttle) reason bits; stable across driver versions.
REASONS = {
    0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
    0x10: "sync_boost", 0x20: "sw_thermal_slowdown", 0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown", 0x100: "display_clock_setting",
}
IDLE = 0x1


def reason_names(mask: int) -> list[str]:
    return [name for bit, name in REASONS.items() if mask & bit]


def _nvml():
    try:
        import pynvml
    except ImportError:
        return None
    return pynvml


class ClockRecorder:
    """start() reads the clock and starts the sampling thread; stop() reads again and returns the record."""

    def __init__(self, bus_id: str | None, index: int = 0):
        self.nvml, self.handle, self.why = _nvml(), None, ""
        self.samples: list[tuple[float, int, int]] = []  # (monotonic time, SM MHz, reason mask)
        self.before = self.after = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if self.nvml is None:
            self.why = NOT_INSTALLED
            return
        try:
            self.nvml.nvmlInit()
            try:  # by bus id: NVML's indices ignore CUDA_VISIBLE_DEVICES
                self.handle = self.nvml.nvmlDeviceGetHandleByPciBusId(bus_id) if bus_id else None
            except self.nvml.NVMLError:
                self.handle = None
            if self.handle is None:
                self.handle = self.nvml.nvmlDeviceGetHandleByIndex(index)
            self.max_mhz = int(self.nvml.nvmlDeviceGetMaxClockInfo(self.handle, self.nvml.NVML_CLOCK_SM))
        except Exception as e:  # NVMLError: no driver, no permission, unknown bus id
            self.handle, self.why = None, f"clock not recorded (NVML: {e})"

    @property
    def ok(self) -> bool:
        return self.handle is not None

    def read(self) -> tuple[float, int, int]:
        nv = self.nvml
        mhz = int(nv.nvmlDeviceGetClockInfo(self.handle, nv.NVML_CLOCK_SM))
        get = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            nv.nvmlDeviceGetCurrentClocksThrottleReasons
        return time.monotonic(), mhz, int(get(self.handle))

    def _sample(self) -> None:
        while True:
            try:
                self.samples.append(self.read())
            except Exception:  # a failed read is a missing sample, not a failed bench
                pass
            if self._stop.wait(SAMPLE_S):
                return

    def start(self) -> None:
        if not self.ok:
            return
        try:
            self.before = self.read()
        except Exception as e:
            self.handle, self.why = None, f"clock not recorded (NVML: {e})"
            return
        self._thread = threading.Thread(target=self._sample, name="ks-clock", daemon=True)
        self._thread.start()

    def window(self, t0: float, t1: float) -> list[int] | None:
        """[min, max] busy SM clock of the samples taken between t0 and t1 (monotonic)."""
        got = [mhz for t, mhz, mask in list(self.samples) if t0 <= t <= t1 and not mask & IDLE]
        return [min(got), max(got)] if got else None

    def stop(self) -> dict:
        if not self.ok:
            return {"recorded": False, "why": self.why}
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        try:
            self.after = self.read()
        except Exception:
            self.after = None
        return record(self.before, self.samples, self.after, self.max_mhz)


def _point(p) -> dict | None:
    return None if p is None else {"sm_mhz": p[1], "reasons": reason_names(p[2])}


def record(before, samples, after, max_mhz: int | None) -> dict:
    """The clocks record of a result: before/after points and the samples' summary."""
    busy = [mhz for _, mhz, mask in samples if not mask & IDLE]
    seen = 0
    for _, _, mask in samples:
        seen |= mask
    during = {"samples": len(samples), "busy_samples": len(busy),
              "min_mhz": min(busy) if busy else None, "max_mhz": max(busy) if busy else None,
              "median_mhz": statistics.median(busy) if busy else None,
              "reasons": reason_names(seen & ~IDLE)}
    return {"recorded": True, "max_mhz": max_mhz, "before": _point(before), "during": during,
            "after": _point(after)}


def _busy_values(rec: dict) -> list[int]:
    """The busy SM clocks of a record: before and after unless idle, and the samples' min and max."""
    if not rec or not rec.get("recorded"):
        return []
    values = []
    for key in ("before", "after"):
        p = rec.get(key) or {}
        if p.get("sm_mhz") and "gpu_idle" not in (p.get("reasons") or []):
            values.append(p["sm_mhz"])
    d = rec.get("during") or {}
    return values + [v for v in (d.get("min_mhz"), d.get("max_mhz")) if v]


def moved(rec: dict) -> float | None:
    """The relative spread of the busy SM clock over before, during and after; None if unknown."""
    values = _busy_values(rec)
    if len(values) < 2 or max(values) <= 0:
        return None
    return (max(values) - min(values)) / max(values)


def warnings(rec: dict) -> list[str]:
    spread = moved(rec)
    if spread is None or spread <= CLOCK_MOVED:
        return []
    values = _busy_values(rec)
    why = ", ".join((rec.get("during") or {}).get("reasons") or []) or "none given"
    return [f"the SM clock moved {spread * 100:.1f}% ({min(values)}-{max(values)} MHz) while timing (throttle "
            f"reasons: {why}): times taken at different clocks differ by the clock; the interleaved baselines "
            "share it"]


def text(rec: dict | None) -> str:
    """One line for reports: 'clock 1755-1980 MHz (max 1980), moved 11.4%: sw_power_cap' or why not."""
    if not rec:
        return ""
    if not rec.get("recorded"):
        return rec.get("why") or NOT_INSTALLED
    d = rec.get("during") or {}
    spread = moved(rec)
    span = (f"{d['min_mhz']}-{d['max_mhz']} MHz" if d.get("min_mhz") != d.get("max_mhz")
            else f"{d.get('min_mhz')} MHz") if d.get("min_mhz") else "no busy sample"
    out = f"clock {span} while timing (max {rec.get('max_mhz')})"
    if spread is not None:
        out += f", moved {spread * 100:.1f}%"
    if d.get("reasons"):
        out += ": " + ", ".join(d["reasons"])
    return out
