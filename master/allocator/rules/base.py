"""The shapes a placement rule takes (the registry, ``__init__.py``, lists them).

A **static rule** decides from an agent's facts and a framework's (or a demand's) facts alone:
taints, attribute constraints, GPU capability, memory pressure. It declares what of each side
it reads (``agent_key``, ``framework_key``: agents and frameworks with equal keys get equal
answers) and a scalar predicate (``blocking``: the reasons, fixed strings, that keep the
framework off the agent; empty when allowed). Its array form is the registry's, not its own:
every consumer groups agents and frameworks by their keys and asks the predicate once per pair
of groups (``masks/placement.py`` builds the allocator's ``ok[agent, framework]`` so, which the
walk kernels read; the why-pending scan, explain, preemption and the gang cut ask the same way).

A **dynamic rule** depends on state that changes between cycles (never within one): draining
(an agent condition), suppression (a framework condition), refuse filters (a pair's expiry).
It closes agents, frameworks or pairs (its ``scope``), and is written once as two forms held
equal by the property tests: ``blocks``, the scalar predicate over one pair's ``DynamicFacts``
(the reference asks it pair by pair), and ``array_form``, the mask over every row of its scope
at ``now`` (the numpy allocator's cycle, eligibility, rooms and explain combine the masks of
every registered rule: ``eligibility.py``). The walk kernels read the combined masks, so a new
dynamic rule needs no kernel edit. Its state is what the allocators keep for it: a condition
by name (``Allocator.set_agent_condition``), or arrays of its own (the refuse filters').

**Offer rules** (resources, quota) size what an agent offers rather than close it: their
arithmetic runs inside the walk kernels, per offer; ``array_form`` is the array operation the
rest of the allocator applies (rooms' fit test, the quota's offer). **Spread** is the frameworks'
own (they place their tasks); the master counts it per domain.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Literal, Protocol

import numpy as np
import numpy.typing as npt

from corral.master.allocator.rules.facts import (
    AgentFacts,
    DynamicFacts,
    FrameworkFacts,
    RuleOptions,
)

Mask = npt.NDArray[np.bool_]
# What a dynamic rule closes: "agent" (to every framework), "framework" (everywhere), "pair";
# "offer": it sizes offers instead (resources, quota); "tasks": frameworks place by it (spread).
Scope = Literal["agent", "framework", "pair", "offer", "tasks"]
MASK_SCOPES: tuple[Scope, ...] = ("agent", "framework", "pair")


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


class FilterState(Protocol):
    """The refuse filters as the numpy allocator keeps them (masks/filters.py)."""

    until: npt.NDArray[np.float64]  # [agents, frameworks]: expiry, -inf when none
    active: Mask  # [agents, frameworks]: until > now, valid while ``current(now)``

    def current(self, now: float) -> bool: ...


class DynamicState(Protocol):
    """What the numpy allocator keeps for the dynamic rules, by row (``DrfAllocator``)."""

    @property
    def filters(self) -> FilterState: ...

    def agent_condition(self, name: str) -> Mask:
        """[agent rows]: where the named condition is set."""
        ...

    def framework_condition(self, name: str) -> Mask:
        """[framework rows]: where the named condition is set."""
        ...


class DynamicRule(Protocol):
    """Every dynamic rule: its name, fixed reasons and scope, and its array operation (for a
    mask rule, ``MaskRule.array_form``; for an offer rule, the arithmetic its module names)."""

    @property
    def name(self) -> str: ...

    @property
    def reasons(self) -> tuple[str, ...]: ...

    @property
    def scope(self) -> Scope: ...

    @property
    def array_form(self) -> Callable[..., Any]: ...


class MaskRule(Protocol):
    """A dynamic rule that closes agents, frameworks or pairs (scope in MASK_SCOPES)."""

    name: str
    reasons: tuple[str, ...]  # its fixed strings; it gives the first
    scope: Scope
    # Whether ``Allocator.room``, ``has_room`` and ``held_back`` ask it (suppression: no; a
    # suppressed framework's waiting gang is still cut from its room, master/core/gangs.py).
    in_rooms: bool

    def blocks(self, facts: DynamicFacts) -> bool:
        """The scalar predicate: the rule closes this pair now."""
        ...

    def array_form(self, state: DynamicState, now: float) -> Mask:
        """The mask over every row of its scope at ``now``: [agents], [frameworks] or
        [agents, frameworks] (rows past the live ones are never read). May be the state's own
        array: consumers never write to it."""
        ...
