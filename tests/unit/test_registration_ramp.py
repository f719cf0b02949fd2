"""The simulated agents' start ramp (agent/registration_ramp.py): time is an argument."""

from __future__ import annotations

import pytest

from corral.agent.registration_ramp import RegistrationRamp


def test_starts_a_window_then_one_per_acknowledgement_in_slow_start() -> None:
    ramp = RegistrationRamp(total=100, window=4, min_window=2, max_window=64, target=1.0)
    assert list(ramp.to_start(0.0)) == [0, 1, 2, 3]
    assert list(ramp.to_start(0.1)) == [], "the window is full: nothing more starts"
    ramp.acknowledged(0, 0.2)  # quick: the window grows by one (slow start)
    assert ramp.window == 5
    assert list(ramp.to_start(0.2)) == [4, 5], "one slot freed, one more in the window"
    assert ramp.in_flight == 5 and ramp.registered == 1


def test_a_slow_answer_halves_the_window_once_per_target() -> None:
    ramp = RegistrationRamp(total=100, window=16, min_window=2, max_window=64, target=1.0)
    started = list(ramp.to_start(0.0))
    ramp.acknowledged(started[0], 2.0)  # 2 s from start to REGISTERED: the master queues
    assert ramp.window == 8
    ramp.acknowledged(started[1], 2.5)  # the same queue, seen again within target: no cut
    assert ramp.window == 8
    ramp.acknowledged(started[2], 3.1)
    assert ramp.window == 4
    # After a cut the window grows by 1/window per quick answer (no more slow start).
    assert list(ramp.to_start(3.1)) == []  # 13 still in flight, above the window of 4
    ramp.acknowledged(started[3], 3.2)  # 3.2 s after its start: slow, but within target of cut
    assert ramp.window == 4


def test_growth_after_the_first_cut_is_one_per_window_of_answers() -> None:
    ramp = RegistrationRamp(total=1000, window=8, min_window=2, max_window=64, target=1.0)
    first = list(ramp.to_start(0.0))
    for i in first:
        ramp.acknowledged(i, 5.0)  # all slow: one cut, 8 -> 4
    assert ramp.window == 4
    now = 5.0
    for _ in range(4):  # four quick answers: about one more in flight, not four
        (i,) = ramp.to_start(now)[:1]
        ramp.acknowledged(i, now + 0.1)
        now += 0.1
    assert 4.9 < ramp.window < 5.0, ramp.window  # 4 + 1/4 + 1/4.25 + 1/4.49 + 1/4.71


def test_window_stays_within_its_bounds() -> None:
    ramp = RegistrationRamp(total=10_000, window=4, min_window=4, max_window=6, target=1.0)
    now = 0.0
    for _ in range(50):
        for i in ramp.to_start(now):
            ramp.acknowledged(i, now)
        now += 0.01
    assert ramp.window == 6, "quick answers grow the window to its maximum, not beyond"
    for _ in range(5):
        now += 2.0
        for i in ramp.to_start(now - 2.0):
            ramp.acknowledged(i, now)
    assert ramp.window == 4, "slow answers cut it to its minimum, not below"


def test_an_agent_never_answered_stalls_and_frees_its_slot() -> None:
    ramp = RegistrationRamp(total=3, window=2, min_window=1, max_window=8, stall=30.0)
    assert list(ramp.to_start(0.0)) == [0, 1]
    ramp.acknowledged(1, 0.5)
    assert list(ramp.to_start(0.5)) == [2]
    assert ramp.next_expiry() == 30.0, "agent 0, started at 0, stalls at 30"
    ramp.expire(29.9)
    assert ramp.in_flight == 2
    ramp.expire(30.0)
    assert ramp.in_flight == 1 and ramp.stalled == 1
    assert ramp.next_expiry() == 30.5
    ramp.acknowledged(0, 31.0)  # it registered after all: not counted twice, nothing breaks
    assert ramp.registered == 1 and ramp.in_flight == 1
    ramp.acknowledged(2, 31.0)
    assert ramp.done and ramp.registered == 2 and ramp.in_flight == 0
    assert ramp.next_expiry() is None


def test_a_reregistration_is_not_an_acknowledgement() -> None:
    ramp = RegistrationRamp(total=2, window=1, min_window=1, max_window=4)
    assert list(ramp.to_start(0.0)) == [0]
    ramp.acknowledged(0, 0.1)
    window = ramp.window
    ramp.acknowledged(0, 50.0)  # agent 0 lost its stream and registered again: ignored
    assert ramp.window == window and ramp.registered == 1


def test_never_starts_more_than_total() -> None:
    ramp = RegistrationRamp(total=3, window=64)
    assert list(ramp.to_start(0.0)) == [0, 1, 2]
    assert ramp.done and list(ramp.to_start(1.0)) == []


@pytest.mark.parametrize(("window", "low", "high"), [(4, 8, 16), (0.5, 0.5, 4), (32, 8, 16)])
def test_bad_bounds_are_refused(window: float, low: float, high: float) -> None:
    with pytest.raises(ValueError, match="window"):
        RegistrationRamp(total=1, window=window, min_window=low, max_window=high)
