"""Resources fit: an offer is made only of what is free and allocatable (Mesos'
--min_allocatable_resources); a demand's task fits an agent when every resource it asks for is
free there: ``corral.resources.fits``, the one fit test (the kernel's, shared with the core
and the SDK)."""

from __future__ import annotations

from corral.master.allocator.rules.base import DynamicRule

REASON_NO_FREE = "no free resources"


def insufficient(resource: str) -> str:
    return f"insufficient {resource}"


RULE = DynamicRule(
    "resources",
    (REASON_NO_FREE, insufficient("cpus")),
    "free[agent] = capacity - used (charge_table.py); the walk offers what is allocatable "
    "(cycle.py), rooms and has_room test a shape column by column (rooms.py)",
)
