"""The kernels' synchronisation protocol, played by scripts/protocol_model.py over random schedules:
every variant of best/*.cu finishes with each output tile stored once, and each deliberately
broken control is caught (a deadlock, an early release, a missing barrier)."""

import importlib.util
import sys
from pathlib import Path

import pytest

from lab.flash_attn_fwd.scripts import protocol_model as model


@pytest.mark.parametrize("variant", model.VARIANTS, ids=lambda v: v.name)
def test_kernel_protocol_has_no_deadlock_or_hazard(variant):
    assert model.check(variant, runs=150, seed=3) is None


@pytest.mark.parametrize("variant", model.CONTROLS, ids=lambda v: v.name)
def test_each_broken_control_is_caught(variant):
    assert model.check(variant, runs=150, seed=3) is not None


def test_mbarrier_parity_rules():
    bar = model.MBar("b", count=2)
    assert bar.done(1) and not bar.done(0)   # a fresh barrier: the phase before 0 counts as done
    bar.arrive()
    assert not bar.done(0)
    bar.expect_tx(16)                        # the last arrival, but 16 bytes still to come
    assert not bar.done(0)
    bar.complete_tx(16)
    assert bar.done(0) and not bar.done(1)
    with pytest.raises(model.ModelError):
        bar.arrive(3)                        # more arrivals than the phase expects


def test_a_multicast_half_may_land_before_the_expect_tx():
    bar = model.MBar("fullK", count=1, negative_tx=True)
    bar.complete_tx(1)                       # the peer CTA's half, before this CTA's producer got here
    assert not bar.done(0)                   # the producer's arrival is still pending
    bar.expect_tx(2)
    assert not bar.done(0)                   # its own half is still in flight
    bar.complete_tx(1)
    assert bar.done(0)
    single = model.MBar("fullK", count=1)    # one CTA: bytes before the expect_tx are a bug
    with pytest.raises(model.ModelError, match="more bytes than expected"):
        single.complete_tx(1)
