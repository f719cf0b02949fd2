"""What the placement rules read: the facts of an agent and of a framework (or a framework's
demand, with the demand's own constraints and tolerations added to the framework's)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from corral.placement import AttributeConstraint, Taint, Toleration


@dataclass(frozen=True, slots=True)
class AgentFacts:
    attributes: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    gpus: float = 0.0  # the agent's total GPUs


@dataclass(frozen=True, slots=True)
class FrameworkFacts:
    tolerations: tuple[Toleration, ...] = ()
    constraints: tuple[AttributeConstraint, ...] = ()
    gpu_capable: bool = False  # the GPU_RESOURCES capability
    role: str = "*"

    def with_demand(
        self, constraints: tuple[AttributeConstraint, ...], tolerations: tuple[Toleration, ...]
    ) -> FrameworkFacts:
        """The facts a demand's tasks are placed by: the framework's and the demand's own."""
        if not constraints and not tolerations:
            return self
        return FrameworkFacts(
            (*self.tolerations, *tolerations),
            (*self.constraints, *constraints),
            self.gpu_capable,
            self.role,
        )


@dataclass(frozen=True, slots=True)
class RuleOptions:
    filter_gpu_resources: bool = True  # Mesos' --filter_gpu_resources (gpus.py)
