"""The core's side of the placement rules (master/allocator/rules): its records as the rules'
facts, and the rules asked for one demand on one agent. Every consumer in the core (preemption's
victim search, the gang cut, the why-pending reasons and their specification, spread domains)
asks through here, so a rule registered there is honoured everywhere."""

from __future__ import annotations

from typing import TYPE_CHECKING

from corral.master.allocator import rules
from corral.master.allocator.rules import AgentFacts, FrameworkFacts
from corral.master.core.records import AgentRecord, FrameworkRecord
from corral.master.core.types import AgentSpec, Demand, FrameworkSpec

if TYPE_CHECKING:
    from corral.master.core.master import MasterCore


def agent_facts(spec: AgentSpec) -> AgentFacts:
    return AgentFacts(spec.attributes, spec.taints, spec.resources.gpus)


def framework_facts(spec: FrameworkSpec) -> FrameworkFacts:
    return FrameworkFacts(spec.tolerations, spec.offer_constraints, spec.gpu_resources, spec.role)


def demand_facts(fw: FrameworkRecord, d: Demand | None) -> FrameworkFacts:
    """What a demand's tasks are placed by: its framework's facts and its own rules."""
    facts = framework_facts(fw.spec)
    return facts if d is None else facts.with_demand(d.constraints, d.tolerations)


def blocking(core: MasterCore, facts: FrameworkFacts, agent: AgentRecord) -> list[str]:
    return rules.blocking(agent_facts(agent.spec), facts, core.allocator.rule_options)


def in_spread_domain(core: MasterCore, facts: FrameworkFacts, agent: AgentRecord) -> bool:
    return rules.in_spread_domain(agent_facts(agent.spec), facts, core.allocator.rule_options)


def allows(core: MasterCore, facts: FrameworkFacts, agent: AgentRecord) -> bool:
    return rules.allows(agent_facts(agent.spec), facts, core.allocator.rule_options)
