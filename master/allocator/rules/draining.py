"""Draining agents (an operator's maintenance, or the launch bound of admission.py) are offered
to nobody: their resources are on their way out or spoken for."""

from __future__ import annotations

from corral.master.allocator.rules.base import DynamicRule

REASON = "agent draining"


def blocks(draining: bool) -> bool:
    return draining


RULE = DynamicRule(
    "draining",
    (REASON,),
    "DrfAllocator.draining[agent]: draining agents are dropped from the candidates before any "
    "walk, and from rooms",
)
