"""The status update manager: at-least-once delivery of task statuses to the master.

The rules:
- Every status is kept until the master acknowledges its uuid. Acknowledging a status also
  settles the older statuses of the same task: the master has seen something newer.
- Statuses travel per task and in order: a retry resends all of a task's pending statuses,
  oldest first, so a master that lost track replays the task's history as it happened.
- A task's retries back off exponentially (``initial``, times ``factor``, capped at ``maximum``); a
  new status for the task restarts its backoff, since it was just sent.
- While the stream is down nothing is due; after re-registration everything pending is resent
  at once and every backoff starts over (``resend_all``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agent.core.types import Status


@dataclass(slots=True)
class _TaskUpdates:
    pending: list[Status] = field(default_factory=list)
    interval: float = 0.0
    next_retry: float = 0.0


@dataclass(frozen=True, slots=True)
class Backoff:
    """As Mesos: a status is only lost in flight when a stream breaks, and re-registration
    resends everything anyway; a short first retry just doubles the load on a busy master."""

    initial: float = 10.0
    factor: float = 2.0
    maximum: float = 600.0


class StatusUpdateManager:
    def __init__(self, backoff: Backoff | None = None) -> None:
        self._backoff = backoff or Backoff()
        self._tasks: dict[str, _TaskUpdates] = {}

    def add(self, status: Status, now: float) -> None:
        updates = self._tasks.setdefault(status.task_id, _TaskUpdates())
        updates.pending.append(status)
        updates.interval = self._backoff.initial
        updates.next_retry = now + updates.interval

    def acknowledge(self, task_id: str, uuid: bytes) -> Status | None:
        """Settle ``uuid`` (and the task's older statuses); return the status, None if unknown
        (a duplicate acknowledgement, which is normal under at-least-once)."""
        updates = self._tasks.get(task_id)
        if updates is None:
            return None
        for index, status in enumerate(updates.pending):
            if status.uuid == uuid:
                del updates.pending[: index + 1]
                if not updates.pending:
                    del self._tasks[task_id]
                return status
        return None

    def due(self, now: float) -> list[Status]:
        """Statuses to resend now; their tasks back off."""
        out: list[Status] = []
        for updates in self._tasks.values():
            if updates.next_retry <= now:
                out.extend(updates.pending)
                updates.interval = min(
                    updates.interval * self._backoff.factor, self._backoff.maximum
                )
                updates.next_retry = now + updates.interval
        return out

    def resend_all(self, now: float) -> list[Status]:
        """Everything pending, oldest first per task; every backoff starts over."""
        out: list[Status] = []
        for updates in self._tasks.values():
            out.extend(updates.pending)
            updates.interval = self._backoff.initial
            updates.next_retry = now + updates.interval
        return out

    def next_retry(self) -> float | None:
        return min((u.next_retry for u in self._tasks.values()), default=None)

    def pending(self, task_id: str) -> tuple[Status, ...]:
        updates = self._tasks.get(task_id)
        return tuple(updates.pending) if updates else ()

    def __len__(self) -> int:
        return sum(len(u.pending) for u in self._tasks.values())
