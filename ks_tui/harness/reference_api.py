"""The contract between a task's reference.py and the harness (standard library only).

A task's reference module is a plugin: the harness imports it in the child process and
calls the functions below. `TaskReference` spells the contract out with a docstring per
member; `check_reference` validates a loaded module against it, so a task with a missing
or misspelt function fails at load time with one line naming what is missing (exit 2), not
halfway through a run.

A baseline factory may raise `Unavailable("why")` when that baseline cannot run a scenario
(library missing, shape unsupported); the harness records the reason and times the others.
Task libraries (e.g. `ks_tui.tasklib.attention`) supply ready-made implementations.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Protocol, runtime_checkable

# Params are the scenario's values from task.yaml (grid keys plus derived ones); tensors are
# torch tensors, left as Any so this module stays importable without torch.
Params = Mapping[str, Any]
Inputs = dict[str, Any]
BaselineFactory = Callable[[Inputs, Params], Callable[[], Any]]


class Unavailable(Exception):
    """A baseline cannot run this scenario; the message says why."""


@runtime_checkable
class TaskReference(Protocol):
    """What a task's reference.py defines. The first four are required."""

    def make_inputs(self, p: Params, gen: Any, device: str) -> Inputs:
        """Fresh random input tensors for scenario params `p`, drawn from the torch.Generator
        `gen` on `device` ("cpu" or "cuda"). Never all zeros: a kernel that writes nothing must
        not pass by luck. The harness calls it for every draw with a new seed."""
        ...

    def make_output(self, p: Params, inputs: Inputs) -> Any:
        """The output buffer the kernel writes (a tensor). The harness fills it with NaN before
        every call, so an element the kernel never wrote fails the check."""
        ...

    def call_kernel(self, fn: Any, inputs: Inputs, out: Any, p: Params, stream: int) -> int:
        """Call the compiled entry point `fn` (a ctypes function) with the task's ABI and
        return its return code (0 = ok; anything else means "unsupported shape"). `stream` is
        the CUDA stream as an integer (0 on the CPU). Set `fn.argtypes` here."""
        ...

    def reference(self, inputs: Inputs, p: Params) -> Any:
        """The right answer in a higher precision than the inputs (fp64 for fp32 inputs, fp32
        for bf16/fp16). Must not modify `inputs`. Compute in chunks when a full intermediate
        would not fit in memory."""
        ...


# Optional members, checked only when present.
OPTIONAL_DOCS = {
    "reference_lowp": "reference_lowp(inputs, p) -> Tensor: the same answer computed in the input "
                      "precision; needed by the lowp_relative tolerance rule.",
    "BASELINES": "BASELINES: dict[name, factory(inputs, p) -> zero-argument callable]: library "
                 "code timed beside the kernel; a factory raises Unavailable('why') to skip.",
    "BASELINE_GROUPS": "BASELINE_GROUPS: list of lists of baseline names that share process-wide state and so "
                       "must not run side by side; the libraries' first calls, made while the kernel compiles "
                       "and is checked, run one thread per group and per other baseline (harness/warmup.py). "
                       "Without it, all baselines warm up on one thread.",
    "shape_of": "shape_of(p) -> dict: the params shown as a scenario's shape in results.",
    "extra_limits": "extra_limits(p, device_info) -> dict[name, ms]: limits beyond FLOPs and bytes "
                    "for the speed of light (e.g. attention's exponentials); docs/harness.md.",
}

REQUIRED = tuple(n for n in TaskReference.__dict__ if not n.startswith("_") and callable(TaskReference.__dict__[n]))
OPTIONAL = tuple(OPTIONAL_DOCS)


def check_reference(module: Any, where: str = "reference.py") -> list[str]:
    """Problems with a loaded reference module against the contract ([] when it conforms).

    Each is one line naming the member and `where` (the file)."""
    problems = []
    missing = [n for n in REQUIRED if not callable(getattr(module, n, None))]
    if missing:
        problems.append(f"{where}: missing {', '.join(missing)} (see docs/task-format.md)")
    for name in ("reference_lowp", "shape_of", "extra_limits"):
        value = getattr(module, name, None)
        if value is not None and not callable(value):
            problems.append(f"{where}: {name} must be a function")
    baselines = getattr(module, "BASELINES", None)
    if baselines is not None:
        if not isinstance(baselines, Mapping):
            problems.append(f"{where}: BASELINES must be a dict of name -> factory(inputs, p)")
        else:
            bad = [str(k) for k, v in baselines.items() if not callable(v)]
            if bad:
                problems.append(f"{where}: BASELINES[{', '.join(bad)}] must be callable")
    groups = getattr(module, "BASELINE_GROUPS", None)
    if groups is not None and not (isinstance(groups, (list, tuple)) and all(
            isinstance(g, (list, tuple)) and all(isinstance(n, str) for n in g) for g in groups)):
        problems.append(f"{where}: BASELINE_GROUPS must be a list of lists of baseline names")
    return problems
