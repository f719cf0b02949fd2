"""Topology spread (a demand's ``spread``: max_skew over a topology key): a domain already
``max_skew`` tasks above the least-loaded one takes no more of the demand's tasks. Not the
allocator's to apply (offers are per framework, and a framework places its own tasks by spread:
sdk.Placer); the master's why-pending scan and explain count it per domain
(master/core/spread.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from corral.master.allocator.rules.base import Scope
from corral.placement import TopologySpread

# The predicate is the spread rule's own: ``TopologySpread.blocked(domain, counts, fewest)``
# (corral/placement.py), asked once per domain value, not per agent.
blocked = TopologySpread.blocked


class Spread:
    name = "spread"
    reasons = ("spread: zone=a would exceed max_skew 1", "spread: no attribute zone")  # examples
    scope: Scope = "tasks"
    array_form: Callable[..., Any] = staticmethod(blocked)


RULE = Spread()
