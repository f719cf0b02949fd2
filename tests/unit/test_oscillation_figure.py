"""The autoscaler-oscillation scenario's ``oscillations`` figure, from the autoscaler's events."""

from __future__ import annotations

from typing import Any

from corral.scenarios.autoscaler_oscillation import oscillations


def up(at: float, demand: str, group: str = "gpu") -> dict[str, Any]:
    msg = f"group {group}: +1 node ({group}-{at:g}) for 1 task (expander random)"
    return {"reason": "TriggeredScaleUp", "subject": demand, "message": msg, "at": at}


def down(at: float, group: str = "gpu") -> dict[str, Any]:
    msg = f"node {group}-x of group {group} (agent A1) removed"
    return {"reason": "ScaleDown", "subject": f"{group}-x", "message": msg, "at": at}


def test_a_scale_down_between_two_scale_ups_of_one_group_for_one_demand_is_one() -> None:
    assert oscillations([up(1, "t/w"), down(2), up(3, "t/w")]) == 1
    assert oscillations([up(1, "t/w"), down(2), up(3, "t/w"), down(4), up(5, "t/w")]) == 2
    # Event order is by time, not by list order.
    assert oscillations([up(3, "t/w"), down(2), up(1, "t/w")]) == 1


def test_other_sequences_are_not() -> None:
    assert oscillations([up(1, "t/w")]) == 0
    assert oscillations([up(1, "t/w"), up(2, "t/w")]) == 0  # no scale-down between
    assert oscillations([up(1, "t/w"), down(2), up(3, "t/other")]) == 0  # another demand
    assert oscillations([up(1, "t/w"), down(2, "cpu"), up(3, "t/w")]) == 0  # another group
    assert oscillations([down(1), up(2, "t/w")]) == 0  # nothing was scaled up for it before
