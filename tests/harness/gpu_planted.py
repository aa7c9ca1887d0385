"""A tiny CUDA task (y = 2x) and planted kernels for it: honest, out-of-bounds write, shared-memory race,
and one that leaves its work running on a stream of its own. Written into a temporary folder by the GPU
tests (tests/harness/test_gpu_sol.py)."""

from __future__ import annotations

from pathlib import Path

TASK_YAML = """\
name: scale_gpu
description: y = 2 x in fp32 on the GPU (planted-kernel tests)
kernel: kernel.cu
entry: scale
build:
  flags: [-O3, -lineinfo]
reference: reference.py
timeout_s: 600
scenarios:
  list:
    - {n: 4096}
    - {n: 4194304}
  id: "n{n}"
flops: "n"
bytes: "8 * n"
baselines: [torch_mul]
tolerance:
  rule: fp32_relative
timing:
  warmup: 2
  min_reps: 5
  max_reps: 40
  budget_s: 0.05
  rounds: 3
"""

REFERENCE = '''\
"""y = 2 x: the reference, the ABI call and a torch baseline."""
import ctypes

import torch


def make_inputs(p, gen, device):
    return {"x": torch.randn(p["n"], generator=gen, device=device, dtype=torch.float32)}


def make_output(p, inputs):
    return torch.empty_like(inputs["x"])


def call_kernel(fn, inputs, out, p, stream=0):
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
    fn.restype = ctypes.c_int
    return fn(ctypes.c_void_p(inputs["x"].data_ptr()), ctypes.c_void_p(out.data_ptr()), int(p["n"]),
              ctypes.c_void_p(stream))


def reference(inputs, p):
    return inputs["x"].double() * 2


BASELINES = {"torch_mul": lambda inputs, p: (lambda: torch.mul(inputs["x"], 2))}
'''

HEAD = """\
#include <cuda_runtime.h>
"""

ENTRY = """
extern "C" int scale(const float* x, float* y, int n, void* stream) {
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    LAUNCH
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
"""

KERNELS = {
    "honest": ("""
__global__ void scale_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
""", "scale_kernel<<<(n + 255) / 256, 256, 0, s>>>(x, y, n);"),
    # One element past the output: memcheck's out-of-bounds write (the answer itself is right).
    "write_past": ("""
__global__ void write_past(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
    if (i == n - 1) y[n] = 0.0f;
}
""", "write_past<<<(n + 255) / 256, 256, 0, s>>>(x, y, n);"),
    # Each thread reads a slot another warp wrote, with no barrier between: racecheck's hazard. The value
    # read only feeds a comparison that never holds (not even for garbage), so the answer stays right.
    "shared_race": ("""
__global__ void shared_race(const float* x, float* y, int n) {
    __shared__ float s[256];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    s[t] = i < n ? x[i] : 0.0f;
    float other = s[(t + 32) % 256];
    if (i < n) y[i] = 2.0f * s[t] + (other == 3.0e38f ? 1.0f : 0.0f);
}
""", "shared_race<<<(n + 255) / 256, 256, 0, s>>>(x, y, n);"),
    # The work goes to a stream of the kernel's own and the call returns at once: the harness stream's
    # events see nothing of it; the wall clock to the device-wide sync does.
    "side_stream": ("""
__global__ void slow_scale(const float* x, float* y, int n, long long spin_cycles) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    // A busy wait on the SM clock: no compiler can shorten it.
    long long t0 = clock64();
    while (clock64() - t0 < spin_cycles) {}
    if (i < n) y[i] = 2.0f * x[i];
}
static cudaStream_t own = nullptr;
""", """if (!own) cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking);
    (void)s;  // the stream it was given, ignored
    slow_scale<<<(n + 255) / 256, 256, 0, own>>>(x, y, n, 1000000LL);"""),
    # The same, but honest for its first 8 calls (the check's draws and the bench's warm-up): only the timed calls
    # hide their work, where it overlaps the library's calls between them.
    "side_stream_late": ("""
__global__ void slow_scale(const float* x, float* y, int n, long long spin_cycles) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    long long t0 = clock64();
    while (clock64() - t0 < spin_cycles) {}
    if (i < n) y[i] = 2.0f * x[i];
}
static cudaStream_t own = nullptr;
static int calls = 0;
""", """if (!own) cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking);
    slow_scale<<<(n + 255) / 256, 256, 0, ++calls <= 8 ? s : own>>>(x, y, n, 1000000LL);"""),
}


def write_task(folder: Path) -> Path:
    """The task folder (kernels/scale_gpu under `folder`) with the honest kernel as its own."""
    task = folder / "kernels" / "scale_gpu"
    task.mkdir(parents=True)
    (task / "task.yaml").write_text(TASK_YAML)
    (task / "reference.py").write_text(REFERENCE)
    (task / "kernel.cu").write_text(source("honest"))
    return task


def source(kind: str) -> str:
    body, launch = KERNELS[kind]
    return HEAD + body + ENTRY.replace("LAUNCH", launch)


def write_kernels(folder: Path) -> dict[str, Path]:
    out = {}
    for kind in KERNELS:
        path = folder / f"{kind}.cu"
        path.write_text(source(kind))
        out[kind] = path
    return out
