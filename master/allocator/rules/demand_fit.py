"""Demand fit: a framework that says what it needs (SetDemands) is not offered an agent none of
its unmet demands could ever fit on, even were the agent empty (issue #41). Such an offer
cannot serve the framework; held unanswered, it only keeps the agent from others.

The agent's side is ``AgentFacts.capacity``, its total cpus, mem, disk and GPUs; the
framework's ``FrameworkFacts.demand_shapes``, one task's shape per unmet demand (None: it set
no demands, and is offered as in Mesos). Both are whole-agent facts: whether a demand fits what
is *free* now is the resources rule's (rules/resources.py), and a demand's own constraints and
tolerations are its facts' (``FrameworkFacts.with_demand``, which leaves the shapes out). The
framework's shapes change as its demands are met or set: the allocator re-evaluates its column
(``masks/placement.py``). What an offer cannot serve is also said by ``corral explain``.
"""

from __future__ import annotations

from collections.abc import Hashable

from corral.master.allocator.rules.facts import AgentFacts, FrameworkFacts, RuleOptions
from corral.resources import fits

REASON = "none of its unmet demands fits the agent"


class DemandFit:
    name = "demand-fit"
    spread_domains = False  # the framework's wish, not where a demand's tasks may go

    def agent_key(self, agent: AgentFacts) -> Hashable:
        return agent.capacity

    def framework_key(self, framework: FrameworkFacts) -> Hashable:
        return framework.demand_shapes

    def blocking(
        self, agent: AgentFacts, framework: FrameworkFacts, options: RuleOptions
    ) -> list[str]:
        shapes = framework.demand_shapes
        if not shapes or not agent.capacity:
            return []  # no demands (or none unmet: it is suppressed), or a capacity unknown
        if any(fits(agent.capacity, shape) for shape in shapes):
            return []
        return [REASON]

    def prefers_not(self, agent: AgentFacts, framework: FrameworkFacts) -> bool:
        return False


RULE = DemandFit()
