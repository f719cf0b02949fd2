"""What preemption's search (nominations.py) needs of each agent in one allocation cycle, kept
for the cycle: what its tasks, offers and holds use, whether a demand's tasks may go there (the
placement rules, placement_facts.py), and what the tasks that may die for a priority hold."""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING

from corral.master.core import placement_facts
from corral.master.core.records import AgentRecord, FrameworkRecord, TaskRecord
from corral.master.core.types import Demand

if TYPE_CHECKING:
    from corral.master.core.state import CoreState


def may_die(core: CoreState, task: TaskRecord, value: int) -> bool:
    """A victim candidate for a demand of class ``value``: live, not being killed, and of a
    strictly lower priority."""
    return (
        not task.kill_requested
        and not task.state.terminal
        and core.priority.value(task.spec.priority_class) < value
    )


class UsedRoom:
    """Per attached agent: its tasks, its offers and the holds on it, summed; computed for an
    agent when first asked (a demand that finds room early walks few agents), once a cycle."""

    def __init__(self, core: CoreState) -> None:
        self._core = core
        self._cache: dict[str, list[float]] = {}
        self._lower: dict[tuple[str, int], list[float]] = {}
        self._placeable: dict[Hashable, dict[str, bool]] = {}
        self.visits = 0  # agents looked at by the searches of this cycle (demand_work.py)
        self.searches = 0
        self._held: dict[str, list[float]] = {}
        for n in core.nominations.values():
            had = self._held.setdefault(n.agent_id, [0.0, 0.0, 0.0, 0.0])
            self._held[n.agent_id] = [h + x for h, x in zip(had, n.held, strict=True)]

    def placeable(self, fw: FrameworkRecord, d: Demand, agent: AgentRecord) -> bool:
        """The placement rules allow the demand's tasks on the agent (placement_facts.py),
        kept for the cycle per (framework, demand's own rules)."""
        per = self._placeable.setdefault((fw.framework_id, d.tolerations, d.constraints), {})
        ok = per.get(agent.agent_id)
        if ok is None:
            ok = per[agent.agent_id] = placement_facts.allows(
                self._core.allocator, placement_facts.demand_facts(fw, d), agent
            )
        return ok

    def lower(self, agent: AgentRecord, value: int) -> list[float]:
        """What the tasks on the agent that may die for a demand of ``value`` hold: all that
        preempting could free there."""
        key = (agent.agent_id, value)
        got = self._lower.get(key)
        if got is None:
            got = [0.0, 0.0, 0.0, 0.0]
            for t in agent.tasks.values():
                if may_die(self._core, t, value):
                    for k, x in enumerate(t.spec.resources.scalars()):
                        got[k] += x
            self._lower[key] = got
        return got

    def get(self, agent: AgentRecord) -> list[float]:
        u = self._cache.get(agent.agent_id)
        if u is None:
            u = list(self._held.get(agent.agent_id, (0.0, 0.0, 0.0, 0.0)))
            for task in agent.tasks.values():
                for k, x in enumerate(task.spec.resources.scalars()):
                    u[k] += x
            for offer in self._core.book.of_agent(agent.agent_id):
                for k, x in enumerate(offer.scalars):
                    u[k] += x
            self._cache[agent.agent_id] = u
        return u

    def charge(self, agent_id: str, scalars: list[float]) -> None:
        """Room taken this cycle (a hold made): later demands see it used."""
        u = self._cache.get(agent_id)
        if u is not None:
            self._cache[agent_id] = [a + b for a, b in zip(u, scalars, strict=True)]
        held = self._held.setdefault(agent_id, [0.0, 0.0, 0.0, 0.0])
        self._held[agent_id] = [a + b for a, b in zip(held, scalars, strict=True)]
