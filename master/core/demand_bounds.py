"""What bounds the passes over demands that cannot fit (demand_work.py): the largest free room
and the rotations, the core's ``largest``, ``preempt_rotation`` and ``gang_rotation``."""

from __future__ import annotations

from collections.abc import Iterator
from heapq import heapify, heappop
from typing import TYPE_CHECKING, TypeVar

from corral.master.allocator.interface import Scalars
from corral.resources import fits

if TYPE_CHECKING:
    from corral.master.core.state import CoreState

T = TypeVar("T")


class Largest:
    """Rule 1: the largest total of any attached agent, per resource."""

    def __init__(self) -> None:
        self.version = 0  # bumped by membership.py on every attach and detach
        self._seen = -1
        self._value: Scalars = (0.0, 0.0, 0.0, 0.0)

    def changed(self) -> None:
        self.version += 1

    def get(self, core: CoreState) -> Scalars:
        if self._seen != self.version:
            top = [0.0, 0.0, 0.0, 0.0]
            for agent in core.agents.values():
                if agent.in_allocator:
                    for k, x in enumerate(agent.spec.resources.scalars()):
                        if x > top[k]:
                            top[k] = x
            self._value = (top[0], top[1], top[2], top[3])
            self._seen = self.version
        return self._value

    def never_fits(self, core: CoreState, shape: Scalars) -> bool:
        return not fits(self.get(core), shape)


class Rotation:
    """Rule 3: when each demand, by (framework id, name), was last fully evaluated."""

    def __init__(self) -> None:
        self.last: dict[tuple[str, str], float] = {}
        self.frameworks: dict[str, float] = {}
        self._turn = 0.0  # breaks ties between demands served at one ``now``

    def order(self, entries: list[tuple[int, str, str, T]]) -> list[T]:
        """Rule 3's order of (class value, framework id, demand name, item): higher classes
        first; within a class, frameworks take turns (the least recently served first), each
        offering its least recently served demand in its turn."""
        return list(self.ordered(entries))

    def ordered(self, entries: list[tuple[int, str, str, T]]) -> Iterator[T]:
        """``order(entries)``, made as it is read: a pass that stops at its budget after a few
        dozen of 5,000 demands (preemption's) sorts none of them. Each framework's queue is a
        heap of (last served, name), unique within the framework (an entry per demand), so it
        pops least recently served first; the times and turns are taken when called, so
        ``served`` while reading changes nothing."""
        classes = self._turns(entries)

        def read() -> Iterator[T]:
            for _, turns, groups in classes:
                queues = [groups[f] for f in turns]
                for q in queues:
                    heapify(q)
                while queues:
                    for q in queues:
                        yield heappop(q)[2]
                    queues = [q for q in queues if q]

        return read()

    def _turns(
        self, entries: list[tuple[int, str, str, T]]
    ) -> list[tuple[int, list[str], dict[str, list[tuple[float, str, T]]]]]:
        """Per class value, highest first: the frameworks in their turns' order, and each
        one's (last served, demand name, item)."""
        by_class: dict[int, dict[str, list[tuple[float, str, T]]]] = {}
        never = -float("inf")
        last = self.last.get  # self.since, without a call per entry (5,000 at a tick)
        for value, fw_id, name, item in entries:
            by_class.setdefault(value, {}).setdefault(fw_id, []).append(
                (last((fw_id, name), never), name, item)
            )
        out = []
        for value in sorted(by_class, reverse=True):
            groups = by_class[value]
            turns = sorted(groups, key=lambda f: (self.frameworks.get(f, never), f))
            out.append((value, turns, groups))
        return out

    def since(self, framework_id: str, name: str) -> float:
        return self.last.get((framework_id, name), -float("inf"))

    def served(self, framework_id: str, name: str, now: float) -> None:
        self._turn += 1e-9
        self.last[(framework_id, name)] = now + self._turn
        self.frameworks[framework_id] = now + self._turn

    def keep(self, live: set[tuple[str, str]]) -> None:
        """Forget the demands no longer pending (called with those seen this pass)."""
        if len(self.last) > len(live):
            self.last = {k: v for k, v in self.last.items() if k in live}
            fws = {k[0] for k in live}
            self.frameworks = {f: v for f, v in self.frameworks.items() if f in fws}
