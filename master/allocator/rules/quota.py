"""Roles' quotas and reservations: a role's limit caps what its frameworks are offered, the
headroom kept for other roles' unmet guarantees caps the unreserved part, and an agent's
reservation for a role is offered to that role's frameworks alone.

An offer rule: it sizes each offer rather than close agents. ``offer`` is its arithmetic for
one agent (reference.py's OFFER SIZE), which the reference and the numpy allocator's explain and
rooms call (quota.py computes its inputs: consumption, limit, allowance); the general walk
kernel does the same arithmetic inline, per offer, operation for operation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from corral.master.allocator.rules.base import Scope

REASON_HEADROOM = "headroom kept for unmet guarantees"


def limit_reason(resource: str) -> str:
    return f"quota limit {resource} reached"


def offer(
    unreserved: Sequence[float],
    reserved: Sequence[float],
    remaining: Sequence[float],
    allowance: Sequence[float],
) -> list[float]:
    """What an agent offers a framework: its role's free reservation there (``reserved``) plus
    the least of the agent's unreserved free, what the role's limit leaves (``remaining``) and
    what the headroom allows it (``allowance``), per resource."""
    return [
        r + min(u, q, w)
        for u, r, q, w in zip(unreserved, reserved, remaining, allowance, strict=True)
    ]


class Quota:
    name = "quota and reservations"
    reasons = (limit_reason("cpus"), REASON_HEADROOM)  # a family, by example
    scope: Scope = "offer"
    array_form: Callable[..., Any] = staticmethod(offer)


RULE = Quota()
