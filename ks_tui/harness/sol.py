"""Speed of light: the least time a scenario could take on this device, and how close the kernel came.

Each scenario has limits in milliseconds: `compute` (its FLOPs at the device's dense matmul rate for
its dtype), `memory` (its bytes, task.yaml `bytes`, at the device's copy bandwidth) and any the task's
reference module adds (`extra_limits(params, device_info) -> {name: ms}`, e.g. attention's exponentials).
The largest limit is the bound; `fraction` = limit_ms / time_ms (1.0: at the machine's limit).

The peaks are measured, not taken from a datasheet: torch.matmul on large square matrices per dtype,
and a large device copy, once per device (name, torch version, CPU thread count) and kept in
`<cache>/peaks.json`. A measured peak can sit a little under what a kernel reaches, so a scenario only
counts as faster than light above TOLERANCE; then the peaks are measured again (a busy machine may have
lowered the first measurement) and, if it still is, the scenario is invalid: its speedup is no gain
and is left out of the geomean (result.summarize).

Standard library at import time; torch is handed in by the harness child.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

TOLERANCE = 1.05  # measured peaks, not theoretical ones: a kernel may beat them by a little
PEAKS_FILE = "peaks.json"
GPU_MATMUL_SIZES = (4096, 8192, 16384)
CPU_MATMUL_SIZES = (256, 512)
GPU_COPY_BYTES = 1 << 30
# CPU timing flushes no cache, so a small scenario's data sits in L2/L3: its memory limit uses the
# best bandwidth over cache-sized and DRAM-sized copies, which bounds every working set.
CPU_COPY_BYTES = (1 << 20, 8 << 20, 32 << 20)


# ------------------------------------------------------------------ arithmetic

def compute_dtype(params: dict) -> str:
    return str(params.get("dtype", "fp32"))


def limits_ms(flops: float, nbytes: float | None, peaks: dict, dtype: str, extra: dict | None = None) -> dict:
    """Each limit in ms: compute at the dtype's matmul peak, memory at the copy bandwidth, and extra ones."""
    out: dict[str, float] = {}
    tflops = (peaks.get("matmul_tflops") or {}).get(dtype)
    if tflops and flops:
        out["compute"] = flops / (tflops * 1e12) * 1e3
    gbps = peaks.get("copy_gbps")
    if gbps and nbytes:
        out["memory"] = nbytes / (gbps * 1e9) * 1e3
    for name, ms in (extra or {}).items():
        if isinstance(ms, (int, float)) and not isinstance(ms, bool) and 0 < ms < math.inf:
            out[str(name)] = float(ms)
    return out


def speed_of_light(limits: dict, time_ms: float | None) -> dict | None:
    """{bound, limit_ms, fraction, limits}: the largest limit bounds the time; None without limits."""
    if not limits:
        return None
    bound = max(limits, key=limits.get)
    limit = limits[bound]
    fraction = limit / time_ms if time_ms and time_ms > 0 else None
    return {"bound": bound, "limit_ms": limit, "fraction": fraction,
            "limits": {k: round(v, 6) for k, v in limits.items()}}


# Dense FLOPs per clock per SM, by compute capability and dtype: the vendor's peak rate divided by
# SMs x clock (H100 SXM: 989 TFLOP/s bf16 = 132 x 1830 MHz x 4096; fp32 on the CUDA cores 256).
# torch.matmul reaches ~75-80% of it, and a good attention kernel can pass torch.matmul's rate on
# some shapes, so for compute the line between fast and impossible is this ceiling, not the measure.
FLOP_PER_CLOCK_SM = {(9, 0): {"bf16": 4096, "fp16": 4096, "fp32": 256},
                     (8, 0): {"bf16": 2048, "fp16": 2048, "fp32": 128}}


def ceiling_tflops(info: dict, dtype: str) -> float | None:
    """The device's theoretical dense rate for a dtype (TFLOP/s at its max SM clock), where known."""
    per = FLOP_PER_CLOCK_SM.get(tuple(info.get("capability") or ()), {}).get(dtype)
    sms, mhz = info.get("sm_count"), info.get("max_clock_mhz")
    return per * sms * mhz * 1e6 / 1e12 if per and sms and mhz else None


def above_light(sol: dict | None, tolerance: float = TOLERANCE) -> str | None:
    """Why a scenario's time is impossible (faster than its speed of light), or None."""
    if not sol or sol.get("fraction") is None:
        return None
    ceiling = sol.get("ceiling_fraction")
    if ceiling is not None and ceiling > 1.0:
        return (f"faster than the speed of light: {ceiling:.2f}x the device's peak compute rate "
                f"({sol['ceiling_ms']:.4g} ms)")
    if sol["bound"] == "compute" and ceiling is not None:
        return None  # under the theoretical rate: fast, not impossible
    if sol["fraction"] <= tolerance:
        return None
    return (f"faster than the speed of light: {sol['fraction']:.2f}x the {sol['bound']} limit "
            f"({sol['limit_ms']:.4g} ms), above the {tolerance:g} tolerance")


def geomean(values) -> float | None:
    vals = [v for v in values if v is not None and v > 0]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else None


def family_summary(scenarios: list[dict]) -> list[dict]:
    """Per family (the scenario's `family`, else its id): geomean, min and max of the fractions, and the
    bounds seen, in the scenarios' order. Invalid scenarios are left out."""
    fams: dict[str, list[dict]] = {}
    for s in scenarios:
        sol = s.get("speed_of_light") or {}
        if sol.get("fraction") is None or s.get("invalid"):
            continue
        fams.setdefault(s.get("family") or s.get("id") or "?", []).append(sol)
    out = []
    for name, sols in fams.items():
        fr = [x["fraction"] for x in sols]
        bounds: dict[str, int] = {}
        for x in sols:
            bounds[x["bound"]] = bounds.get(x["bound"], 0) + 1
        out.append({"family": name, "n": len(sols), "geomean": geomean(fr), "min": min(fr), "max": max(fr),
                    "bounds": bounds})
    return out


# ------------------------------------------------------------------ the peak cache

def cache_key(device: str, torch_version: str, threads: int | None) -> str:
    return json.dumps({"device": device, "torch": torch_version, "threads": threads}, sort_keys=True)


class PeakCache:
    """peaks.json: key -> {matmul_tflops: {dtype: x}, copy_gbps, measured_at}. A re-measurement keeps the
    higher of each number: a peak is the best the device showed."""

    def __init__(self, root: Path):
        self.path = Path(root) / PEAKS_FILE
        try:
            data = json.loads(self.path.read_text())
            self.entries = data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            self.entries = {}

    def get(self, key: str) -> dict:
        e = self.entries.get(key)
        return e if isinstance(e, dict) else {}

    def merge(self, key: str, measured: dict) -> dict:
        old = self.get(key)
        tf = dict(old.get("matmul_tflops") or {})
        for dt, v in (measured.get("matmul_tflops") or {}).items():
            tf[dt] = max(v, tf.get(dt) or 0.0)
        new = {"matmul_tflops": tf,
               "copy_gbps": max(measured.get("copy_gbps") or 0.0, old.get("copy_gbps") or 0.0) or None,
               "measured_at": time.time()}
        self.entries[key] = new
        return new

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".peaks-")
        with os.fdopen(fd, "w") as f:
            json.dump(self.entries, f, indent=1)
        os.replace(tmp, self.path)


# ------------------------------------------------------------------ measuring (harness child, torch)

TORCH_DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "fp64": "float64"}


def _best_seconds(torch, fn, device: str, reps: int) -> float:
    fn()  # warm-up (and the library's kernel choice)
    best = math.inf
    if device == "cuda":
        torch.cuda.synchronize()
        for _ in range(reps):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            best = min(best, a.elapsed_time(b) / 1e3)
    else:
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t0)
    return best


def measure_matmul_tflops(torch, device: str, dtype: str) -> float | None:
    """Best dense matmul rate over a few square sizes, in TFLOP/s; None for a dtype torch lacks."""
    tdt = getattr(torch, TORCH_DTYPES.get(dtype, ""), None)
    if tdt is None:
        return None
    best = 0.0
    for n in GPU_MATMUL_SIZES if device == "cuda" else CPU_MATMUL_SIZES:
        try:
            a = torch.randn(n, n, device=device).to(tdt)
            b = torch.randn(n, n, device=device).to(tdt)
            c = torch.empty(n, n, device=device, dtype=tdt)
            s = _best_seconds(torch, lambda a=a, b=b, c=c: torch.matmul(a, b, out=c), device,
                              10 if device == "cuda" else 3)
        except (RuntimeError, TypeError):  # out of memory, or no kernel for the dtype here
            continue
        finally:
            a = b = c = None
        best = max(best, 2.0 * n ** 3 / s / 1e12)
    if device == "cuda":
        torch.cuda.empty_cache()
    return best or None


def measure_copy_gbps(torch, device: str) -> float | None:
    """Best device copy bandwidth (bytes read + written per second), in GB/s."""
    best = 0.0
    for size in (GPU_COPY_BYTES,) if device == "cuda" else CPU_COPY_BYTES:
        try:
            src = torch.empty(size // 4, dtype=torch.float32, device=device).fill_(1.0)
            dst = torch.empty_like(src)
            reps = 10 if device == "cuda" else max(3, min(50, (64 << 20) // size))
            s = _best_seconds(torch, lambda dst=dst, src=src: dst.copy_(src), device, reps)
        except RuntimeError:
            continue
        finally:
            src = dst = None
        best = max(best, 2.0 * size / s / 1e9)
    if device == "cuda":
        torch.cuda.empty_cache()
    return best or None


def measure_peaks(torch, device: str, dtypes) -> dict:
    return {"matmul_tflops": {dt: v for dt in dtypes if (v := measure_matmul_tflops(torch, device, dt))},
            "copy_gbps": measure_copy_gbps(torch, device)}


def _smi_max_clock_mhz() -> int | None:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        out = subprocess.run([smi, "--query-gpu=clocks.max.sm", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10)
        return int(out.stdout.split()[0]) if out.returncode == 0 and out.stdout.split() else None
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


def device_info(torch, device: str, max_clock_mhz: int | None = None) -> dict:
    """What an `extra_limits` function may use: name, SM count, compute capability, max SM clock."""
    if device != "cuda":
        return {"device": "cpu", "name": None, "threads": torch.get_num_threads()}
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return {"device": "cuda", "name": props.name, "sm_count": props.multi_processor_count,
            "capability": [props.major, props.minor],
            "max_clock_mhz": max_clock_mhz or _smi_max_clock_mhz()}


class Light:
    """A bench run's speed-of-light judge: peaks from the cache (measured when missing), then each
    scenario's record; `finish` re-measures once when a scenario looks faster than light."""

    def __init__(self, torch, task, ref, result: dict, cache_root: Path, max_clock_mhz: int | None = None):
        self.torch, self.task, self.ref, self.result = torch, task, ref, result
        self.device = task.device
        self.key = cache_key(result.get("device") or "?", torch.__version__, result.get("threads"))
        self.cache = PeakCache(cache_root)
        self.info = device_info(torch, self.device, max_clock_mhz)
        self.extra_fn = getattr(ref, "extra_limits", None)
        self.entries: list[tuple] = []
        self.remeasured = False

    def ensure_peaks(self, dtypes) -> dict:
        peaks = self.cache.get(self.key)
        missing = [dt for dt in dtypes if dt not in (peaks.get("matmul_tflops") or {})]
        if missing or not peaks.get("copy_gbps"):
            peaks = self.cache.merge(self.key, measure_peaks(self.torch, self.device, missing))
            self.cache.save()
        self.peaks = peaks
        return peaks

    def _extra(self, params: dict) -> dict:
        if not callable(self.extra_fn):
            return {}
        try:
            got = self.extra_fn(params, self.info)
        except Exception as e:  # the task's own code: say so, never fail the kernel for it
            self.result["warnings"].append(f"extra_limits failed: {type(e).__name__}: {e}"[:300])
            self.extra_fn = None
            return {}
        return got if isinstance(got, dict) else {}

    def judge(self, sc, entry: dict) -> None:
        """Set entry['speed_of_light'] (and entry['invalid'] when above light)."""
        if not entry.get("time_ms"):
            return
        self.entries.append((sc, entry))
        self._apply(sc, entry)

    def finish(self) -> None:
        above = [(sc, e) for sc, e in self.entries if above_light(e.get("speed_of_light"))]
        if above and not self.remeasured:
            # A peak measured on a busy machine is low: measure again (the cache keeps the higher).
            self.remeasured = True
            dtypes = sorted({compute_dtype(sc.params) for sc, _ in self.entries})
            self.peaks = self.cache.merge(self.key, measure_peaks(self.torch, self.device, dtypes))
            self.cache.save()
            for sc, e in self.entries:
                _unmark(e)
                self._apply(sc, e)
        self.result["peaks"] = {**{k: v for k, v in self.peaks.items() if k != "measured_at"},
                                "device_info": self.info, "tolerance": TOLERANCE,
                                "remeasured": self.remeasured}

    def _apply(self, sc, entry: dict) -> None:
        lim = limits_ms(self.task.flops_of(sc), self.task.bytes_of(sc), self.peaks,
                        compute_dtype(sc.params), self._extra(sc.params))
        sol = speed_of_light(lim, entry["time_ms"])
        ceiling = ceiling_tflops(self.info, compute_dtype(sc.params))
        flops = self.task.flops_of(sc)
        if sol is not None and ceiling and flops:
            sol["ceiling_ms"] = flops / (ceiling * 1e12) * 1e3
            sol["ceiling_fraction"] = sol["ceiling_ms"] / entry["time_ms"]
        entry["speed_of_light"] = sol
        _mark(entry, above_light(sol))


def _mark(entry: dict, reason: str | None) -> None:
    if reason:
        entry.setdefault("invalid", [])
        if reason not in entry["invalid"]:
            entry["invalid"].append(reason)


def _unmark(entry: dict) -> None:
    reasons = [r for r in entry.get("invalid") or [] if not r.startswith("faster than the speed of light")]
    if reasons:
        entry["invalid"] = reasons
    else:
        entry.pop("invalid", None)


def exp_limit_ms(params: dict, device: dict, exps: float, per_clock_per_sm: int = 16) -> dict:
    """The exponentials' limit on Ampere/Hopper: the MUFU unit issues 16 per clock per SM."""
    if device.get("device") != "cuda" or tuple(device.get("capability") or ()) not in ((8, 0), (9, 0)):
        return {}
    sms, mhz = device.get("sm_count"), device.get("max_clock_mhz")
    if not sms or not mhz:
        return {}
    return {"exp": exps / (per_clock_per_sm * sms * mhz * 1e6) * 1e3}
