"""Attention forward: inputs, the chunked reference, both kernel ABIs and library baselines.

`helpers` holds what every attention task needs (CPU and GPU); `baselines` holds the GPU
library baselines (SDPA backends, FlashAttention 2/3/4), probed before they are timed.
Import the submodules directly: `baselines` needs a CUDA-capable torch to be useful.
"""

from ks_tui.tasklib.attention.helpers import (  # noqa: F401
    CPU_BASELINES,
    call_cpu,
    call_gpu,
    dtype_of,
    make_inputs,
    make_output,
    reference,
    reference_lowp,
    scale_of,
    sdpa_args,
    sdpa_baseline,
    shape_of,
)
