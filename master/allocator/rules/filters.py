"""Refuse filters: a framework that declined an agent's offer (or left part of one unused) is
not offered that agent again before the filter's expiry, unless the agent's free resources grow
past what was refused (masks/filters.py keeps them, refuse_filters.py installs and lifts
them)."""

from __future__ import annotations

from corral.master.allocator.rules.base import DynamicState, Mask, Scope
from corral.master.allocator.rules.facts import DynamicFacts

REASON = "refuse filter"


class Filters:
    name = "refuse filters"
    reasons = (REASON,)
    scope: Scope = "pair"
    in_rooms = True

    def blocks(self, facts: DynamicFacts) -> bool:
        """A filter on the pair holds at ``now``."""
        return facts.now < facts.filter_until

    def array_form(self, state: DynamicState, now: float) -> Mask:
        """``until > now`` over every pair: the swept boolean view itself while it is current
        (the consumers sweep first, ``eligibility.sweep``), else computed."""
        filters = state.filters
        if filters.current(now):
            return filters.active
        return filters.until > now


RULE = Filters()
