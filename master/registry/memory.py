"""A registry in the process's memory: it survives nothing but the master core's own bugs."""

from __future__ import annotations

from collections.abc import Sequence

from corral.master.core.durable import (
    AgentEntry,
    Change,
    DeletePriorityClass,
    FrameworkEntry,
    PutAgent,
    PutFramework,
    PutPriorityClass,
    PutQuota,
    PutWeight,
    RegistryState,
    RemoveAgent,
)
from corral.master.registry.prune import removed_to_forget
from corral.priority import PriorityClass
from corral.roles import Quota


class MemoryRegistry:
    blocking = False  # a few dict writes: applied on the event loop (interface.py)

    def __init__(self) -> None:
        self.agents: dict[str, AgentEntry] = {}
        self.frameworks: dict[str, FrameworkEntry] = {}
        self.weights: dict[str, float] = {}
        self.quotas: dict[str, Quota] = {}
        self.priority_classes: dict[str, PriorityClass | None] = {}  # in order of last change
        self.batches = 0  # apply() calls: tests check the shell batches its writes

    def load(self) -> RegistryState:
        return RegistryState(
            agents=tuple(self.agents.values()),
            frameworks=tuple(self.frameworks.values()),
            weights=tuple(self.weights.items()),
            quotas=tuple(self.quotas.items()),
            priority_classes=tuple(self.priority_classes.items()),
        )

    def apply(self, changes: Sequence[Change]) -> None:
        self.batches += 1
        pruned = False
        for change in changes:
            if isinstance(change, PutAgent):
                self.agents[change.entry.agent_id] = change.entry
            elif isinstance(change, RemoveAgent):
                self.agents.pop(change.agent_id, None)
            elif isinstance(change, PutFramework):
                self.frameworks[change.entry.framework_id] = change.entry
                pruned |= change.entry.removed_at is not None
            elif isinstance(change, PutWeight):
                self.weights[change.role] = change.weight
            elif isinstance(change, PutPriorityClass | DeletePriorityClass):
                self.priority_classes.pop(change.name, None)  # to the end: order of changes
                self.priority_classes[change.name] = (
                    change.priority_class if isinstance(change, PutPriorityClass) else None
                )
            elif isinstance(change, PutQuota):
                if change.quota.is_none():
                    self.quotas.pop(change.role, None)
                else:
                    self.quotas[change.role] = change.quota
        if pruned:
            for fw_id in removed_to_forget(self.frameworks.values()):
                del self.frameworks[fw_id]

    def describe(self) -> str:
        return "memory (nothing survives a restart)"

    def close(self) -> None:
        pass
