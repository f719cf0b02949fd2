"""The status update manager: at-least-once delivery of task statuses to the master.

The rules:
- Every status is kept until the master acknowledges its uuid. Acknowledging a status also
  settles the older statuses of the same task: the master has seen something newer.
- Tasks are keyed by (framework id, task id), as the agent keys them.
- Statuses travel per task and in order: a retry resends all of a task's pending statuses,
  oldest first, so a master that lost track replays the task's history as it happened.
- A task's retries back off exponentially (``initial``, times ``factor``, capped at ``maximum``); a
  new status for the task restarts its backoff, since it was just sent.
- While the stream is down nothing is due; after re-registration everything pending is resent
  at once and every backoff starts over (``resend_all``).
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field

from corral.agent.core.types import Status
from corral.tasks import STATUS_RETRY_SECONDS

TaskKey = tuple[str, str]  # (framework id, task id)


@dataclass(slots=True)
class _TaskUpdates:
    pending: list[Status] = field(default_factory=list)
    interval: float = 0.0
    next_retry: float = 0.0
    token: int = -1  # of this task's live entry in the retry heap


@dataclass(frozen=True, slots=True)
class Backoff:
    """As Mesos: a status is only lost in flight when a stream breaks, and re-registration
    resends everything anyway; a short first retry just doubles the load on a busy master."""

    initial: float = STATUS_RETRY_SECONDS
    factor: float = 2.0
    maximum: float = 600.0


class StatusUpdateManager:
    def __init__(self, backoff: Backoff | None = None) -> None:
        self._backoff = backoff or Backoff()
        self._tasks: dict[TaskKey, _TaskUpdates] = {}
        # (next_retry, token, task key): the agent asks for the earliest retry after every
        # event, and a scan of every pending task was 5 % of a busy agent. An entry is live
        # while its token is its task's; the others are dropped when they reach the top.
        self._heap: list[tuple[float, int, TaskKey]] = []
        self._tokens = itertools.count()

    def _schedule(self, key: TaskKey, updates: _TaskUpdates, at: float) -> None:
        updates.next_retry = at
        updates.token = token = next(self._tokens)
        heapq.heappush(self._heap, (at, token, key))
        if len(self._heap) > 2 * len(self._tasks) + 64:  # mostly dead entries: rebuild
            self._heap = [(u.next_retry, u.token, t) for t, u in self._tasks.items()]
            heapq.heapify(self._heap)

    def add(self, status: Status, now: float) -> None:
        key = (status.framework_id, status.task_id)
        updates = self._tasks.get(key)
        if updates is None:
            updates = self._tasks[key] = _TaskUpdates()
        updates.pending.append(status)
        updates.interval = self._backoff.initial
        self._schedule(key, updates, now + updates.interval)

    def acknowledge(self, key: TaskKey, uuid: bytes) -> Status | None:
        """Settle ``uuid`` of the task ``key`` (framework id, task id), and the task's older
        statuses; return the status, None if unknown (a duplicate acknowledgement, which is
        normal under at-least-once)."""
        updates = self._tasks.get(key)
        if updates is None:
            return None
        pending = updates.pending
        newest = pending[-1]
        if newest.uuid == uuid:  # the usual case: the newest, so every status of it settles
            del self._tasks[key]
            return newest
        for index, status in enumerate(pending):
            if status.uuid == uuid:
                del pending[: index + 1]
                return status
        return None

    def due(self, now: float) -> list[Status]:
        """Statuses to resend now; their tasks back off."""
        out: list[Status] = []
        for key, updates in self._tasks.items():
            if updates.next_retry <= now:
                out.extend(updates.pending)
                updates.interval = min(
                    updates.interval * self._backoff.factor, self._backoff.maximum
                )
                self._schedule(key, updates, now + updates.interval)
        return out

    def resend_all(self, now: float) -> list[Status]:
        """Everything pending, oldest first per task; every backoff starts over."""
        out: list[Status] = []
        for key, updates in self._tasks.items():
            out.extend(updates.pending)
            updates.interval = self._backoff.initial
            self._schedule(key, updates, now + updates.interval)
        return out

    def next_retry(self) -> float | None:
        heap, tasks = self._heap, self._tasks
        while heap:
            at, token, key = heap[0]
            updates = tasks.get(key)
            if updates is not None and updates.token == token:
                return at
            heapq.heappop(heap)
        return None

    def pending(self, framework_id: str, task_id: str) -> tuple[Status, ...]:
        updates = self._tasks.get((framework_id, task_id))
        return tuple(updates.pending) if updates else ()

    def __len__(self) -> int:
        return sum(len(u.pending) for u in self._tasks.values())
