"""A suppressed framework (its own SUPPRESS, disconnected, wanting nothing by its demands, or at
its bound of unacknowledged statuses) is offered nothing."""

from __future__ import annotations

from corral.master.allocator.rules.base import DynamicRule

REASON = "suppressed"


def blocks(alive: bool, suppressed: bool) -> bool:
    return not alive or suppressed


RULE = DynamicRule(
    "suppression",
    (REASON,),
    "DrfAllocator.fw_active[framework] = alive & ~suppressed: inactive frameworks are left out "
    "of the DRF order",
)
