"""Attribute constraints a framework asked for (equals, in, exists) on an agent's attributes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from corral.master.allocator.options import constraint_reason
from corral.placement import AttributeConstraint


def unmet(constraints: Sequence[AttributeConstraint], attributes: Mapping[str, str]) -> list[str]:
    """Reason strings of the constraints the attributes do not meet (empty: all met)."""
    return [constraint_reason(c) for c in constraints if not c.matches(attributes)]
