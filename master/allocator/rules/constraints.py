"""Attribute constraints a framework (and a demand) asks for (equals, in, exists, ...) on an
agent's attributes."""

from __future__ import annotations

from collections.abc import Hashable

from corral.master.allocator.rules.facts import AgentFacts, FrameworkFacts, RuleOptions
from corral.placement import AttributeConstraint


def reason(constraint: AttributeConstraint) -> str:
    return f"constraint {constraint} not met"


class Constraints:
    name = "constraints"
    spread_domains = True  # Kubernetes' nodeAffinityPolicy: Honor

    def agent_key(self, agent: AgentFacts) -> Hashable:
        return tuple(sorted(agent.attributes.items()))

    def framework_key(self, framework: FrameworkFacts) -> Hashable:
        return framework.constraints

    def blocking(
        self, agent: AgentFacts, framework: FrameworkFacts, options: RuleOptions
    ) -> list[str]:
        return [reason(c) for c in framework.constraints if not c.matches(agent.attributes)]

    def prefers_not(self, agent: AgentFacts, framework: FrameworkFacts) -> bool:
        return False


RULE = Constraints()
