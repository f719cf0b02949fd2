"""The allocator's contract with the master core.

The core owns all bookkeeping of offers and tasks; the allocator owns the arithmetic of *who gets
what next*. The core tells it about agents, frameworks, charges and returns; once per allocation
interval it calls ``cycle()`` and applies the plan it gets back.

Accounting rule (as in Mesos): resources are *charged* to a framework from the moment they are
offered until they are declined, rescinded, left unused by an accept, or freed by a task's end.
So ``cycle()`` charges what it plans, and the core later calls ``recover()`` for whatever comes
back. Only scalars (``corral.resources.SCALARS`` order: cpus, mem, disk, gpus) are the
allocator's concern; the core hands out port ranges with the agent's offer.

Implementations must be deterministic: the same calls with the same ``now`` and ``seed`` give
the same plan.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from corral.placement import AttributeConstraint, Taint, Toleration

Scalars = tuple[float, float, float, float]


@dataclass(frozen=True, slots=True)
class Allocation:
    """One entry of a cycle's plan: offer these scalars of this agent to this framework."""

    framework_id: str
    agent_id: str
    scalars: Scalars


@dataclass(frozen=True, slots=True)
class Explanation:
    """Why a framework got nothing (or what it got) in the last cycle, as structured data.

    ``reasons`` maps a fixed reason string (e.g. "refuse filter", "taint spot=true:NoSchedule",
    "quota limit gpus reached", "lower DRF order") to the number of agents it applied to (or, for
    order, the number of frameworks ahead).
    """

    framework_id: str
    offered_agents: int
    reasons: Mapping[str, int] = field(default_factory=dict)
    details: Mapping[str, Any] = field(default_factory=dict)


class Allocator(Protocol):
    def add_agent(
        self,
        agent_id: str,
        total: Scalars,
        attributes: Mapping[str, str],
        taints: Sequence[Taint],
        reservations: Mapping[str, Scalars] | None = None,
    ) -> None: ...

    def remove_agent(self, agent_id: str) -> None: ...

    def set_agent_draining(self, agent_id: str, draining: bool) -> None: ...

    def add_framework(
        self,
        framework_id: str,
        role: str,
        tolerations: Sequence[Toleration] = (),
        constraints: Sequence[AttributeConstraint] = (),
    ) -> None: ...

    def remove_framework(self, framework_id: str) -> None: ...

    def set_suppressed(self, framework_id: str, suppressed: bool) -> None: ...

    def set_weight(self, role: str, weight: float) -> None: ...

    def set_quota(self, role: str, guarantee: Scalars | None, limit: Scalars | None) -> None: ...

    def allocate(self, framework_id: str, agent_id: str, scalars: Scalars) -> None:
        """Charge resources that are in use without a cycle (tasks found at re-registration)."""

    def recover(self, framework_id: str, agent_id: str, scalars: Scalars) -> None:
        """Return charged resources to the agent's free pool."""

    def recover_many(self, returns: Sequence[tuple[str, str, Scalars]]) -> None:
        """``recover`` for each (framework, agent, scalars), in order: a batch of declines."""

    def add_filter(self, framework_id: str, agent_id: str, expires_at: float) -> None:
        """A refuse filter: no offers of this agent to this framework until ``expires_at``."""

    def clear_filters(self, framework_id: str) -> None:
        """REVIVE: drop every refuse filter of the framework."""

    def cycle(self, now: float, seed: int) -> list[Allocation]:
        """Run one allocation cycle at time ``now``; charge and return the plan."""

    def explain(self, framework_id: str, now: float) -> Explanation: ...
