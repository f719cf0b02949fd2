"""Resources fit: an offer is made only of what is free and allocatable (Mesos'
--min_allocatable_resources); a demand's task fits an agent when every resource it asks for is
free there."""

from __future__ import annotations

from collections.abc import Sequence

from corral.master.allocator.rules.base import DynamicRule

REASON_NO_FREE = "no free resources"
EPSILON = 1e-9


def insufficient(resource: str) -> str:
    return f"insufficient {resource}"


def fits(free: Sequence[float], shape: Sequence[float]) -> bool:
    """One task of ``shape`` fits ``free`` (a resource not asked for is not looked at)."""
    return all(need <= 0 or f >= need - EPSILON for f, need in zip(free, shape, strict=True))


RULE = DynamicRule(
    "resources",
    (REASON_NO_FREE, insufficient("cpus")),
    "free[agent] = capacity - used (charge_table.py); the walk offers what is allocatable "
    "(cycle.py), rooms and has_room test a shape column by column (rooms.py)",
)
