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
from itertools import zip_longest
from typing import TYPE_CHECKING, TypeVar

from corral.master.allocator.interface import Scalars
from corral.master.core.types import Demand
from corral.resources import fits

if TYPE_CHECKING:
    from corral.master.core.master import MasterCore

# Agents preemption's victim searches may look at in a tick (a search started is finished): at
# 10,000 agents, two searches; each visit costs a few microseconds.
PREEMPTION_AGENT_VISITS = 20_000
PREEMPTION_SEARCHES = 64  # and searches a tick (each at least one array expression)
GANG_BUDGET = 64  # gang cuts a tick that find nothing (each a room over the agents)
SCAN_BUDGET = 256  # why-pending fast tests and gang explanations per scan


class Largest:
    """Rule 1: the largest total of any attached agent, per resource."""

    def __init__(self) -> None:
        self.version = 0  # bumped by membership.py on every attach and detach
        self._seen = -1
        self._value: Scalars = (0.0, 0.0, 0.0, 0.0)

    def changed(self) -> None:
        self.version += 1

    def get(self, core: MasterCore) -> Scalars:
        if self._seen != self.version:
            top = [0.0, 0.0, 0.0, 0.0]
            for agent in core.agents.values():
                if agent.in_allocator:
                    for k, x in enumerate(agent.spec.resources.scalars()):
                        if x > top[k]:
                            top[k] = x
            self._value = (top[0], top[1], top[2], top[3])
            self._seen = self.version
        return self._value

    def never_fits(self, core: MasterCore, shape: Scalars) -> bool:
        return not fits(self.get(core), shape)


def shape_key(framework_id: str, d: Demand, value: int) -> Hashable:
    """Rule 2: what decides a pass's answer for a demand, besides the cluster."""
    return (framework_id, d.resources.scalars(), d.constraints, d.tolerations, value)


T = TypeVar("T")


class Rotation:
    """Rule 3: when each demand, by (framework id, name), was last fully evaluated."""

    def __init__(self) -> None:
        self.last: dict[tuple[str, str], float] = {}
        self.frameworks: dict[str, float] = {}
        self._turn = 0.0  # breaks ties between demands served at one ``now``

    def order(self, entries: list[tuple[int, str, str, T]]) -> list[T]:
        """Rule 3's order of (class value, framework id, demand name, item): higher classes
        first; within a class, frameworks take turns (the least recently served first), each
        offering its least recently served demand in its turn."""
        by_class: dict[int, dict[str, list[tuple[float, str, T]]]] = {}
        for value, fw_id, name, item in entries:
            by_class.setdefault(value, {}).setdefault(fw_id, []).append(
                (self.since(fw_id, name), name, item)
            )
        out: list[T] = []
        never = -float("inf")
        for value in sorted(by_class, reverse=True):
            groups = by_class[value]
            turns = sorted(groups, key=lambda f: (self.frameworks.get(f, never), f))
            queues = [[x[2] for x in sorted(groups[f], key=lambda x: (x[0], x[1]))] for f in turns]
            for round_ in zip_longest(*queues):
                out.extend(x for x in round_ if x is not None)
        return out

    def since(self, framework_id: str, name: str) -> float:
        return self.last.get((framework_id, name), -float("inf"))

    def served(self, framework_id: str, name: str, now: float) -> None:
        self._turn += 1e-9
        self.last[(framework_id, name)] = now + self._turn
        self.frameworks[framework_id] = now + self._turn

    def keep(self, live: set[tuple[str, str]]) -> None:
        """Forget the demands no longer pending (called with those seen this pass)."""
        if len(self.last) > len(live):
            self.last = {k: v for k, v in self.last.items() if k in live}
            fws = {k[0] for k in live}
            self.frameworks = {f: v for f, v in self.frameworks.items() if f in fws}
