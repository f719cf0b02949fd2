"""Memory pressure: an agent whose available memory is below one of its eviction thresholds
(agent/core/pressure.py) takes no BestEffort work (no cpus and no mem requested), as
Kubernetes' ``node.kubernetes.io/memory-pressure:NoSchedule`` taint, which every pod but a
BestEffort one tolerates. New BestEffort work would add to the pressure and be among the first
evicted; work with a request is placed as usual (the agent evicts by usage over request, not by
arrival).

The agent's side is ``AgentFacts.under_pressure`` (its latest usage report, master/core/usage.py);
the framework's ``FrameworkFacts.besteffort_only``: for a framework, that its unmet demands all
ask for no cpus and no mem (master/core/demands.py); for a demand, that it does. Both change at
run time: the allocator re-evaluates the one row or column (``masks/placement.py``). Accepts
ask the same predicate (``blocks``) per task (master/core/accepts.py), so the rule is decided
in one place.
"""

from __future__ import annotations

from collections.abc import Hashable

from corral.master.allocator.rules.facts import AgentFacts, FrameworkFacts, RuleOptions

REASON = "agent under memory pressure (no BestEffort work)"


def blocks(under_pressure: bool, besteffort: bool) -> bool:
    """The rule: work that is BestEffort (no cpus, no mem: ``corral.qos.is_besteffort``) is
    kept off an agent under memory pressure."""
    return under_pressure and besteffort


class Pressure:
    name = "memory-pressure"
    spread_domains = False  # a passing condition, not where the demand's tasks may go

    def agent_key(self, agent: AgentFacts) -> Hashable:
        return agent.under_pressure

    def framework_key(self, framework: FrameworkFacts) -> Hashable:
        return framework.besteffort_only

    def blocking(
        self, agent: AgentFacts, framework: FrameworkFacts, options: RuleOptions
    ) -> list[str]:
        return [REASON] if blocks(agent.under_pressure, framework.besteffort_only) else []

    def prefers_not(self, agent: AgentFacts, framework: FrameworkFacts) -> bool:
        return False


RULE = Pressure()
