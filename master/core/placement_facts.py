"""The core's side of the placement rules (master/allocator/rules): its records as the rules'
facts, and the rules asked for one demand on one agent. Every consumer in the core (preemption's
victim search, the gang cut, the why-pending reasons and their specification, spread domains)
asks through here, so a rule registered there is honoured everywhere. It takes the allocator
(whose rule options the rules read), never the core."""

from __future__ import annotations

from corral.master.allocator import rules
from corral.master.allocator.interface import Allocator
from corral.master.allocator.rules import AgentFacts, FrameworkFacts
from corral.master.core.records import AgentRecord, FrameworkRecord
from corral.master.core.types import AgentSpec, Demand, FrameworkSpec
from corral.qos import is_besteffort


def agent_facts(spec: AgentSpec, under_pressure: bool = False) -> AgentFacts:
    return AgentFacts(spec.attributes, spec.taints, spec.resources.gpus, under_pressure)


def record_facts(agent: AgentRecord) -> AgentFacts:
    """An agent's facts with its memory pressure (its latest usage report)."""
    return agent_facts(agent.spec, agent.under_pressure)


def framework_facts(spec: FrameworkSpec) -> FrameworkFacts:
    return FrameworkFacts(spec.tolerations, spec.offer_constraints, spec.gpu_resources, spec.role)


def demand_facts(fw: FrameworkRecord, d: Demand | None) -> FrameworkFacts:
    """What a demand's tasks are placed by: its framework's facts and its own rules."""
    facts = framework_facts(fw.spec)
    if d is None:
        return facts
    besteffort = is_besteffort(d.resources.cpus, d.resources.mem)
    return facts.with_demand(d.constraints, d.tolerations, besteffort)


def blocking(allocator: Allocator, facts: FrameworkFacts, agent: AgentRecord) -> list[str]:
    return rules.blocking(record_facts(agent), facts, allocator.rule_options)


def in_spread_domain(allocator: Allocator, facts: FrameworkFacts, agent: AgentRecord) -> bool:
    return rules.in_spread_domain(record_facts(agent), facts, allocator.rule_options)


def allows(allocator: Allocator, facts: FrameworkFacts, agent: AgentRecord) -> bool:
    return rules.allows(record_facts(agent), facts, allocator.rule_options)
