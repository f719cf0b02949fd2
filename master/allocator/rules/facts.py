"""What the placement rules read: the facts of an agent and of a framework (or a framework's
demand, with the demand's own constraints and tolerations added to the framework's), and what a
dynamic rule reads of a pair at a time (``DynamicFacts``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from corral.placement import AttributeConstraint, Taint, Toleration


@dataclass(frozen=True, slots=True)
class AgentFacts:
    attributes: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    gpus: float = 0.0  # the agent's total GPUs
    under_pressure: bool = False  # memory pressure, as it last reported (pressure.py)
    # Its total cpus, mem, disk, GPUs (demand_fit.py); empty: not known, nothing is ruled out.
    capacity: tuple[float, ...] = ()


@dataclass(frozen=True, slots=True)
class FrameworkFacts:
    tolerations: tuple[Toleration, ...] = ()
    constraints: tuple[AttributeConstraint, ...] = ()
    gpu_capable: bool = False  # the GPU_RESOURCES capability
    role: str = "*"
    # Wants only BestEffort work (no cpus, no mem): every unmet demand of a framework, or
    # the demand itself (pressure.py).
    besteffort_only: bool = False
    # One task's shape (cpus, mem, disk, GPUs) per unmet demand of a framework that set
    # demands; None: it set none (demand_fit.py). A demand's own facts leave it out.
    demand_shapes: tuple[tuple[float, ...], ...] | None = None

    def with_demand(
        self,
        constraints: tuple[AttributeConstraint, ...],
        tolerations: tuple[Toleration, ...],
        besteffort: bool = False,
    ) -> FrameworkFacts:
        """The facts a demand's tasks are placed by: the framework's and the demand's own
        (its shape decides ``besteffort_only``; its fit is the resources rule's, so the
        framework's ``demand_shapes`` are left out)."""
        if (
            not constraints
            and not tolerations
            and besteffort == self.besteffort_only
            and self.demand_shapes is None
        ):
            return self
        return FrameworkFacts(
            (*self.tolerations, *tolerations),
            (*self.constraints, *constraints),
            self.gpu_capable,
            self.role,
            besteffort,
        )


@dataclass(frozen=True, slots=True)
class RuleOptions:
    filter_gpu_resources: bool = True  # Mesos' --filter_gpu_resources (gpus.py)


@dataclass(frozen=True, slots=True)
class DynamicFacts:
    """What a dynamic rule's scalar predicate reads of one (agent, framework) pair at ``now``
    (the reference allocator asks so; the numpy allocator asks the rule's array form).

    ``agent_conditions`` and ``framework_conditions`` are the named conditions set on each side
    at run time (``Allocator.set_agent_condition`` / ``set_framework_condition``; draining and
    suppression are two); ``filter_until`` is the pair's refuse filter expiry (-inf: none)."""

    now: float
    agent_conditions: frozenset[str] = frozenset()
    framework_conditions: frozenset[str] = frozenset()
    filter_until: float = -math.inf
