"""Whole-job admission to queues with quotas (Kueue's model), pure and deterministic: workloads
in, a cycle's decisions out; time is an argument.

Rules (docs/jobs.md says the same for users):

1. A *workload* is a job's total request (every task it can run at once) in one cluster queue,
   with a priority and its submission order. It is **admitted whole** — its quota reserved in
   one flavor — or not at all; nothing of it runs before that (``QuotaReserved``).
2. A queue's pending workloads are ordered by priority (higher first), then by submission.
   ``StrictFIFO``: only the head may be admitted; if it does not fit, nothing behind it is.
   ``BestEffortFIFO``: a head that does not fit is passed over; smaller ones behind it go.
3. A cycle first admits, queue by queue, what fits within each queue's own *free nominal*
   quota (what its cohort lends it is not touched), then, across queues in priority and
   submission order, what fits by *borrowing* from the cohort (``ledger.py`` has the
   arithmetic, with ``borrowing_limit`` and ``lending_limit``). So a queue's nominal quota
   goes to its own jobs before anyone borrows it.
4. Flavors are tried in the queue's order; a workload takes the first in which it fits (and
   that its job allows).
5. **Reclaim**: a workload that does not fit, but would fit within its queue's nominal
   quota, may preempt workloads of other queues of its cohort that *borrow* (use more than
   their nominal quota) in that flavor — ``reclaim_within_cohort``: ``Any`` (whatever their
   priority), ``LowerPriority``, ``Never``. With ``within_cluster_queue: LowerPriority`` it may
   also preempt lower-priority workloads of its own queue. Victims are whole workloads: the
   lowest priority first, then the most recently admitted; a queue stops being a victim once
   it no longer borrows; only as many as it needs (a second pass puts back any victim it can
   do without); none at all if all of them would not make room. At most one workload per
   queue preempts per cycle.
6. A victim is *evicting* until its tasks have ended (``evicted``): its quota stays charged
   until then, and a workload that fits once the evicting ones are gone waits for them
   rather than preempting more. An evicted workload goes back to its queue in its old place.
7. Every pending workload a cycle looks at gets a reason: ``queue team-a needs 8 gpus, 4
   free nominal, cohort ml lends 2``.

``validate()`` checks the invariants (usage is the sum of what is admitted, no queue beyond
its nominal quota plus its borrowing limit, no cohort beyond its pool); the tests run it
after every step.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum

from corral.frameworks.jobs.ledger import Ledger, Room
from corral.frameworks.jobs.queues import (
    RESOURCES,
    UNCOUNTED,
    UNITS,
    ZERO,
    ClusterQueue,
    QueueConfig,
    QueueingStrategy,
    ReclaimPolicy,
    Vector,
    WithinQueuePolicy,
)
from corral.resources import EPSILON


class State(StrEnum):
    PENDING = "Pending"
    ADMITTED = "QuotaReserved"  # its quota is reserved; the service runs it
    EVICTING = "Evicting"  # preempted: its tasks are being killed, its quota still held


class AdmissionError(ValueError):
    """A call the model refuses (an unknown queue, a name already in use)."""


@dataclass(eq=False, slots=True)
class Workload:
    name: str
    cluster_queue: str
    priority: int
    submitted: float  # seconds; the order within a priority
    seq: int  # ties of ``submitted``
    request: Vector
    flavors: tuple[str, ...] | None = None  # the flavors its job allows; None: any
    state: State = State.PENDING
    flavor: str = ""
    admitted_at: float | None = None
    borrowing: bool = False
    reason: str = ""  # why it waits (pending), or why it is being evicted
    preempted_by: str = ""
    last_eviction: str = ""  # why it was last preempted, once requeued

    @property
    def key(self) -> tuple[int, float, int]:
        return (-self.priority, self.submitted, self.seq)


@dataclass(frozen=True, slots=True)
class Admit:
    name: str
    cluster_queue: str
    flavor: str
    borrowing: bool


@dataclass(frozen=True, slots=True)
class Preempt:
    victim: str
    preemptor: str
    reason: str  # names the queue that reclaims


@dataclass
class CycleResult:
    admitted: list[Admit] = field(default_factory=list)
    preempted: list[Preempt] = field(default_factory=list)
    considered: int = 0  # pending workloads looked at


@dataclass(frozen=True, slots=True)
class QueueStatus:
    """One cluster queue, one flavor, as the queues view shows it."""

    cluster_queue: str
    flavor: str
    cohort: str
    nominal: Vector
    used: Vector
    borrowed: Vector
    lent: Vector
    pending: int
    admitted: int


class Admission:
    def __init__(self, config: QueueConfig) -> None:
        self.config = config
        self.ledger = Ledger(config)
        self.workloads: dict[str, Workload] = {}
        self.pending: dict[str, list[Workload]] = {q: [] for q in config.cluster_queues}
        # Admitted and evicting workloads per queue (what holds its quota).
        self.admitted: dict[str, dict[str, Workload]] = {q: {} for q in config.cluster_queues}
        self._dirty: set[str] = set(config.cluster_queues)  # queues to look at next cycle
        # Per queue, no pending job asks for less than this of any resource (a bound kept
        # while jobs come, reset when the queue empties): when it does not fit, none does.
        self._smallest: dict[str, Vector] = {q: _NOTHING for q in config.cluster_queues}
        self._seq = 0
        self._fresh: set[str] = set()

    # -- what comes in --------------------------------------------------------------------

    def submit(
        self,
        name: str,
        cluster_queue: str,
        request: Vector,
        priority: int,
        submitted: float,
        flavors: tuple[str, ...] | None = None,
        seq: int | None = None,
    ) -> Workload:
        """A new pending workload. ``seq`` breaks ties of ``submitted`` (a restarted service
        passes the stored one, so the order is the same)."""
        if name in self.workloads:
            raise AdmissionError(f"workload {name!r} exists")
        if cluster_queue not in self.config.cluster_queues:
            raise AdmissionError(f"no cluster queue {cluster_queue!r}")
        if any(not (v >= 0 and math.isfinite(v)) for v in request):
            raise AdmissionError(f"workload {name!r}: request {request} must be finite and >= 0")
        if seq is None:
            seq = self._seq
        self._seq = max(self._seq, seq + 1)
        w = Workload(name, cluster_queue, priority, submitted, seq, request, flavors)
        self.workloads[name] = w
        self._enqueue(w)
        self._touch(cluster_queue)
        return w

    def restore_admitted(
        self,
        name: str,
        cluster_queue: str,
        request: Vector,
        priority: int,
        submitted: float,
        seq: int,
        flavor: str,
        admitted_at: float,
        evicting: bool = False,
        reason: str = "",
    ) -> Workload:
        """A workload admitted before a restart (the store's record), charged as it was."""
        w = self.submit(name, cluster_queue, request, priority, submitted, seq=seq)
        self._dequeue(w)
        if self.config.cluster_queues[cluster_queue].quotas(flavor) is None:
            raise AdmissionError(f"workload {name!r}: queue {cluster_queue} has no flavor {flavor}")
        self.ledger.charge(cluster_queue, flavor, request)
        self.admitted[cluster_queue][name] = w
        w.state = State.EVICTING if evicting else State.ADMITTED
        w.flavor, w.admitted_at, w.reason = flavor, admitted_at, reason
        w.borrowing = self.ledger.borrowing(cluster_queue, flavor, request)
        return w

    def finish(self, name: str) -> None:
        """The workload is gone (its job ended, was cancelled or suspended): its quota is
        released. Unknown names are ignored."""
        w = self.workloads.pop(name, None)
        if w is None:
            return
        if w.state is State.PENDING:
            self._dequeue(w)
        else:
            self.ledger.charge(w.cluster_queue, w.flavor, w.request, -1.0)
            del self.admitted[w.cluster_queue][name]
            self._touch(w.cluster_queue, cohort=True)

    def evicted(self, name: str) -> None:
        """A preempted workload's tasks have all ended: its quota is released and it goes
        back to its queue, in its old place."""
        w = self.workloads.get(name)
        if w is None or w.state is not State.EVICTING:
            return
        self.ledger.charge(w.cluster_queue, w.flavor, w.request, -1.0)
        del self.admitted[w.cluster_queue][name]
        self._touch(w.cluster_queue, cohort=True)
        w.state, w.flavor, w.admitted_at, w.borrowing = State.PENDING, "", None, False
        w.last_eviction, w.reason = w.reason.removeprefix("preempted: "), ""
        self._enqueue(w)

    def evict(self, name: str, reason: str) -> None:
        """Start evicting an admitted workload (a preemption decided elsewhere, or a
        suspension): its quota stays charged until ``evicted`` or ``finish``."""
        w = self.workloads[name]
        if w.state is State.ADMITTED:
            w.state, w.reason = State.EVICTING, reason

    # -- the cycle ------------------------------------------------------------------------

    def cycle(self, now: float) -> CycleResult:
        """One admission cycle (rules 3-6). Only queues where something changed since they
        were last looked at are looked at again (a job submitted to them, quota released in
        their cohort, a cohort member that started borrowing): otherwise nothing of theirs can
        fit now that did not fit then, as Kueue parks inadmissible workloads."""
        result = CycleResult()
        self._fresh = set()  # admitted in this cycle
        todo, self._dirty = self._dirty, set()
        leftover: dict[str, list[Workload]] = {}
        # Pass 1: each queue's own free nominal quota, queue by queue.
        for name in sorted(todo):
            queue = self.pending[name]
            if not queue:
                continue
            cq = self.config.cluster_queues[name]
            strict = cq.strategy is QueueingStrategy.STRICT_FIFO
            smallest = self._smallest[name]
            rest: list[Workload] = []
            if not self._room_for(cq, smallest, nominal_only=True):
                rest = queue  # not even its smallest job fits: nothing does
            for i, w in enumerate(queue if rest is not queue else ()):
                result.considered += 1
                flavor = self._first_fit(cq, w, nominal_only=True)
                if flavor is None:
                    if strict:
                        rest.extend(queue[i:])
                        break
                    rest.append(w)
                    continue
                self._admit(w, flavor, now, result)
                if not self._room_for(cq, smallest, nominal_only=True):
                    rest.extend(queue[i + 1 :])
                    break
            self.pending[name] = rest
            if rest:
                leftover[name] = rest
        # Pass 2, per cohort: borrowing across its queues in priority and submission order
        # while its pool has room, then one preemption attempt per queue.
        by_group: dict[str, dict[str, list[Workload]]] = {}
        for name, rest in leftover.items():
            cohort = self.config.cluster_queues[name].cohort
            by_group.setdefault(cohort or f"queue:{name}", {})[name] = rest
        for group, queues in by_group.items():
            if group.startswith("queue:") or not self._pool_has_room(group):
                for name, rest in queues.items():
                    cq = self.config.cluster_queues[name]
                    self._try_preempt(cq, rest[0], result, now)
                    if cq.strategy is QueueingStrategy.STRICT_FIFO:
                        continue
                    for w in rest[1:]:
                        w.reason = ""  # explain() says why from the ledger as it is then
                continue
            self._borrow(queues, result, now)
        return result

    def _pool_has_room(self, cohort: str) -> bool:
        for (c, _flavor), total in self.ledger.pool_total.items():
            if c != cohort:
                continue
            used = self.ledger.pool_used[(c, _flavor)]
            if any(total[r] - used[r] > EPSILON for r in range(len(RESOURCES))):
                return True
        return False

    def _borrow(self, queues: dict[str, list[Workload]], result: CycleResult, now: float) -> None:
        """The cohort's queues' leftovers merged in priority and submission order; a queue
        drops out of the merge once not even its smallest job could borrow, or (StrictFIFO)
        its head does not fit. Each queue's first workload that fits nowhere may preempt."""
        tried: set[str] = set()
        admitted: set[str] = set()
        heap = [(rest[0].key, name, 0) for name, rest in queues.items()]
        heapq.heapify(heap)
        while heap:
            _, name, i = heapq.heappop(heap)
            rest = queues[name]
            w = rest[i]
            cq = self.config.cluster_queues[name]
            more = i + 1 < len(rest)
            if not self._room_for(cq, self._smallest[name], nominal_only=False):
                if name not in tried:
                    tried.add(name)
                    self._try_preempt(cq, w, result, now)
                continue  # nothing more of this queue fits this cycle
            result.considered += 1
            flavor = self._first_fit(cq, w, nominal_only=False)
            if flavor is not None:
                self._admit(w, flavor, now, result)
                admitted.add(w.name)
            else:
                if name not in tried:
                    tried.add(name)
                    self._try_preempt(cq, w, result, now)
                else:
                    w.reason = ""  # explain() says why from the ledger as it is then
                if cq.strategy is QueueingStrategy.STRICT_FIFO:
                    continue
            if more:
                heapq.heappush(heap, (rest[i + 1].key, name, i + 1))
        if admitted:
            for name, rest in queues.items():
                self.pending[name] = [w for w in rest if w.name not in admitted]

    def _room_for(self, cq: ClusterQueue, request: Vector, nominal_only: bool) -> bool:
        """Whether ``request`` fits in some flavor of the queue."""
        return any(
            self.ledger.has_room(cq.name, fq.flavor, request, nominal_only) for fq in cq.flavors
        )

    def _admit(self, w: Workload, flavor: str, now: float, result: CycleResult) -> None:
        self.ledger.charge(w.cluster_queue, flavor, w.request)
        w.state, w.flavor, w.admitted_at = State.ADMITTED, flavor, now
        w.borrowing = self.ledger.borrowing(w.cluster_queue, flavor, w.request)
        w.reason, w.preempted_by = "", ""
        self.admitted[w.cluster_queue][w.name] = w
        result.admitted.append(Admit(w.name, w.cluster_queue, flavor, w.borrowing))
        self._fresh.add(w.name)
        if w.borrowing:  # new reclaim candidates for the cohort's other queues
            self._touch(w.cluster_queue, cohort=True)

    def _touch(self, queue: str, cohort: bool = False) -> None:
        """Look at ``queue`` (and with ``cohort``, every queue of its cohort) next cycle."""
        cq = self.config.cluster_queues[queue]
        self._dirty.update(self.config.members(cq) if cohort else (queue,))

    def _flavors(self, cq: ClusterQueue, w: Workload) -> Iterator[str]:
        for fq in cq.flavors:
            if w.flavors is None or fq.flavor in w.flavors:
                yield fq.flavor

    def _first_fit(self, cq: ClusterQueue, w: Workload, nominal_only: bool) -> str | None:
        fits, allowed = self.ledger.has_room, w.flavors
        for fq in cq.flavors:
            if (allowed is None or fq.flavor in allowed) and fits(
                cq.name, fq.flavor, w.request, nominal_only
            ):
                return fq.flavor
        return None

    # -- preemption -----------------------------------------------------------------------

    def _try_preempt(
        self, cq: ClusterQueue, w: Workload, result: CycleResult, now: float
    ) -> list[str] | None:
        """Rule 5 and 6 for ``w``, which fits nowhere now: preempt (recorded in ``result``),
        or wait for evicting workloads, or explain. The victims, or None."""
        for flavor in self._flavors(cq, w):
            without_evicting = self.ledger.copy()
            evicting = [
                v
                for m in self.config.members(cq)
                for v in self.admitted[m].values()
                if v.state is State.EVICTING and v.flavor == flavor
            ]
            for v in evicting:
                without_evicting.charge(v.cluster_queue, flavor, v.request, -1.0)
            if evicting and without_evicting.has_room(cq.name, flavor, w.request):
                names = ", ".join(sorted(v.name for v in evicting)[:3])
                w.reason = (
                    f"waiting for {len(evicting)} preempted job{'s' if len(evicting) > 1 else ''}"
                    f" to end ({names}) in flavor {flavor}"
                )
                return None
            victims = self._victims(cq, w, flavor, without_evicting, now)
            if victims:
                for v in victims:
                    reason = self._preempt_reason(cq, w, v)
                    v.state, v.reason, v.preempted_by = State.EVICTING, reason, w.name
                    result.preempted.append(Preempt(v.name, w.name, reason))
                names = ", ".join(sorted(v.name for v in victims)[:3])
                w.reason = (
                    f"waiting for {len(victims)} preempted job{'s' if len(victims) > 1 else ''}"
                    f" to end ({names}) in flavor {flavor}"
                )
                return [v.name for v in victims]
        w.reason = ""
        return None

    def _victims(
        self, cq: ClusterQueue, w: Workload, flavor: str, ledger: Ledger, now: float
    ) -> list[Workload] | None:
        members = self.config.members(cq)
        reclaim_ok = cq.reclaim_within_cohort is not ReclaimPolicy.NEVER
        within_ok = cq.within_cluster_queue is WithinQueuePolicy.LOWER_PRIORITY
        candidates: list[Workload] = []
        for v in (v for m in members for v in self.admitted[m].values()):
            if v.state is not State.ADMITTED or v.flavor != flavor or v.name in self._fresh:
                continue  # (one admitted this very cycle is not undone in it)
            if v.cluster_queue == cq.name:
                if within_ok and v.priority < w.priority:
                    candidates.append(v)
            elif v.cluster_queue in members and reclaim_ok:
                if (
                    cq.reclaim_within_cohort is ReclaimPolicy.LOWER_PRIORITY
                    and v.priority >= w.priority
                ):
                    continue
                if ledger.borrowing(v.cluster_queue, flavor, w.request):
                    candidates.append(v)
        if not candidates:
            return None
        # Other queues' borrowers first, then the lowest priority, then the newest.
        candidates.sort(
            key=lambda v: (
                v.cluster_queue == cq.name,
                v.priority,
                -(v.admitted_at or 0.0),
                -v.seq,
            )
        )
        sim = ledger.copy()
        chosen: list[Workload] = []
        fits = False
        for v in candidates:
            other = v.cluster_queue != cq.name
            if other:
                # Reclaim only for what fits within the preemptor's nominal quota, and only
                # from a queue that still borrows.
                if not sim.within_nominal(cq.name, flavor, w.request):
                    continue
                if not sim.borrowing(v.cluster_queue, flavor, w.request):
                    continue
            sim.charge(v.cluster_queue, flavor, v.request, -1.0)
            chosen.append(v)
            if sim.has_room(cq.name, flavor, w.request):
                fits = True
                break
        if not fits:
            return None
        # Put back any victim it can do without, the most expensive ones first.
        for v in reversed(chosen[:-1]):
            sim.charge(v.cluster_queue, flavor, v.request)
            if sim.has_room(cq.name, flavor, w.request):
                chosen.remove(v)
            else:
                sim.charge(v.cluster_queue, flavor, v.request, -1.0)
        return chosen

    def _preempt_reason(self, cq: ClusterQueue, w: Workload, v: Workload) -> str:
        if v.cluster_queue == cq.name:
            return (
                f"preempted in queue {cq.name} by job {w.name} of higher priority "
                f"({w.priority} > {v.priority})"
            )
        return (
            f"preempted: queue {cq.name} reclaims its nominal quota from cohort {cq.cohort} "
            f"(queue {v.cluster_queue} borrows it) for job {w.name}"
        )

    # -- explanations ---------------------------------------------------------------------

    def explain_pending(self, w: Workload) -> str:
        """Why ``w`` does not fit now, from the first flavor it may use: ``queue team-a needs
        8 gpus, 4 free nominal, cohort ml lends 2``."""
        cq = self.config.cluster_queues[w.cluster_queue]
        parts: list[str] = []
        for flavor in self._flavors(cq, w):
            room = self.ledger.room(cq.name, flavor)
            parts.append(self._shortfall(cq, flavor, w.request, room))
        if not parts:
            return f"queue {cq.name} has none of the flavors the job allows"
        return parts[0] + (
            f" (and no room in {len(parts) - 1} more flavors)" if len(parts) > 1 else ""
        )

    def _shortfall(self, cq: ClusterQueue, flavor: str, request: Vector, room: Room) -> str:
        quotas = cq.quotas(flavor)
        assert quotas is not None
        flavor_note = "" if len(cq.flavors) == 1 else f" of flavor {flavor}"
        for r, name in enumerate(RESOURCES):
            if quotas[r] is UNCOUNTED or request[r] <= room.available[r] + EPSILON:
                continue
            text = (
                f"queue {cq.name} needs {_amount(request[r])} {UNITS[name]}{flavor_note}, "
                f"{_amount(room.free_nominal[r])} free nominal"
            )
            if cq.cohort:
                text += f", cohort {cq.cohort} lends {_amount(room.lends(r))}"
            nominal = quotas[r].nominal
            if request[r] > nominal + quotas[r].borrowing_limit + EPSILON:
                text += (
                    f"; more than its nominal {_amount(nominal)} plus borrowing limit "
                    f"could ever give"
                )
            return text
        return f"queue {cq.name} has room{flavor_note} (admitted next cycle)"

    def explain(self, name: str) -> str:
        """The workload's state and why, one line (``Pending: ...``, ``QuotaReserved in
        flavor default``)."""
        w = self.workloads.get(name)
        if w is None:
            return "not queued"
        if w.state is State.ADMITTED:
            borrowing = ", borrowing from its cohort" if w.borrowing else ""
            return f"QuotaReserved in queue {w.cluster_queue}, flavor {w.flavor}{borrowing}"
        if w.state is State.EVICTING:
            return f"Evicting: {w.reason}"
        cq = self.config.cluster_queues[w.cluster_queue]
        queue = self.pending[cq.name]
        i = bisect.bisect_left(queue, w.key, key=lambda x: x.key)
        if cq.strategy is QueueingStrategy.STRICT_FIFO and i > 0 and queue[0] is not w:
            return (
                f"Pending: queue {cq.name} is StrictFIFO and {i} job"
                f"{'s' if i > 1 else ''} wait ahead of it (head: {queue[0].name})"
            )
        text = f"Pending: {w.reason or self.explain_pending(w)}"
        if w.last_eviction:
            text += f" (requeued after it was preempted: {w.last_eviction})"
        return text

    def position(self, name: str) -> int | None:
        """0-based place in its queue's order, None when not pending."""
        w = self.workloads.get(name)
        if w is None or w.state is not State.PENDING:
            return None
        queue = self.pending[w.cluster_queue]
        return bisect.bisect_left(queue, w.key, key=lambda x: x.key)

    def status(self) -> list[QueueStatus]:
        admitted: dict[str, int] = {}
        for w in self.workloads.values():
            if w.state is not State.PENDING:
                admitted[w.cluster_queue] = admitted.get(w.cluster_queue, 0) + 1
        out = []
        for cq in self.config.cluster_queues.values():
            for fq in cq.flavors:
                nominal = tuple(math.inf if q is UNCOUNTED else q.nominal for q in fq.quotas)
                out.append(
                    QueueStatus(
                        cq.name,
                        fq.flavor,
                        cq.cohort,
                        nominal,  # type: ignore[arg-type]
                        tuple(self.ledger.usage[(cq.name, fq.flavor)]),  # type: ignore[arg-type]
                        self.ledger.borrowed(cq.name, fq.flavor),
                        self.ledger.lent(cq.name, fq.flavor),
                        len(self.pending[cq.name]),
                        admitted.get(cq.name, 0),
                    )
                )
        return out

    # -- invariants -----------------------------------------------------------------------

    def validate(self) -> None:
        expected = {k: [0.0] * len(RESOURCES) for k in self.ledger.usage}
        queued: dict[str, int] = {}
        for w in self.workloads.values():
            if w.state is State.PENDING:
                queued[w.name] = queued.get(w.name, 0) + 1
                continue
            used = expected[(w.cluster_queue, w.flavor)]
            for r in range(len(RESOURCES)):
                used[r] += w.request[r]
        for qname, queue in self.pending.items():
            keys = [w.key for w in queue]
            assert keys == sorted(keys), f"queue {qname} is out of order"
            for w in queue:
                assert w.cluster_queue == qname and w.state is State.PENDING, w
                assert self.workloads.get(w.name) is w, f"{w.name} queued but unknown"
                queued[w.name] -= 1
        assert all(v == 0 for v in queued.values()), f"pending workloads not queued once: {queued}"
        for qname, held in self.admitted.items():
            for name, w in held.items():
                assert self.workloads.get(name) is w and w.cluster_queue == qname, name
                assert w.state is not State.PENDING, name
        assert sum(len(h) for h in self.admitted.values()) == sum(
            w.state is not State.PENDING for w in self.workloads.values()
        ), "admitted index out of step"
        for key, used in self.ledger.usage.items():
            for r in range(len(RESOURCES)):
                assert abs(used[r] - expected[key][r]) < 1e-6, (key, used, expected[key])
        fresh = Ledger(self.config)
        for key, used in self.ledger.usage.items():
            fresh.charge(key[0], key[1], tuple(used))  # type: ignore[arg-type]
        for key, pool in self.ledger.pool_used.items():
            for r in range(len(RESOURCES)):
                assert abs(pool[r] - fresh.pool_used[key][r]) < 1e-6, ("pool", key, pool)
                assert pool[r] <= self.ledger.pool_total[key][r] + 1e-6, ("pool over", key, pool)
        for cq in self.config.cluster_queues.values():
            for fq in cq.flavors:
                used = self.ledger.usage[(cq.name, fq.flavor)]
                for r, q in enumerate(fq.quotas):
                    if q is UNCOUNTED:
                        continue
                    assert used[r] <= q.nominal + q.borrowing_limit + 1e-6, (cq.name, r, used)
                    if not cq.cohort:
                        assert used[r] <= q.nominal + 1e-6, (cq.name, r, used)

    # -- helpers --------------------------------------------------------------------------

    def _enqueue(self, w: Workload) -> None:
        queue = self.pending[w.cluster_queue]
        if not queue:
            self._smallest[w.cluster_queue] = w.request
        else:
            least = self._smallest[w.cluster_queue]
            self._smallest[w.cluster_queue] = (
                min(least[0], w.request[0]),
                min(least[1], w.request[1]),
                min(least[2], w.request[2]),
                min(least[3], w.request[3]),
            )
        bisect.insort(queue, w, key=lambda x: x.key)

    def _dequeue(self, w: Workload) -> None:
        queue = self.pending[w.cluster_queue]
        i = bisect.bisect_left(queue, w.key, key=lambda x: x.key)
        if i < len(queue) and queue[i] is w:
            del queue[i]
        else:  # cannot happen while keys are unique
            queue.remove(w)


_NOTHING: Vector = (math.inf, math.inf, math.inf, math.inf)


def _amount(value: float) -> str:
    if math.isinf(value):
        return "unlimited"
    return f"{value:g}" if value == int(value) else f"{value:.2f}".rstrip("0")


__all__ = [
    "ZERO",
    "Admission",
    "AdmissionError",
    "Admit",
    "CycleResult",
    "Preempt",
    "QueueStatus",
    "State",
    "Workload",
]
