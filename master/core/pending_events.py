"""The why-pending events' memory (pending.py rules 4 and 5): the core's ``pending`` component."""

from __future__ import annotations

from dataclasses import dataclass

from corral.master.core.agent_arrays import AgentArrays
from corral.master.core.records import AgentRecord

Key = tuple[str, str]  # (framework id, demand name)


@dataclass(slots=True)
class Note:
    """The last pending event recorded for a demand (rule 4)."""

    message: str
    recorded_at: float
    reasoned_at: float


class PendingEvents:
    def __init__(self) -> None:
        self.notes: dict[Key, Note] = {}
        self.scanned_at = -float("inf")
        self.arrays: AgentArrays | None = None  # the agents' arrays, kept across scans
        self.tested: dict[Key, float] = {}  # when each pending demand was last tested (rule 5)
        # demands.connected_agents as of ``Largest.version`` (moved by every attach and
        # detach, the only ways the agents in the allocator change): sorting 10,000 ids
        # per scan was ~10 % of it.
        self.connected: list[AgentRecord] = []
        self.connected_version = -1

    def forget(self, framework_id: str, demand: str) -> None:
        self.notes.pop((framework_id, demand), None)
