"""Agents at their launch bound (admission.py): the core's ``holds`` component."""

from __future__ import annotations

from typing import TYPE_CHECKING

from corral.master.core.pacing import LAUNCHING
from corral.master.core.records import AgentRecord

if TYPE_CHECKING:
    from corral.master.core.state import CoreState


class AgentHolds:
    """Agents held out of offers because their launches in flight reached the bound."""

    def __init__(self) -> None:
        self.held: set[str] = set()

    def launched(self, core: CoreState, agent: AgentRecord) -> None:
        """Tasks were just launched on ``agent``: hold it if that reached the bound."""
        if agent.in_allocator and launching(agent) >= core.config.max_agent_launches:
            core.allocator.set_agent_draining(agent.agent_id, True)
            self.held.add(agent.agent_id)

    def release(self, core: CoreState) -> None:
        """Before a cycle: agents whose launches moved on are offered again. One still at the
        bound is held again (an agent that left the allocator and came back is unheld there)."""
        bound = core.config.max_agent_launches
        for agent_id in list(self.held):
            agent = core.agents.get(agent_id)
            if agent is None:
                self.held.discard(agent_id)
            elif not agent.in_allocator:
                continue
            elif launching(agent) < bound:
                # A cordoned agent stays out (maintenance.py): only its launches moved on.
                core.allocator.set_agent_draining(agent_id, agent.maintenance is not None)
                self.held.discard(agent_id)
            else:
                core.allocator.set_agent_draining(agent_id, True)


def launching(agent: AgentRecord) -> int:
    """Tasks on ``agent`` accepted and not yet RUNNING (an agent holds tens of tasks: a count
    is cheaper than a counter kept right through every transition)."""
    return sum(1 for t in agent.tasks.values() if t.state in LAUNCHING)
