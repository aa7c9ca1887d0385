"""contention.idle_reading: the GPU's after-timing reading, taken early when it shows an idle GPU, else after a
whole sample period of this run's idleness (a clock and a reading sequence stand in for time and nvidia-smi)."""

from __future__ import annotations

from ks_tui.harness.contention import idle_reading


class Clock:
    def __init__(self):
        self.now, self.sleeps = 100.0, []

    def __call__(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.sleeps.append(s)
        self.now += s


def reader(values, clock, per_read_s=0.05):
    values, seen = list(values), []

    def read():
        clock.now += per_read_s  # nvidia-smi takes a moment
        v = values.pop(0) if len(values) > 1 else values[0]
        seen.append((round(clock.now - 100.0, 3), v))
        return None if v is None else {"00000000:19:00.0": v}
    return read, seen


def test_a_zero_ends_the_wait_early():
    clock = Clock()
    read, seen = reader([35, 8, 0], clock)
    assert idle_reading(read, "00000000:19:00.0", 100.0, idle_s=1.1, poll_s=0.15, clock=clock,
                        sleep=clock.sleep) == 0
    assert len(seen) == 3 and clock.now - 100.0 < 1.1


def test_a_busy_gpu_is_reported_only_after_a_whole_idle_period():
    clock = Clock()
    read, seen = reader([60], clock)
    got = idle_reading(read, "00000000:19:00.0", 100.0, idle_s=1.1, poll_s=0.15, clock=clock, sleep=clock.sleep)
    assert got == 60
    # the reading that counts was started once this run had been idle for idle_s, as the fixed wait did
    assert max(t for t, _ in seen) >= 1.1 and all(s <= 0.15 + 1e-9 for s in clock.sleeps)


def test_without_nvidia_smi_nothing_is_waited_for():
    clock = Clock()
    read, seen = reader([None], clock)
    assert idle_reading(read, None, 100.0, clock=clock, sleep=clock.sleep) is None
    assert clock.sleeps == [] and len(seen) == 1


def test_an_idle_gpu_at_the_first_read_costs_no_sleep():
    clock = Clock()
    read, _ = reader([0], clock)
    assert idle_reading(read, None, 100.0, clock=clock, sleep=clock.sleep) == 0  # the only GPU
    assert clock.sleeps == []
