"""Roles' quotas and reservations: a role's limit caps what its frameworks are offered, the
headroom kept for other roles' unmet guarantees caps the unreserved part, and an agent's
reservation for a role is offered to that role's frameworks alone."""

from __future__ import annotations

from corral.master.allocator.rules.base import DynamicRule

REASON_HEADROOM = "headroom kept for unmet guarantees"


def limit_reason(resource: str) -> str:
    return f"quota limit {resource} reached"


RULE = DynamicRule(
    "quota and reservations",
    (limit_reason("cpus"), REASON_HEADROOM),
    "quota.py: a role's consumption, limit and headroom per cycle; reservations.py: reserved "
    "free per (agent, role); the walk clips each offer by them",
)
