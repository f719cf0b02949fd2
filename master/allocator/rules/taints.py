"""Taints and tolerations: a NoSchedule (or NoExecute) taint the framework does not tolerate
keeps it off the agent; a PreferNoSchedule one only puts it after the tolerant frameworks."""

from __future__ import annotations

from collections.abc import Hashable

from corral.master.allocator.rules.facts import AgentFacts, FrameworkFacts, RuleOptions
from corral.placement import Taint, TaintEffect, untolerated


def reason(taint: Taint) -> str:
    return f"taint {taint}"


class Taints:
    name = "taints"
    spread_domains = False  # Kubernetes' nodeTaintsPolicy: Ignore

    def agent_key(self, agent: AgentFacts) -> Hashable:
        return agent.taints

    def framework_key(self, framework: FrameworkFacts) -> Hashable:
        return framework.tolerations

    def blocking(
        self, agent: AgentFacts, framework: FrameworkFacts, options: RuleOptions
    ) -> list[str]:
        hard = [t for t in agent.taints if t.effect is not TaintEffect.PREFER_NO_SCHEDULE]
        return [reason(t) for t in untolerated(hard, framework.tolerations)]

    def prefers_not(self, agent: AgentFacts, framework: FrameworkFacts) -> bool:
        soft = [t for t in agent.taints if t.effect is TaintEffect.PREFER_NO_SCHEDULE]
        return bool(untolerated(soft, framework.tolerations))


RULE = Taints()
