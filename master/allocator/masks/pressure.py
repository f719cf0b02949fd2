"""Memory pressure: an agent whose available memory is below one of its eviction thresholds
(agent/core/pressure.py) is offered to no framework that wants only BestEffort work (its unmet
demands all ask for no cpus and no mem), as Kubernetes' ``node.kubernetes.io/memory-pressure``
``NoSchedule`` taint, which every pod but a BestEffort one tolerates. New BestEffort work would
add to the pressure and be the first evicted; work with a request is placed as usual (the
agent evicts by usage over request, not by arrival).

The agent's condition and the framework's wish change at run time (usage reports, demands):
both are part of the placement signatures (placement.py), so a change re-evaluates one row or
one column, and the compiled walks read ``placement.ok`` as before. Accepts check the same rule
per task (master/core/accepts.py), explain per demand (master/core/demands.py).
"""

from __future__ import annotations

from corral.master.allocator.options import REASON_PRESSURE

REASON = REASON_PRESSURE


def blocking(under_pressure: bool, besteffort_only: bool) -> list[str]:
    """The reason (empty: not blocked) that keeps the framework off the agent."""
    if under_pressure and besteffort_only:
        return [REASON]
    return []
