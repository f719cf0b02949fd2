"""The roles table: the weights and quotas operators set, and a role's view for GetRoles.

Values are checked by ``corral.roles`` before they reach this table (the core refuses a bad
call before anything changes); the table only records what was applied to the allocator, so the
Operator API and ``/api/v1/state`` can show it. A role appears in the views when it has a
framework (not removed), a weight or a quota. Values live in memory: a restarted master starts
from its ``--weights`` / ``--quotas`` flags.

A role's **share** is its dominant share: the largest, over cpus, mem and disk, of what it holds
(tasks' resources and outstanding offers) divided by the cluster's total (the agents the
allocator knows). gpus are left out, as the allocator leaves them out of fairness by default;
DRF orders roles by share ÷ weight.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from corral.master.allocator.drf import dominant_share, fair_columns
from corral.master.core.records import AgentRecord, FrameworkRecord, OfferRecord
from corral.master.core.states import FrameworkState
from corral.resources import SCALARS, Resources
from corral.roles import DEFAULT_WEIGHT, Quota

# The resources a role's share is computed over (the allocator's default fairness set).
SHARE_RESOURCES = ("cpus", "mem", "disk")
_SHARE_COLUMNS = tuple(SCALARS.index(name) for name in SHARE_RESOURCES)


@dataclass(frozen=True, slots=True)
class RoleView:
    role: str
    weight: float
    quota: Quota
    allocated: Resources  # tasks' resources and outstanding offers
    offered: Resources  # outstanding offers
    share: float  # dominant share of ``allocated`` (see the module's docstring)
    framework_ids: tuple[str, ...]


class RolesTable:
    """Weights and quotas set by operators (or flags), by role."""

    def __init__(self) -> None:
        self.weights: dict[str, float] = {}
        self.quotas: dict[str, Quota] = {}

    def weight(self, role: str) -> float:
        return self.weights.get(role, DEFAULT_WEIGHT)

    def quota(self, role: str) -> Quota:
        return self.quotas.get(role, Quota())

    def set_weight(self, role: str, weight: float) -> None:
        self.weights[role] = weight

    def set_quota(self, role: str, quota: Quota) -> None:
        """Record ``quota``; a quota of no guarantee and no limit clears the role's quota."""
        if quota.is_none():
            self.quotas.pop(role, None)
        else:
            self.quotas[role] = quota

    def views(
        self,
        frameworks: Iterable[FrameworkRecord],
        offers_of: Callable[[str], Iterable[OfferRecord]],
        agents: Iterable[AgentRecord],
    ) -> list[RoleView]:
        """Every role with a framework, a weight or a quota, sorted by name."""
        total = Resources()
        for agent in agents:
            if agent.in_allocator:
                total = total + agent.spec.resources
        members: dict[str, list[FrameworkRecord]] = {}
        for fw in frameworks:
            if fw.state is not FrameworkState.REMOVED:
                members.setdefault(fw.spec.role, []).append(fw)
        roles = sorted(set(members) | set(self.weights) | set(self.quotas))
        out = []
        for role in roles:
            used, offered = Resources(), Resources()
            for fw in members.get(role, ()):
                used = used + fw.used
                for offer in offers_of(fw.framework_id):
                    offered = offered + offer.resources
            allocated = used + offered
            out.append(
                RoleView(
                    role=role,
                    weight=self.weight(role),
                    quota=self.quota(role),
                    allocated=allocated,
                    offered=offered,
                    share=dominant_share(
                        [allocated.scalars()],
                        0,
                        total.scalars(),
                        fair_columns(total.scalars(), _SHARE_COLUMNS),
                    ),
                    framework_ids=tuple(sorted(fw.framework_id for fw in members.get(role, ()))),
                )
            )
        return out
