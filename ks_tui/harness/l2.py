"""Persisting L2 lines: no kernel may keep its inputs in L2 from one timed call to the next.

The L2 flush before each timed call (a write larger than L2) evicts normal lines, not persisting ones:
a kernel that sets an access policy window with hitProp = persisting on its inputs would find them in
L2 on every timed call. Before each timed block the harness sets the persisting carve-out to zero and
resets every persisting line to normal (cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0) and
cudaCtxResetPersistingL2Cache), through the CUDA runtime that torch loaded, else the driver API.
ctypes only: no cuda-python needed.
"""

from __future__ import annotations

import ctypes

PERSISTING_L2_LIMIT = 0x06  # cudaLimitPersistingL2CacheSize == CU_LIMIT_PERSISTING_L2_CACHE_SIZE


def _loaded_cudart() -> str | None:
    """The libcudart this process has mapped (torch's), so the reset goes to torch's context."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.rsplit(" ", 1)[-1].strip()
                if "/libcudart.so" in path:
                    return path
    except OSError:
        pass
    return None


class PersistingL2:
    """reset() before each timed block; `how` says which API ("" and `why` when none works)."""

    def __init__(self):
        self.how, self.why = "", ""
        self._limit = self._reset = None
        candidates = []
        loaded = _loaded_cudart()
        if loaded:
            candidates.append(("cudart", loaded))
        candidates += [("cudart", "libcudart.so.12"), ("driver", "libcuda.so.1")]
        errors = []
        for kind, name in candidates:
            try:
                lib = ctypes.CDLL(name)
                if kind == "cudart":
                    limit, reset = lib.cudaDeviceSetLimit, lib.cudaCtxResetPersistingL2Cache
                else:
                    limit, reset = lib.cuCtxSetLimit, lib.cuCtxResetPersistingL2Cache
            except (OSError, AttributeError) as e:
                errors.append(f"{name}: {e}")
                continue
            limit.argtypes, limit.restype = [ctypes.c_int, ctypes.c_size_t], ctypes.c_int
            reset.argtypes, reset.restype = [], ctypes.c_int
            self._limit, self._reset, self.how = limit, reset, kind
            return
        self.why = "; ".join(errors) or "no CUDA runtime found"

    def reset(self) -> bool:
        if self._reset is None:
            return False
        rc_limit = self._limit(PERSISTING_L2_LIMIT, 0)
        rc_reset = self._reset()
        if rc_limit or rc_reset:
            self.why = f"{self.how} returned {rc_limit}/{rc_reset}"
            self._reset = None  # one failure says the API is unusable here; do not retry every block
            return False
        return True

    def status(self) -> str:
        return f"reset before each timed block ({self.how})" if self._reset is not None else f"not reset: {self.why}"
