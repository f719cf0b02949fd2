"""The agent's sandbox collection policy (agent/core/sandbox_gc.py): in use is kept, the rest
goes after an age that shrinks as the disk fills (Mesos' gc_delay and gc_disk_headroom)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from corral.agent.core.sandbox_gc import WEEK, GcPolicy, Sandbox

DAY = 24 * 3600.0


def test_the_age_allowed_shrinks_as_the_disk_fills() -> None:
    p = GcPolicy()  # a week, 0.1 headroom: Mesos' defaults
    assert p.max_age(0.0) == pytest.approx(0.9 * WEEK)
    assert p.max_age(0.45) == pytest.approx(0.45 * WEEK)  # about three days
    assert p.max_age(0.9) == 0.0
    assert p.max_age(1.0) == 0.0  # never negative


def test_old_sandboxes_go_oldest_first_and_one_in_use_stays_however_old() -> None:
    p = GcPolicy(delay=DAY, headroom=0.0)
    now = 10 * DAY
    boxes = [
        Sandbox("fw/new", now - 3600),
        Sandbox("fw/old", now - 2 * DAY),
        Sandbox("fw/older", now - 5 * DAY),
        Sandbox("fw/running", now - 9 * DAY),
    ]
    due = p.due(boxes, in_use={"fw/running"}, used=0.0, now=now)
    assert [s.path for s in due] == ["fw/older", "fw/old"]


def test_a_full_disk_keeps_only_sandboxes_in_use() -> None:
    p = GcPolicy(delay=WEEK, headroom=0.1)
    now = 1000.0
    boxes = [Sandbox("a", now), Sandbox("b", now - 1), Sandbox("c", now - 1)]
    assert [s.path for s in p.due(boxes, {"c"}, used=0.95, now=now)] == ["b", "a"]


@pytest.mark.parametrize(("delay", "headroom"), [(-1, 0.1), (float("nan"), 0.1), (1, 1.5)])
def test_bad_settings_are_refused(delay: float, headroom: float) -> None:
    with pytest.raises(ValueError):
        GcPolicy(delay=delay, headroom=headroom)


@given(
    ages=st.lists(st.floats(0, 30 * DAY), max_size=20),
    used=st.floats(0, 1),
    in_use=st.sets(st.integers(0, 19)),
)
def test_due_is_exactly_the_unused_sandboxes_past_the_age_allowed(
    ages: list[float], used: float, in_use: set[int]
) -> None:
    p = GcPolicy(delay=WEEK, headroom=0.1)
    now = 100 * DAY
    boxes = [Sandbox(str(i), now - age) for i, age in enumerate(ages)]
    using = {str(i) for i in in_use}
    due = {s.path for s in p.due(boxes, using, used, now)}
    for s in boxes:
        assert (s.path in due) == (s.path not in using and now - s.last_write >= p.max_age(used))
