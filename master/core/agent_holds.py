"""Agents at their launch bound (admission.py): the core's ``holds`` component."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from corral.master.core.pacing import LAUNCHING
from corral.master.core.records import AgentRecord

if TYPE_CHECKING:
    from corral.master.allocator.interface import Allocator


class AgentHolds:
    """Agents held out of offers because their launches in flight reached ``bound``
    (``max_agent_launches``), told to the allocator it is given."""

    def __init__(self, allocator: Allocator, agents: Mapping[str, AgentRecord], bound: int) -> None:
        self._allocator = allocator
        self._agents = agents
        self._bound = bound
        self.held: set[str] = set()

    def launched(self, agent: AgentRecord) -> None:
        """Tasks were just launched on ``agent``: hold it if that reached the bound."""
        if agent.in_allocator and launching(agent) >= self._bound:
            self._allocator.set_agent_draining(agent.agent_id, True)
            self.held.add(agent.agent_id)

    def release(self) -> None:
        """Before a cycle: agents whose launches moved on are offered again. One still at the
        bound is held again (an agent that left the allocator and came back is unheld there)."""
        for agent_id in list(self.held):
            agent = self._agents.get(agent_id)
            if agent is None:
                self.held.discard(agent_id)
            elif not agent.in_allocator:
                continue
            elif launching(agent) < self._bound:
                # A cordoned agent stays out (maintenance.py): only its launches moved on.
                self._allocator.set_agent_draining(agent_id, agent.maintenance is not None)
                self.held.discard(agent_id)
            else:
                self._allocator.set_agent_draining(agent_id, True)

    def validate(self) -> list[str]:
        """No agent has more launches in flight than the bound (admission.py), and an agent
        held out of offers for it is one the core knows; as faults."""
        bound = self._bound
        faults = [
            f"agent {a.agent_id} has {n} launches in flight, bound {bound}"
            for a in self._agents.values()
            if (n := launching(a)) > bound
        ]
        stray = self.held - self._agents.keys()
        if stray:
            faults.append(f"agents held for their launches are unknown: {sorted(stray)}")
        return faults


def launching(agent: AgentRecord) -> int:
    """Tasks on ``agent`` accepted and not yet RUNNING (an agent holds tens of tasks: a count
    is cheaper than a counter kept right through every transition)."""
    return sum(1 for t in agent.tasks.values() if t.state in LAUNCHING)
