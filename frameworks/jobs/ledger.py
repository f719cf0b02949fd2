"""What each cluster queue uses of each flavor, and what that leaves it: the arithmetic of
nominal quotas, cohorts, borrowing and lending limits (Kueue's), in one place.

For one resource of one flavor, a queue with nominal quota ``N``, borrowing limit ``B`` and
lending limit ``L`` using ``U``:

- it keeps ``g = N - min(N, L)`` for itself (the cohort never uses it: its *guaranteed* part);
- the cohort's *pool* is the sum of its members' ``min(N, L)``; a member uses the pool for
  whatever it uses beyond its guaranteed part, ``max(0, U - g)``;
- so it may use ``min(N + B - U, max(0, g - U) + pool free)`` more: its own guaranteed room
  plus what the pool has left, never more than ``B`` beyond ``N``;
- of that, ``min(max(0, N - U), available)`` is *free nominal* quota, the rest the cohort
  *lends* (borrowing). A queue without a cohort has only its own ``N - U``.

A resource the queue does not name (``queues.UNCOUNTED``) is not counted: always room.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from corral.frameworks.jobs.queues import RESOURCES, UNCOUNTED, ZERO, QueueConfig, Vector
from corral.resources import EPSILON, fits

_R = range(len(RESOURCES))


@dataclass(frozen=True, slots=True)
class Room:
    """What a queue may still take of one flavor, per resource: ``free_nominal`` of its own
    quota, ``available`` in all (with what the cohort lends)."""

    free_nominal: Vector
    available: Vector

    def lends(self, r: int) -> float:
        return max(0.0, self.available[r] - self.free_nominal[r])


class Ledger:
    def __init__(self, config: QueueConfig) -> None:
        self.config = config
        # (queue, flavor) -> usage per resource
        self.usage: dict[tuple[str, str], list[float]] = {
            (cq.name, fq.flavor): [0.0] * len(RESOURCES)
            for cq in config.cluster_queues.values()
            for fq in cq.flavors
        }
        # (cohort, flavor) -> the pool's total and used, per resource
        self.pool_total: dict[tuple[str, str], list[float]] = {}
        self.pool_used: dict[tuple[str, str], list[float]] = {}
        for cq in config.cluster_queues.values():
            if not cq.cohort:
                continue
            for fq in cq.flavors:
                key = (cq.cohort, fq.flavor)
                total = self.pool_total.setdefault(key, [0.0] * len(RESOURCES))
                self.pool_used.setdefault(key, [0.0] * len(RESOURCES))
                for r in _R:
                    q = fq.quotas[r]
                    if q is not UNCOUNTED:
                        total[r] += q.lendable

        # (queue, flavor) -> (free nominal, available): valid until the next charge
        self._rooms: dict[tuple[str, str], tuple[Vector, Vector]] = {}

    def copy(self) -> Ledger:
        other = Ledger.__new__(Ledger)
        other.config = self.config
        other._rooms = {}
        other.usage = {k: list(v) for k, v in self.usage.items()}
        other.pool_total = self.pool_total
        other.pool_used = {k: list(v) for k, v in self.pool_used.items()}
        return other

    def charge(self, queue: str, flavor: str, request: Vector, sign: float = 1.0) -> None:
        """Add (``sign`` 1) or return (-1) ``request`` to the queue's use of ``flavor``."""
        self._rooms.clear()  # a charge may change any queue's room in the cohort
        cq = self.config.cluster_queues[queue]
        quotas = cq.quotas(flavor)
        assert quotas is not None, f"queue {queue} has no flavor {flavor}"
        used = self.usage[(queue, flavor)]
        pool = self.pool_used.get((cq.cohort, flavor)) if cq.cohort else None
        for r in _R:
            amount = request[r]
            if amount == 0.0:
                continue
            before = used[r]
            after = before + sign * amount
            if abs(after) < EPSILON:
                after = 0.0
            used[r] = after
            q = quotas[r]
            if pool is not None and q is not UNCOUNTED:
                g = q.guaranteed
                pool[r] += max(0.0, after - g) - max(0.0, before - g)

    def room(self, queue: str, flavor: str) -> Room:
        free, avail = self._room(queue, flavor)
        return Room(free, avail)

    def _room(self, queue: str, flavor: str) -> tuple[Vector, Vector]:
        key = (queue, flavor)
        cached = self._rooms.get(key)
        if cached is not None:
            return cached
        cq = self.config.cluster_queues[queue]
        quotas = cq.quotas(flavor)
        assert quotas is not None
        used = self.usage[(queue, flavor)]
        pool_total = self.pool_total.get((cq.cohort, flavor)) if cq.cohort else None
        pool_used = self.pool_used.get((cq.cohort, flavor)) if cq.cohort else None
        free: list[float] = []
        avail: list[float] = []
        for r in _R:
            q = quotas[r]
            if q is UNCOUNTED:
                free.append(math.inf)
                avail.append(math.inf)
                continue
            u = used[r]
            own = max(0.0, q.nominal - u)
            if pool_total is None or pool_used is None:
                a = own
            else:
                pool_free = max(0.0, pool_total[r] - pool_used[r])
                a = max(
                    0.0,
                    min(q.nominal + q.borrowing_limit - u, max(0.0, q.guaranteed - u) + pool_free),
                )
            free.append(min(own, a))
            avail.append(a)
        found = (tuple(free), tuple(avail))
        self._rooms[key] = found  # type: ignore[assignment]
        return found  # type: ignore[return-value]

    def has_room(
        self, queue: str, flavor: str, request: Vector, nominal_only: bool = False
    ) -> bool:
        """Whether ``request`` fits what the queue may still take of ``flavor`` (of its own
        nominal quota alone with ``nominal_only``): the kernel's one fit test."""
        free, avail = self._rooms.get((queue, flavor)) or self._room(queue, flavor)
        limit = free if nominal_only else avail
        return fits(limit, request)

    def borrowing(self, queue: str, flavor: str, resources: Vector | None = None) -> bool:
        """Whether the queue uses more than its nominal quota of ``flavor`` (of the resources
        ``resources`` asks for, when given)."""
        quotas = self.config.cluster_queues[queue].quotas(flavor)
        assert quotas is not None
        used = self.usage[(queue, flavor)]
        for r in _R:
            q = quotas[r]
            if q is UNCOUNTED or (resources is not None and resources[r] <= 0.0):
                continue
            if used[r] > q.nominal + EPSILON:
                return True
        return False

    def within_nominal(self, queue: str, flavor: str, request: Vector) -> bool:
        """Whether ``request`` on top of the queue's use stays within its nominal quota."""
        quotas = self.config.cluster_queues[queue].quotas(flavor)
        assert quotas is not None
        used = self.usage[(queue, flavor)]
        return all(
            quotas[r] is UNCOUNTED or used[r] + request[r] <= quotas[r].nominal + EPSILON
            for r in _R
        )

    def borrowed(self, queue: str, flavor: str) -> Vector:
        """What the queue uses beyond its nominal quota, per resource."""
        quotas = self.config.cluster_queues[queue].quotas(flavor)
        assert quotas is not None
        used = self.usage[(queue, flavor)]
        return tuple(  # type: ignore[return-value]
            0.0 if quotas[r] is UNCOUNTED else max(0.0, used[r] - quotas[r].nominal) for r in _R
        )

    def lent(self, queue: str, flavor: str) -> Vector:
        """What of the queue's unused nominal quota the cohort's other members use now: the
        members' borrowing shared among the lenders in proportion to what each has unused
        and lendable (so the figures of a cohort add up)."""
        cq = self.config.cluster_queues[queue]
        quotas = cq.quotas(flavor)
        assert quotas is not None
        if not cq.cohort:
            return ZERO
        out: list[float] = []
        for r in _R:
            if quotas[r] is UNCOUNTED:
                out.append(0.0)
                continue
            borrowed = 0.0
            unused: dict[str, float] = {}
            for m in self.config.members(cq):
                mq = self.config.cluster_queues[m].quotas(flavor)
                if mq is None or mq[r] is UNCOUNTED:
                    continue
                u = self.usage[(m, flavor)][r]
                borrowed += max(0.0, u - mq[r].nominal)
                unused[m] = max(0.0, min(mq[r].lendable, mq[r].nominal - u))
            total = sum(unused.values())
            share = unused[queue] / total if total > 0 else 0.0
            out.append(min(unused[queue], borrowed * share))
        return tuple(out)  # type: ignore[return-value]
