"""Reference outputs computed while the compiler runs (child process, torch).

A cold run spends its first seconds in the compiler, with the device idle. The inputs of every
correctness draw are fixed by (seed, scenario id, draw), so the references the check will need can be
computed then: each scenario's draws, in the order the check takes them, kept on the task's device up to a
memory budget (a quarter of the free device memory; 1 GiB on the CPU; KS_REF_PREFETCH_BYTES overrides,
KS_REF_PREFETCH=0 turns it off). The compile's end stops it.

The check then regenerates the inputs exactly as it always did (the kernel is called on buffers made at
that moment), and takes a prefetched reference only when a fingerprint of those inputs equals the one the
reference was computed from; anything else (a reference module that draws differently, a budget that ran
out) is computed as before. The judgement itself is unchanged: same rule, same reference values.
"""

from __future__ import annotations

import os
import threading
import time

CPU_BUDGET_BYTES = 1 << 30
DEVICE_SHARE = 0.25


def enabled() -> bool:
    return os.environ.get("KS_REF_PREFETCH", "1").strip().lower() not in ("0", "no", "false", "off")


def finish_all() -> bool:
    """KS_REF_PREFETCH=all: the compile's end waits for every reference (within the budget) instead of stopping
    the prefetch: the same check, with every reference prefetched (how the tests compare the two ways)."""
    return os.environ.get("KS_REF_PREFETCH", "").strip().lower() == "all"


def fingerprint(torch, inputs: dict) -> tuple:
    """What identifies a set of inputs: names, shapes, dtypes and two sums over their bits' values (a plain one
    and one weighted by position), in float64, a slice at a time."""
    out = []
    for name in sorted(inputs):
        t = inputs[name]
        flat = t.detach().reshape(-1)
        plain = weighted = 0.0
        for start in range(0, flat.numel(), 1 << 24):
            part = flat[start:start + (1 << 24)].to(torch.float64)
            w = (torch.arange(start, start + part.numel(), device=part.device, dtype=torch.int64) % 1021 + 1)
            plain += float(part.sum())
            weighted += float((part * w.to(torch.float64)).sum())
        out.append((name, tuple(t.shape), str(t.dtype), plain, weighted))
    return tuple(out)


def _nbytes(refs) -> int:
    return sum(r.numel() * r.element_size() for r in refs if r is not None)


class RefPrefetch:
    """Start with the runner's pieces; stop() when the compiler is done; take() from the check."""

    def __init__(self, torch_import, load_reference, task, scenarios, seed: int, draw_seed, threads: int | None,
                 draws: int | None = None):
        self.task, self.scenarios, self.seed = task, list(scenarios), seed
        self.draws = task.timing.draws if draws is None else draws  # the draws the check takes
        self._torch_import, self._load_reference, self._draw_seed = torch_import, load_reference, draw_seed
        self._threads = threads
        self._stop = threading.Event()
        self._refs: dict[tuple[str, int], tuple] = {}
        self.seconds, self.bytes, self.made, self.used, self.missed = 0.0, 0, 0, 0, 0
        self.stopped_by, self.wait_s = "", 0.0
        self._thread = threading.Thread(target=self._work, name="ks-ref-prefetch", daemon=True)
        self._thread.start()

    # ---------------------------------------------------------------- the thread

    def _work(self) -> None:
        t0 = time.monotonic()
        try:
            self._fill()
        except BaseException as e:  # the check computes whatever is missing, and reports a broken reference itself
            self.stopped_by = f"{type(e).__name__}: {e}"[:200]
        self.seconds = time.monotonic() - t0

    def _fill(self) -> None:
        torch = self._torch_import.result()
        if self._stop.is_set():
            self.stopped_by = "compile finished"
            return
        device = self.task.device
        if device == "cpu" and self._threads:
            torch.set_num_threads(self._threads)
        ref = self._load_reference(self.task)
        env = os.environ.get("KS_REF_PREFETCH_BYTES", "")
        if env.isdigit():
            budget = int(env)
        elif device == "cuda":
            budget = int(torch.cuda.mem_get_info()[0] * DEVICE_SHARE)
        else:
            budget = CPU_BUDGET_BYTES
        lowp = self.task.tolerance["rule"] == "lowp_relative"
        for sc in self.scenarios:
            for draw in range(self.draws):
                if self._stop.is_set():
                    self.stopped_by = self.stopped_by or "compile finished"
                    return
                gen = torch.Generator(device=device)
                gen.manual_seed(self._draw_seed(self.seed, sc.id, draw))
                inputs = ref.make_inputs(sc.params, gen, device)
                refs = (ref.reference(inputs, sc.params), ref.reference_lowp(inputs, sc.params) if lowp else None)
                if self.bytes + _nbytes(refs) > budget:
                    self.stopped_by = "memory budget"
                    return
                key = fingerprint(torch, inputs)
                if device == "cuda":
                    torch.cuda.synchronize()
                self._refs[(sc.id, draw)] = (key, refs)
                self.bytes += _nbytes(refs)
                self.made += 1
        self.stopped_by = "all done"

    # ---------------------------------------------------------------- the runner's side

    def stop(self, finish: bool = False) -> None:
        """The compiler is done: finish the reference in progress, compute no more (finish: compute them all)."""
        t0 = time.monotonic()
        if not finish:
            self._stop.set()
        self._thread.join()
        self.wait_s = time.monotonic() - t0

    def cancel(self) -> None:
        """Compute no more, without waiting for the thread (it ends at its next reference)."""
        self._stop.set()

    def take(self, torch, scenario_id: str, draw: int, inputs: dict):
        """(reference, low-precision reference) for these exact inputs, or None (then compute them)."""
        found = self._refs.pop((scenario_id, draw), None)
        if found is None:
            return None
        key, refs = found
        self.bytes -= _nbytes(refs)
        if fingerprint(torch, inputs) != key:
            self.missed += 1
            return None
        self.used += 1
        return refs

    def timings(self) -> dict:
        return {"ref_prefetch_s": round(self.seconds, 4), "ref_prefetch_wait_s": round(self.wait_s, 4),
                "ref_prefetched": self.made,
                "ref_prefetch_used": self.used, "ref_prefetch_missed": self.missed,
                "ref_prefetch_stop": self.stopped_by}
