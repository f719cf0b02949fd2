"""The placement rules, one module each, and the lists every consumer iterates.

A framework (or one of its demands) may use an agent when every rule allows it. The **static**
rules (``STATIC``: taints, constraints, GPUs, memory pressure, demand fit) decide from the two
sides' facts alone (memory pressure's and demand shapes change at run time, re-evaluated by row
or column); every consumer
asks them through ``blocking`` / ``prefers_not`` below, grouping agents and frameworks by
``agent_key`` / ``framework_key`` where it works over many (the allocator's placement mask,
the why-pending scan's agent view). The **dynamic** rules (``DYNAMIC``) depend on state that
changes between cycles. Those that close agents, frameworks or pairs (``masks()``: draining,
suppression, refuse filters) each give a scalar predicate and an array form (base.py), and the
reference (``blocking_now``), the numpy allocator's cycle, eligibility, rooms, held_back and
explain (eligibility.py) loop over them; the offer rules (resources, quota) size offers inside
the walk kernels; spread is the frameworks'.

Consumers of ``STATIC`` (tests/unit/test_rule_registry.py registers a rule and checks each):
the allocator's placement mask (``masks/placement.py``, read by the walk
kernels) and so its rooms and explain; the reference allocator (``reference.py``); the master's
why-pending reasons (``core/agent_view.py`` and its specification ``core/demands.py``);
preemption's victim search (``core/nominations.py``); the gang cut's demand filter
(``core/gangs.py``); the spread domains (``core/spread.py``).

Adding a rule: one module here with a class like ``taints.Taints`` (static) or
``draining.Draining`` (dynamic) and one line in ``STATIC`` or ``DYNAMIC`` (docs/architecture.md,
"Placement rules").
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from typing import cast

from corral.master.allocator.rules import (
    constraints,
    demand_fit,
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
from corral.master.allocator.rules.base import (
    MASK_SCOPES,
    DynamicRule,
    DynamicState,
    MaskRule,
    StaticRule,
)
from corral.master.allocator.rules.facts import (
    AgentFacts,
    DynamicFacts,
    FrameworkFacts,
    RuleOptions,
)

STATIC: list[StaticRule] = [
    taints.RULE,
    constraints.RULE,
    gpus.RULE,
    pressure.RULE,
    demand_fit.RULE,
]

DYNAMIC: list[DynamicRule] = [
    suppression.RULE,
    filters.RULE,
    draining.RULE,
    resources.RULE,
    quota.RULE,
    spread.RULE,
]


def masks(rooms: bool = False) -> list[MaskRule]:
    """The dynamic rules that close agents, frameworks or pairs, in registry order (which is
    ``held_back``'s precedence); ``rooms``: only those rooms ask (``MaskRule.in_rooms``)."""
    out = [cast(MaskRule, r) for r in DYNAMIC if r.scope in MASK_SCOPES]
    return [r for r in out if r.in_rooms] if rooms else out


def blocking_now(facts: DynamicFacts, rooms: bool = False) -> list[str]:
    """Every mask rule's reason that closes the pair ``facts`` describes (the reference's
    form; the numpy allocator combines the rules' array forms instead)."""
    return [rule.reasons[0] for rule in masks(rooms) if rule.blocks(facts)]


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
def registered(rule: StaticRule | MaskRule) -> Iterator[None]:
    """``rule`` in the registry for the duration (tests: a rule only they know), static or
    dynamic by its ``scope``. Consumers that cache per key must be made after a static rule is
    registered."""
    if isinstance(getattr(rule, "scope", None), str):
        dynamic = cast(DynamicRule, rule)
        DYNAMIC.append(dynamic)
        try:
            yield
        finally:
            DYNAMIC.remove(dynamic)
        return
    static = cast(StaticRule, rule)
    STATIC.append(static)
    try:
        yield
    finally:
        STATIC.remove(static)


__all__ = [
    "DYNAMIC",
    "STATIC",
    "AgentFacts",
    "DynamicFacts",
    "DynamicRule",
    "DynamicState",
    "FrameworkFacts",
    "MaskRule",
    "RuleOptions",
    "StaticRule",
    "agent_key",
    "allows",
    "blocking",
    "blocking_now",
    "framework_key",
    "in_spread_domain",
    "masks",
    "prefers_not",
    "registered",
]
