"""Taints: a NoSchedule (or NoExecute) taint the framework does not tolerate blocks the agent;
a PreferNoSchedule one only puts the framework after the tolerant ones for that agent."""

from __future__ import annotations

from collections.abc import Sequence

from corral.master.allocator.options import taint_reason
from corral.placement import Taint, TaintEffect, Toleration, untolerated


def blocking(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> list[str]:
    """Reason strings of the hard taints not tolerated (empty: not blocked)."""
    hard = [t for t in taints if t.effect is not TaintEffect.PREFER_NO_SCHEDULE]
    return [taint_reason(t) for t in untolerated(hard, tolerations)]


def prefers_not(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> bool:
    soft = [t for t in taints if t.effect is TaintEffect.PREFER_NO_SCHEDULE]
    return bool(untolerated(soft, tolerations))
