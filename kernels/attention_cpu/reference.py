"""Reference for attention_cpu: fp32 attention on the CPU, checked against an fp64 answer."""

from ks_tui.tasklib.attention.helpers import CPU_BASELINES, make_inputs, make_output, reference, shape_of
from ks_tui.tasklib.attention.helpers import call_cpu as call_kernel

BASELINES = CPU_BASELINES

__all__ = ["make_inputs", "make_output", "call_kernel", "reference", "shape_of", "BASELINES"]
