"""The master's cluster events log: the newest events, bounded (docs/operations.md).

The oldest event is dropped when the log is full, and counted (``dropped``, exported as
``corral_events_dropped_total``): an operator who sees it grow knows the log no longer reaches
back to whatever they are looking for, and can follow the Operator ``Watch`` stream instead.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

from corral.master.core.commands import ClusterEvent

EVENT_LOG_SIZE = 1000  # as the master always kept (Mesos keeps none; Kubernetes an hour)


class EventLog:
    def __init__(self, size: int = EVENT_LOG_SIZE) -> None:
        if size < 1:
            raise ValueError(f"the event log holds at least 1 event, got {size}")
        self._events: deque[ClusterEvent] = deque(maxlen=size)
        self.dropped = 0

    def append(self, event: ClusterEvent) -> bool:
        """Add ``event``; True when the oldest event was dropped to make room."""
        full = len(self._events) == self._events.maxlen
        self._events.append(event)
        if full:
            self.dropped += 1
        return full

    def select(self, reason: str = "") -> list[ClusterEvent]:
        """Oldest first; only ``reason``'s when it is given."""
        if not reason:
            return list(self._events)
        return [e for e in self._events if e.reason == reason]

    def __iter__(self) -> Iterator[ClusterEvent]:
        return iter(self._events)

    def __len__(self) -> int:
        return len(self._events)
