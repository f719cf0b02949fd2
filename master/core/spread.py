"""A demand's topology spread in explain (corral.placement.TopologySpread has the rule): where
its live tasks are, by domain, and the smallest count over the domains.

The master does not place tasks (frameworks do, from offers); it uses the rule to say why a
demand is pending: "spread: zone=a would exceed max_skew 1" on the agents of a domain that is
already ahead, while the domain that is behind has no room.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from corral.master.core import placement_facts
from corral.master.core.records import AgentRecord, FrameworkRecord
from corral.master.core.types import Demand
from corral.placement import TopologySpread

if TYPE_CHECKING:
    from corral.master.core.state import CoreState


@dataclass(frozen=True, slots=True)
class SpreadCounts:
    rule: TopologySpread
    counts: Counter[str]  # live tasks of the demand per domain
    fewest: int  # the smallest count over the domains (0 when a domain has none)

    def reason(self, agent: AgentRecord) -> str:
        value = self.rule.value_of(agent.spec.hostname, agent.spec.attributes)
        return self.rule.blocked(value, self.counts, self.fewest)


def spread_counts(
    core: CoreState, fw: FrameworkRecord, d: Demand, agents: Sequence[AgentRecord]
) -> SpreadCounts | None:
    """None when the demand has no spread rule or only a preference (ScheduleAnyway)."""
    rule = d.spread
    if rule is None or rule.schedule_anyway:
        return None
    counts: Counter[str] = Counter()
    for task in fw.tasks.values():
        if task.spec.demand != d.name:
            continue
        agent = core.agents.get(task.agent_id)
        if agent is None:
            continue
        value = rule.value_of(agent.spec.hostname, agent.spec.attributes)
        if value is not None:
            counts[value] += 1
    # The domains: those of the agents no rule that counts for spread closes (rules/base.py).
    facts = placement_facts.demand_facts(fw, d)
    domains = {
        value
        for agent in agents
        if placement_facts.in_spread_domain(core.allocator, facts, agent)
        and (value := rule.value_of(agent.spec.hostname, agent.spec.attributes)) is not None
    }
    fewest = min((counts.get(v, 0) for v in domains), default=0)
    return SpreadCounts(rule, counts, fewest)
