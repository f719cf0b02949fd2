"""The cost of demands that cannot fit, bounded (issue #30, item 6: 5,000 demands that fit
nowhere, 5 frameworks x 1,000, made a tick take 11 s; here 89 s at 1,000 agents with lower-
priority tasks to preempt).

Three passes of the allocation tick look at every pending demand and walk the agents for each:
preemption's victim search (nominations.py), the gang cut (allocation_tick.py) and the
why-pending scan (pending.py). Rules they share:
1. **Never fits.** A shape larger, in any resource, than every attached agent's total cannot be
   placed even by preempting everything: it costs one comparison (``Largest``, recomputed only
   when an agent is attached or detached).
2. **Once per shape.** Within one pass, demands that the same (framework, shape, own
   constraints, own tolerations, class value) describe have the same answer; a pass that found
   nothing for one skips the rest (``failed``).
3. **A budget per tick, in fair rotation.** Each pass spends at most its budget a tick
   (``PREEMPTION_AGENT_VISITS`` and ``PREEMPTION_SEARCHES``, ``GANG_BUDGET``, ``SCAN_BUDGET``);
   demands are taken with the framework least recently served first, then its demand least
   recently evaluated (``Rotation``), so a framework with one demand is not starved by one
   with a thousand, and every demand is evaluated within ``pending / budget`` ticks. Higher
   classes still go first where the pass's own rule orders by class (preemption, gangs);
   rotation orders within a class.
4. **Incremental.** Preemption's search looks only at the agents where a task of the shape
   would fit with every lower-class task gone (task_sums.py, kept as tasks start and end): one
   array expression over every agent, so a demand that fits nowhere costs no walk at all.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TypeVar

from corral.master.core.demand_bounds import Largest as Largest
from corral.master.core.demand_bounds import Rotation as Rotation
from corral.master.core.types import Demand

# Agents preemption's victim searches may look at in a tick (a search started is finished): at
# 10,000 agents, two searches; each visit costs a few microseconds.
PREEMPTION_AGENT_VISITS = 20_000
PREEMPTION_SEARCHES = 64  # and searches a tick (each at least one array expression)
GANG_BUDGET = 64  # gang cuts a tick that find nothing (each a room over the agents)
SCAN_BUDGET = 256  # why-pending fast tests and gang explanations per scan


def shape_key(framework_id: str, d: Demand, value: int) -> Hashable:
    """Rule 2: what decides a pass's answer for a demand, besides the cluster."""
    return (framework_id, d.resources.scalars(), d.constraints, d.tolerations, value)


T = TypeVar("T")
