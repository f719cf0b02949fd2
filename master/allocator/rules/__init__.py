"""The placement rules, one module each, and the one list every consumer iterates.

A framework (or one of its demands) may use an agent when every rule allows it. The **static**
rules (``STATIC``: taints, constraints, GPUs, memory pressure) decide from the two sides' facts
alone (memory pressure's change at run time, re-evaluated by row or column); every consumer
asks them through ``blocking`` / ``prefers_not`` below, grouping agents and frameworks by
``agent_key`` / ``framework_key`` where it works over many (the allocator's placement mask,
the why-pending scan's agent view). The **dynamic** rules (``DYNAMIC``) depend on state that
changes between cycles; each module says where its array form lives.

Consumers of ``STATIC`` (tests/unit/test_rule_registry.py registers a rule and checks each):
the allocator's placement mask (``masks/placement.py``, read by the walk
kernels) and so its rooms and explain; the reference allocator (``reference.py``); the master's
why-pending reasons (``core/agent_view.py`` and its specification ``core/demands.py``);
preemption's victim search (``core/nominations.py``); the gang cut's demand filter
(``core/gangs.py``); the spread domains (``core/spread.py``).

Adding a rule: one module here with a class like ``taints.Taints`` and one line in ``STATIC``
(docs/architecture.md, "Adding a placement rule").
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from contextlib import contextmanager

from corral.master.allocator.rules import (
    constraints,
    draining,
    filters,
    gpus,
    pressure,
    quota,
    resources,
    spread,
    suppression,
    taints,
)
from corral.master.allocator.rules.base import DynamicRule, StaticRule
from corral.master.allocator.rules.facts import AgentFacts, FrameworkFacts, RuleOptions

STATIC: list[StaticRule] = [
    taints.RULE,
    constraints.RULE,
    gpus.RULE,
    pressure.RULE,
]

DYNAMIC: tuple[DynamicRule, ...] = (
    resources.RULE,
    filters.RULE,
    draining.RULE,
    suppression.RULE,
    quota.RULE,
    spread.RULE,
)


def blocking(agent: AgentFacts, framework: FrameworkFacts, options: RuleOptions) -> list[str]:
    """Every static rule's reasons, in registry order; empty: the framework may use the agent."""
    out: list[str] = []
    for rule in STATIC:
        out += rule.blocking(agent, framework, options)
    return out


def allows(agent: AgentFacts, framework: FrameworkFacts, options: RuleOptions) -> bool:
    return all(not rule.blocking(agent, framework, options) for rule in STATIC)


def in_spread_domain(agent: AgentFacts, framework: FrameworkFacts, options: RuleOptions) -> bool:
    """The agent's domain counts for topology spread: no rule that closes it says so."""
    return all(
        not rule.blocking(agent, framework, options) for rule in STATIC if rule.spread_domains
    )


def prefers_not(agent: AgentFacts, framework: FrameworkFacts) -> bool:
    return any(rule.prefers_not(agent, framework) for rule in STATIC)


def agent_key(agent: AgentFacts) -> Hashable:
    """Agents with equal keys get equal answers from every static rule."""
    return tuple(rule.agent_key(agent) for rule in STATIC)


def framework_key(framework: FrameworkFacts) -> Hashable:
    return tuple(rule.framework_key(framework) for rule in STATIC)


@contextmanager
def registered(rule: StaticRule) -> Iterator[None]:
    """``rule`` in the registry for the duration (tests: a rule only they know). Consumers
    that cache per key must be made after it is registered."""
    STATIC.append(rule)
    try:
        yield
    finally:
        STATIC.remove(rule)


__all__ = [
    "DYNAMIC",
    "STATIC",
    "AgentFacts",
    "DynamicRule",
    "FrameworkFacts",
    "RuleOptions",
    "StaticRule",
    "agent_key",
    "allows",
    "blocking",
    "framework_key",
    "in_spread_domain",
    "prefers_not",
    "registered",
]
