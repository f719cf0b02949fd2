"""Where eviction under memory pressure plugs in (its own issue, not the foundation's).

The shell measures the host and feeds ``MemoryPressure`` events; the core asks its
``EvictionPolicy`` which tasks to give up and kills them with reason EVICTED_MEMORY_PRESSURE,
through the same KILLING → KILLED path and status updates as any kill. The policy is pure: the
same candidates and pressure give the same victims, so it replays like the rest of the core.
The default evicts nothing; QoS classes (priority class, memory requested vs used) arrive with
the eviction issue.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class EvictionCandidate:
    task_id: str
    priority_class: str
    mem: float  # MiB the task asked for


class EvictionPolicy(Protocol):
    def select(
        self, candidates: Sequence[EvictionCandidate], used_mib: float, total_mib: float
    ) -> Sequence[str]:
        """Task ids to evict, in order; may be empty."""
        ...


class NeverEvict:
    def select(
        self, candidates: Sequence[EvictionCandidate], used_mib: float, total_mib: float
    ) -> Sequence[str]:
        return ()
