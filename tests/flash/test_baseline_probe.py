"""Baselines are checked on a small probe before they are timed (runs on the CPU).

The probe guards against timing a library that computes a different function, e.g. SDPA's
`is_causal`, which is top-left aligned when s_q != s_k while the task is bottom-right.
"""

from __future__ import annotations

import pytest
import torch

from ks_tui.harness import gpu_baselines
from ks_tui.harness.gpu_baselines import Unavailable, _verified


def _params(**kw):
    p = dict(b=1, s_q=64, s_k=256, h_q=4, h_kv=2, d=64, causal=True, dtype="bf16")
    p.update(kw)
    p["scale"] = p["d"] ** -0.5
    return p


def _inputs(p):
    gen = torch.Generator().manual_seed(0)
    return {n: torch.randn((p["b"], s, h, p["d"]), generator=gen).to(torch.bfloat16)
            for n, s, h in (("q", p["s_q"], p["h_q"]), ("k", p["s_k"], p["h_kv"]),
                            ("v", p["s_k"], p["h_kv"]))}


def _sdpa_cpu(mask: str):
    """The baselines' own SDPA wrapper, on torch's math backend (it runs on the CPU)."""
    lower_right = mask == "lower_right"
    return lambda inputs, p: gpu_baselines._sdpa("MATH", inputs, p, lower_right_bias=lower_right)


@pytest.fixture(autouse=True)
def fresh_probe_cache():
    gpu_baselines._probe_cache.clear()
    yield
    gpu_baselines._probe_cache.clear()


@pytest.mark.slow
def test_bottom_right_library_passes_the_probe():
    p = _params()
    call = _verified("cpu_lower_right", _sdpa_cpu("lower_right"), _inputs(p), p)
    out = call()
    # [b, s, h, d] like the kernel's output, as a view of SDPA's [b, h, s, d] result
    assert out.shape == (1, 64, 4, 64) and torch.isfinite(out.float()).all()


def test_top_left_library_is_reported_unavailable():
    p = _params()
    with pytest.raises(Unavailable, match="wrong answer on a probe"):
        _verified("cpu_top_left", _sdpa_cpu("top_left"), _inputs(p), p)


def test_top_left_is_fine_when_lengths_are_equal():
    p = _params(s_q=256)
    _verified("cpu_top_left_square", _sdpa_cpu("top_left"), _inputs(p), p)


def test_library_error_becomes_the_reason():
    def refuses(inputs, p):
        raise RuntimeError("No available kernel. Aborting execution.\nmore detail")

    p = _params()
    with pytest.raises(Unavailable, match="RuntimeError: No available kernel"):
        _verified("cpu_refuses", refuses, _inputs(p), p)


@pytest.mark.parametrize("name, modules, said", [("fa2", ["flash_attn"], "not importable"),
                                                 ("fa3", ["flash_attn_interface", "fa3_fwd_interface"],
                                                  "FA3 not installed")])
def test_missing_packages_say_so(name, modules, said):
    import importlib.util

    for module in modules:
        if importlib.util.find_spec(module) is not None:
            pytest.skip(f"{module} is installed here")
    p = _params()
    with pytest.raises(Unavailable, match=said):
        gpu_baselines.BASELINES[name](_inputs(p), p)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU message")
@pytest.mark.parametrize("name", ["sdpa_cudnn", "sdpa_flash"])
def test_sdpa_without_a_gpu_says_so(name):
    p = _params()
    with pytest.raises(Unavailable, match="no CUDA device"):
        gpu_baselines.BASELINES[name](_inputs(p), p)
