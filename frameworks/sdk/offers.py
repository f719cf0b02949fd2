"""Offer arithmetic: does a task fit, how many fit, and packing several tasks into one offer.

These work on the wire messages directly (``corral.v1`` Resources, Offer, TaskInfo) so a
framework needs nothing else. Scalars compare with the master's own fit test and tolerance
(``corral.resources.fits`` and ``EPSILON``, the kernel module both share), so ten tasks of 0.1
cpu fit in 1 cpu, and a task the SDK packs is one the master accepts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from corral.resources import EPSILON as EPSILON  # the frameworks' tolerance, re-exported
from corral.resources import SCALARS
from corral.resources import fits as scalars_fit
from corral.v1.common_pb2 import Offer, Range, Resources, TaskInfo

_Ranges = list[tuple[int, int]]


def _resources_of(thing: Offer | TaskInfo | Resources) -> Resources:
    if isinstance(thing, Resources):
        return thing
    return thing.resources


def _ranges(resources: Resources) -> _Ranges:
    return sorted((r.begin, r.end) for r in resources.ports)


def _contains(outer: _Ranges, inner: _Ranges) -> bool:
    return all(any(ob <= b and e <= oe for ob, oe in outer) for b, e in inner)


def _subtract(outer: _Ranges, inner: _Ranges) -> _Ranges:
    result = outer
    for b, e in inner:
        nxt: _Ranges = []
        for ob, oe in result:
            if e < ob or b > oe:
                nxt.append((ob, oe))
                continue
            if ob < b:
                nxt.append((ob, b - 1))
            if e < oe:
                nxt.append((e + 1, oe))
        result = nxt
    return result


def _take_ports(available: _Ranges, count: int) -> _Ranges | None:
    """The lowest ``count`` ports of ``available`` as ranges, or None if there are fewer."""
    taken: _Ranges = []
    need = count
    for begin, end in available:
        if need == 0:
            break
        n = min(need, end - begin + 1)
        taken.append((begin, begin + n - 1))
        need -= n
    return taken if need == 0 else None


def fits(available: Offer | Resources, task: TaskInfo | Resources) -> bool:
    """True when every resource the task asks for (including its exact ports) is available."""
    have = _resources_of(available)
    want = _resources_of(task)
    return scalars_fit(_scalars(have), _scalars(want)) and _contains(_ranges(have), _ranges(want))


def _scalars(resources: Resources) -> tuple[float, float, float, float]:
    return (resources.cpus, resources.mem, resources.disk, resources.gpus)


def how_many_fit(available: Offer | Resources, shape: TaskInfo | Resources) -> int:
    """How many copies of ``shape`` the offer could hold at once.

    A shape that asks for nothing fits "infinitely": that is a bug in the caller, so it raises.
    A shape with fixed ports fits at most once, since two copies would want the same ports.
    """
    have = _resources_of(available)
    want = _resources_of(shape)
    counts: list[int] = []
    for name in SCALARS:
        need = float(getattr(want, name))
        if need > EPSILON:
            counts.append(math.floor((float(getattr(have, name)) + EPSILON) / need))
    if want.ports:
        counts.append(1 if _contains(_ranges(have), _ranges(want)) else 0)
    if not counts:
        raise ValueError("the task shape asks for no resources")
    return max(0, min(counts))


class OfferPacker:
    """Packs tasks into one offer, first come first served, tracking what is left.

    ``add`` returns False (and changes nothing) for a task that does not fit the remainder, so
    a framework can try every pending task against every offer::

        packer = OfferPacker(offer)
        pending = [t for t in pending if not packer.add(t)]
        await driver.launch([offer], packer.tasks)
    """

    def __init__(self, offer: Offer) -> None:
        self.offer = offer
        self.tasks: list[TaskInfo] = []
        self._scalars = {name: float(getattr(offer.resources, name)) for name in SCALARS}
        self._ports = _ranges(offer.resources)

    @property
    def remaining(self) -> Resources:
        """What is still free in the offer, as a Resources message."""
        s = self._scalars
        return Resources(
            cpus=s["cpus"],
            mem=s["mem"],
            disk=s["disk"],
            gpus=s["gpus"],
            ports=[Range(begin=b, end=e) for b, e in self._ports],
        )

    def add(self, task: TaskInfo, ports: int = 0) -> bool:
        """Take ``task`` if it fits; ``ports`` > 0 also assigns that many free offer ports.

        The task is added as given (not copied); assigned ports are appended to its
        ``resources.ports`` and listed in ``CORRAL_PORTS`` in its environment.
        """
        if ports < 0:
            raise ValueError(f"ports must be >= 0, got {ports}")
        if not fits(self.remaining, task):
            return False
        ranges = self._ports
        wanted = _ranges(task.resources)
        if wanted:
            ranges = _subtract(ranges, wanted)
        assigned: _Ranges = []
        if ports:
            got = _take_ports(ranges, ports)
            if got is None:
                return False
            assigned = got
            ranges = _subtract(ranges, assigned)
        # Committed from here on: nothing below can fail.
        for name in SCALARS:
            self._scalars[name] = max(0.0, self._scalars[name] - getattr(task.resources, name))
        self._ports = ranges
        if assigned:
            task.resources.ports.extend(Range(begin=b, end=e) for b, e in assigned)
            numbers = [str(p) for b, e in assigned for p in range(b, e + 1)]
            task.command.environment["CORRAL_PORTS"] = ",".join(numbers)
        self.tasks.append(task)
        return True

    def add_all(self, tasks: Sequence[TaskInfo]) -> list[TaskInfo]:
        """Add what fits, in order; return the tasks that did not fit."""
        return [t for t in tasks if not self.add(t)]


def place_gang(offers: Sequence[Offer], tasks: Sequence[TaskInfo]) -> list[TaskInfo]:
    """Copies of ``tasks``, each with the agent id of a gang offer that has room for it (first
    fit, offers and tasks in the order given): what ``Driver.launch`` needs to accept a gang's
    offers across agents. ``ValueError`` if they do not all fit (the master would refuse).

    ::

        bundle = [o for o in offers if o.gang_id == gang]
        await driver.launch(bundle, sdk.place_gang(bundle, members))
    """
    left = [Resources() for _ in offers]
    for room, offer in zip(left, offers, strict=True):
        room.CopyFrom(offer.resources)
    placed: list[TaskInfo] = []
    for t in tasks:
        for room, offer in zip(left, offers, strict=True):
            if fits(room, t):
                for name in SCALARS:
                    setattr(room, name, max(0.0, getattr(room, name) - getattr(t.resources, name)))
                copy = TaskInfo()
                copy.CopyFrom(t)
                copy.agent_id = offer.agent_id
                placed.append(copy)
                break
        else:
            raise ValueError(f"task {t.task_id!r} fits none of the offers' remaining resources")
    return placed
