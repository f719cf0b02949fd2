"""Refuse filters: a framework that declined an agent's offer (or left part of one unused) is
not offered that agent again before the filter's expiry, unless the agent's free resources grow
past what was refused."""

from __future__ import annotations

from corral.master.allocator.rules.base import DynamicRule

REASON = "refuse filter"


def blocks(until: float, now: float) -> bool:
    """The scalar predicate: a filter on the pair holds at ``now``."""
    return now < until


RULE = DynamicRule(
    "refuse filters",
    (REASON,),
    "masks/filters.py: FilterMatrix keeps until[agent, framework] and its swept view active[], "
    "lifted early by refuse_filters.py when the agent grows; walks read active[], rooms until[]",
)
