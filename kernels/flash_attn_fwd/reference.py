"""Reference for flash_attn_fwd: the shared attention helpers, wired to the GPU kernel ABI.

Inputs are standard-normal q, k, v in the scenario's dtype, [b, s, h, d]. The answer is
attention computed in fp32 from those same rounded inputs, in blocks of query rows so that
a 32k x 32k score matrix never exists; the low-precision answer (same inputs, matmuls in
bf16/fp16) sets the error bound of the FlashAttention rule. Baselines: torch SDPA (cuDNN and
flash backends) and the FlashAttention packages when installed. `extra_limits` adds the
exponentials' throughput to the speed of light (docs/harness.md).
"""

from ks_tui.tasklib.attention.helpers import extra_limits, make_inputs, make_output, reference, reference_lowp
from ks_tui.tasklib.attention.helpers import call_gpu as call_kernel
from ks_tui.tasklib.attention.baselines import BASELINE_GROUPS, BASELINES

__all__ = ["make_inputs", "make_output", "call_kernel", "reference", "reference_lowp", "BASELINES", "BASELINE_GROUPS",
           "extra_limits"]
