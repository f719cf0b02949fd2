"""The two shapes a placement rule takes (the registry, ``__init__.py``, lists them).

A **static rule** decides from an agent's facts and a framework's (or a demand's) facts alone:
taints, attribute constraints, GPU capability. It declares what of each side it reads
(``agent_key``, ``framework_key``: agents and frameworks with equal keys get equal answers) and
a scalar predicate (``blocking``: the reasons, fixed strings, that keep the framework off the
agent; empty when allowed). Its array form is the registry's, not its own: every consumer groups
agents and frameworks by their keys and asks the predicate once per pair of groups
(``masks/placement.py`` builds the allocator's ``ok[agent, framework]`` so, which the compiled
walks read; the why-pending scan, explain, preemption and the gang cut ask the same way).

A **dynamic rule** depends on what changes between cycles: refuse filters (time), draining and
suppression (operators and frameworks), free resources, spread counts, quota. Each is one module
here with its name, its reasons and its scalar predicate; its array form lives with the state it
reads, named in ``array_form`` (the allocator keeps that state as arrays itself).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Protocol

from corral.master.allocator.rules.facts import AgentFacts, FrameworkFacts, RuleOptions


class StaticRule(Protocol):
    name: str
    # Whether an agent the rule closes is left out of topology spread's domains (Kubernetes'
    # nodeAffinityPolicy Honor: constraints are; nodeTaintsPolicy Ignore: taints are not).
    spread_domains: bool

    def agent_key(self, agent: AgentFacts) -> Hashable: ...

    def framework_key(self, framework: FrameworkFacts) -> Hashable: ...

    def blocking(
        self, agent: AgentFacts, framework: FrameworkFacts, options: RuleOptions
    ) -> list[str]:
        """The reasons that keep the framework off the agent; empty: allowed."""
        ...

    def prefers_not(self, agent: AgentFacts, framework: FrameworkFacts) -> bool:
        """Allowed, but the framework comes after those the agent is not soft-blocked for."""
        ...


@dataclass(frozen=True, slots=True)
class DynamicRule:
    name: str
    reasons: tuple[str, ...]  # its fixed strings (a family shown by example: "quota limit cpus")
    array_form: str  # where the allocator keeps it as arrays, and how a cycle applies it
