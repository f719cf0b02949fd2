"""A suppressed framework (its own SUPPRESS, disconnected, wanting nothing by its demands, or at
its bound of unacknowledged statuses) is offered nothing. A framework condition, set by
``Allocator.set_suppressed``. Rooms do not ask it: a waiting gang's framework is suppressed
from the regular cycle on purpose, and its bundle is still cut (master/core/gangs.py)."""

from __future__ import annotations

from corral.master.allocator.rules.base import DynamicState, Mask, Scope
from corral.master.allocator.rules.facts import DynamicFacts

REASON = "suppressed"
CONDITION = "suppressed"


class Suppression:
    name = "suppression"
    reasons = (REASON,)
    scope: Scope = "framework"
    in_rooms = False

    def blocks(self, facts: DynamicFacts) -> bool:
        return CONDITION in facts.framework_conditions

    def array_form(self, state: DynamicState, now: float) -> Mask:
        return state.framework_condition(CONDITION)


RULE = Suppression()
