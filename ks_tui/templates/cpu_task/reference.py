"""Reference for {name}: out = alpha * x + y, checked against an fp64 answer.

The contract (one function each, see docs/task-format.md): make_inputs, make_output,
call_kernel, reference, and optionally BASELINES, reference_lowp and shape_of.
"""

import ctypes

import torch


def make_inputs(p: dict, gen: torch.Generator, device: str = "cpu") -> dict:
    """Fresh standard-normal x and y of length n (never all zeros)."""
    n = int(p["n"])
    return {"x": torch.randn(n, generator=gen, device=device),
            "y": torch.randn(n, generator=gen, device=device)}


def make_output(p: dict, inputs: dict) -> torch.Tensor:
    return torch.empty_like(inputs["x"])


def call_kernel(fn, inputs: dict, out: torch.Tensor, p: dict, stream: int = 0) -> int:
    """scale_add(x, y, out, n, alpha) -> int."""
    fn.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64, ctypes.c_float]
    fn.restype = ctypes.c_int
    return fn(inputs["x"].data_ptr(), inputs["y"].data_ptr(), out.data_ptr(), int(p["n"]), float(p["alpha"]))


def reference(inputs: dict, p: dict) -> torch.Tensor:
    """The answer in fp64 from the same fp32 inputs."""
    return float(p["alpha"]) * inputs["x"].double() + inputs["y"].double()


def torch_add(inputs: dict, p: dict):
    """What a user would write in torch: timed beside the kernel by `ks bench`."""
    x, y, alpha = inputs["x"], inputs["y"], float(p["alpha"])
    out = torch.empty_like(x)
    return lambda: torch.add(y, x, alpha=alpha, out=out)


BASELINES = {"torch_add": torch_add}
