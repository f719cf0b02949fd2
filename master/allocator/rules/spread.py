"""Topology spread (a demand's ``spread``: max_skew over a topology key): a domain already
``max_skew`` tasks above the least-loaded one takes no more of the demand's tasks."""

from __future__ import annotations

from corral.master.allocator.rules.base import DynamicRule
from corral.placement import TopologySpread

# The scalar predicate is the spread rule's own: ``TopologySpread.blocked(domain, counts,
# fewest)`` (corral/placement.py), whose reasons are these, by example.
blocked = TopologySpread.blocked

RULE = DynamicRule(
    "spread",
    ("spread: zone=a would exceed max_skew 1", "spread: no attribute zone"),
    "no array form in the allocator: offers are per framework, and a framework places its own "
    "tasks by spread (sdk.Placer); the master's why-pending scan and explain count it per "
    "domain (master/core/spread.py)",
)
