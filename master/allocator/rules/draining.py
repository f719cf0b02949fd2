"""Draining agents (an operator's maintenance, or the launch bound of admission.py) are offered
to nobody: their resources are on their way out or spoken for. An agent condition, set by
``Allocator.set_agent_draining``."""

from __future__ import annotations

from corral.master.allocator.rules.base import DynamicState, Mask, Scope
from corral.master.allocator.rules.facts import DynamicFacts

REASON = "agent draining"
CONDITION = "draining"


class Draining:
    name = "draining"
    reasons = (REASON,)
    scope: Scope = "agent"
    in_rooms = True

    def blocks(self, facts: DynamicFacts) -> bool:
        return CONDITION in facts.agent_conditions

    def array_form(self, state: DynamicState, now: float) -> Mask:
        return state.agent_condition(CONDITION)


RULE = Draining()
