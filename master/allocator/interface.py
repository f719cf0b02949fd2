"""The allocator's contract with the master core.

The core owns all bookkeeping of offers and tasks; the allocator owns the arithmetic of *who gets
what next*. The core tells it about agents, frameworks, charges and returns; once per allocation
interval it calls ``cycle()`` and applies the plan it gets back.

Accounting rule (as in Mesos): resources are *charged* to a framework from the moment they are
offered until they are declined, rescinded, left unused by an accept, or freed by a task's end.
So ``cycle()`` charges what it plans, and the core later calls ``recover()`` for whatever comes
back. Only scalars (``corral.resources.SCALARS`` order: cpus, mem, disk, gpus) are the
allocator's concern; the core hands out port ranges with the agent's offer.

Implementations must be deterministic: the same calls with the same ``now`` and ``seed`` give
the same plan.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, Protocol, overload

import numpy as np
import numpy.typing as npt

from corral.limits import MAX_DEMAND_COUNT
from corral.master.allocator.options import REASON_DRAINING, REASON_FILTER, REASON_GPU
from corral.master.allocator.rules.facts import RuleOptions
from corral.placement import AttributeConstraint, Taint, Toleration
from corral.resources import EPSILON

Scalars = tuple[float, float, float, float]


@dataclass(frozen=True, slots=True)
class Allocation:
    """One entry of a cycle's plan: offer these scalars of this agent to this framework."""

    framework_id: str
    agent_id: str
    scalars: Scalars


# A (framework row, agent row) pair as one int: (agent row << PAIR_FW_BITS) | framework row.
# The charge book's key (charge_table.py) and a plan entry's handle. Framework rows stay below
# 2**24; agent rows below 2**31 keep keys below 2**55.
PAIR_FW_BITS = 24
PAIR_FW_MASK = (1 << PAIR_FW_BITS) - 1


@dataclass(frozen=True, slots=True)
class PlanSource:
    """The id tables a plan made by ``from_rows`` named its rows in, as they were then. The
    allocator never changes a table it handed out in place (it copies first), so ``table is``
    its current one means no framework or agent came or went since."""

    framework_table: Sequence[str]
    agent_table: Sequence[str]

    def entries(
        self, handles: npt.ArrayLike, scalars: npt.ArrayLike
    ) -> list[tuple[str, str, Sequence[float]]]:
        """(framework id, agent id, scalars) of each handle, as ``recover_many`` takes them."""
        fws, agents = self.framework_table, self.agent_table
        keys: list[int] = np.asarray(handles, dtype=np.int64).tolist()
        rows: list[list[float]] = np.asarray(scalars, dtype=np.float64).reshape(-1, 4).tolist()
        return [
            (fws[h & PAIR_FW_MASK], agents[h >> PAIR_FW_BITS], s)
            for h, s in zip(keys, rows, strict=True)
        ]


class Plan(Sequence[Allocation]):
    """A cycle's plan as columns: framework ids, agent ids and a [n, 4] array of scalars.

    A sequence of ``Allocation`` for whoever wants objects; ``columns()`` gives the three columns
    without making one object per offer (a 10k-offer cycle would spend ~10 ms on them). The
    numpy allocator hands over row numbers and its id tables (``from_rows``): ids are looked up
    when first asked for, by the consumer, not inside the cycle.

    Such a plan also gives each entry a handle (``source``, ``handles()``): an offer that keeps
    its handle goes back (``Allocator.recover_handles``) without its ids being looked up again.
    The handle is an int, so an offer does not keep the plan's arrays alive."""

    __slots__ = ("_agents", "_frameworks", "_rows", "_scalars", "_unresolved", "source")

    def __init__(
        self,
        framework_ids: list[str],
        agent_ids: list[str],
        scalars: npt.NDArray[np.float64] | None = None,
    ) -> None:
        if scalars is None:
            scalars = np.zeros((0, 4))
        if not len(framework_ids) == len(agent_ids) == scalars.shape[0]:
            raise ValueError("plan columns differ in length")
        self._frameworks = framework_ids
        self._agents = agent_ids
        self._scalars = scalars
        self.source: PlanSource | None = None  # set by from_rows
        # (framework rows, agent rows) in ``source``'s tables (from_rows)
        self._rows: tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]] | None = None
        self._unresolved = False  # ids not looked up in the tables yet (_resolve)

    @classmethod
    def from_rows(
        cls,
        framework_table: Sequence[str],
        framework_rows: npt.NDArray[np.intp],
        agent_table: Sequence[str],
        agent_rows: npt.NDArray[np.intp],
        scalars: npt.NDArray[np.float64],
    ) -> Plan:
        """A plan naming frameworks and agents by row in id tables that the caller promises
        never to change in place (the allocator's tables are copied on write)."""
        if not len(framework_rows) == len(agent_rows) == scalars.shape[0]:
            raise ValueError("plan columns differ in length")
        plan = cls([], [], None)
        plan._scalars = scalars
        plan.source = PlanSource(framework_table, agent_table)
        plan._rows = (framework_rows, agent_rows)
        plan._unresolved = True
        return plan

    def _resolve(self) -> None:
        if self._unresolved and self.source is not None and self._rows is not None:
            fw_rows, agent_rows = self._rows
            fw_table, agent_table = self.source.framework_table, self.source.agent_table
            self._frameworks = list(map(fw_table.__getitem__, fw_rows.tolist()))
            self._agents = list(map(agent_table.__getitem__, agent_rows.tolist()))
            self._unresolved = False

    @classmethod
    def of(cls, allocations: Sequence[Allocation]) -> Plan:
        scalars = np.array([a.scalars for a in allocations], dtype=np.float64).reshape(-1, 4)
        return cls(
            [a.framework_id for a in allocations], [a.agent_id for a in allocations], scalars
        )

    def columns(self) -> tuple[list[str], list[str], list[list[float]]]:
        """(framework ids, agent ids, scalars as lists of 4 floats), one entry per offer."""
        self._resolve()
        return self._frameworks, self._agents, self._scalars.tolist()

    def handles(self) -> list[int]:
        """Each entry's handle in ``source`` (empty without a source)."""
        return self.handle_array().tolist()  # type: ignore[no-any-return]

    def handle_array(self) -> npt.NDArray[np.int64]:
        """``handles()`` as an array."""
        if self._rows is None:
            return np.zeros(0, dtype=np.int64)
        frameworks, agents = self._rows
        return (agents.astype(np.int64) << PAIR_FW_BITS) | frameworks

    def ids(self) -> tuple[list[str], list[str]]:
        """(framework ids, agent ids), one entry per offer."""
        self._resolve()
        return self._frameworks, self._agents

    def by_framework(self, n: int) -> list[tuple[str, npt.NDArray[np.intp]]]:
        """The first ``n`` entries by framework: (framework id, its entries' indices in plan
        order), frameworks in the order of their first entry. From the rows when the plan has
        them (no id looked up per entry)."""
        if self._rows is None or self.source is None:
            groups: dict[str, list[int]] = {}
            for i, fid in enumerate(self.ids()[0][:n]):
                groups.setdefault(fid, []).append(i)
            return [(fid, np.array(idx, dtype=np.intp)) for fid, idx in groups.items()]
        if n == 0:
            return []
        rows = self._rows[0][:n]
        order = np.argsort(rows, kind="stable")
        ranked = rows[order]
        bounds = [*np.flatnonzero(np.r_[True, ranked[1:] != ranked[:-1]]).tolist(), n]
        table = self.source.framework_table
        out = [(table[ranked[a]], order[a:b]) for a, b in pairwise(bounds)]
        out.sort(key=lambda g: int(g[1][0]))
        return out

    def agents_at(self, idx: npt.NDArray[np.intp]) -> list[str]:
        """The agent ids of entries ``idx``."""
        if self._unresolved and self.source is not None and self._rows is not None:
            return list(map(self.source.agent_table.__getitem__, self._rows[1][idx].tolist()))
        agents = self._agents
        return [agents[i] for i in idx.tolist()]

    def scalar_array(self) -> npt.NDArray[np.float64]:
        """The [n, 4] scalars (cpus, mem, disk, gpus); not to be changed."""
        return self._scalars

    def __len__(self) -> int:
        return int(self._scalars.shape[0])

    @overload
    def __getitem__(self, index: int) -> Allocation: ...

    @overload
    def __getitem__(self, index: slice) -> Plan: ...

    def __getitem__(self, index: int | slice) -> Allocation | Plan:
        self._resolve()
        if isinstance(index, slice):
            return Plan(self._frameworks[index], self._agents[index], self._scalars[index])
        s = self._scalars[index].tolist()
        return Allocation(self._frameworks[index], self._agents[index], (s[0], s[1], s[2], s[3]))

    def __iter__(self) -> Iterator[Allocation]:
        for fid, aid, s in zip(*self.columns(), strict=True):
            yield Allocation(fid, aid, (s[0], s[1], s[2], s[3]))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Plan({list(self)!r})"


@dataclass(frozen=True, slots=True)
class Explanation:
    """Why a framework got nothing (or what it got) in the last cycle, as structured data.

    ``reasons`` maps a fixed reason string (e.g. "refuse filter", "taint spot=true:NoSchedule",
    "quota limit gpus reached", "lower DRF order") to the number of agents it applied to (or, for
    order, the number of frameworks ahead).
    """

    framework_id: str
    offered_agents: int
    reasons: Mapping[str, int] = field(default_factory=dict)
    details: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Room:
    """Where one task of a shape could go for one framework now (``Allocator.room``): the
    master's gang bundles are cut from it (master/core/gangs.py).

    ``agent_ids`` are the agents the eligibility rule lets it be offered (placement, refuse
    filters, not draining; its own suppression is not asked) on which one task of the shape
    fits (``corral.resources.fits`` of ``unreserved + reserved``), sorted by id so every
    allocator gives the same answer; ``unreserved`` and ``reserved`` their free resources,
    rows in that order (``reserved``: its role's reservations); ``headroom`` what its role
    may still take of unreserved resources (quota limit, other roles' guarantees; inf: no
    bound). Asking with the shape first keeps a room
    of a 10k-agent cluster small when few agents fit (a GPU gang), so waiting gangs cost little
    per cycle."""

    agent_ids: Sequence[str]
    unreserved: npt.NDArray[np.float64]  # [len(agent_ids), 4]
    reserved: npt.NDArray[np.float64]  # [len(agent_ids), 4]
    headroom: Scalars
    # Asked with ``want``: only the agents with the most slots that hold ``want`` tasks (a cut
    # of ``want`` members takes the same agents from it as from the whole room). False: the
    # whole room (an allocator may always answer with it).
    partial: bool = False


@dataclass(frozen=True, slots=True)
class HeldBack:
    """``Allocator.held_back`` as arrays, for counting reasons over every agent at once (the
    why-pending scan): ``agent_ids`` every agent the allocator knows, by id; ``held`` each
    reason with the agents, in that order, it holds back: the dynamic rules rooms ask, in
    registry order (refuse filter, agent draining, any registered; rules.masks(rooms=True)),
    then an agent with GPUs kept from a framework without the GPU_RESOURCES capability
    (rules/gpus.py). One reason per agent: each mask leaves out the agents of those before."""

    agent_ids: Sequence[str]
    held: tuple[tuple[str, npt.NDArray[np.bool_]], ...]

    def of(self, reason: str) -> npt.NDArray[np.bool_]:
        """The agents ``reason`` holds back (none if it is not among ``held``)."""
        for why, mask in self.held:
            if why == reason:
                return mask
        return np.zeros(len(self.agent_ids), dtype=np.bool_)

    @property
    def filtered(self) -> npt.NDArray[np.bool_]:
        return self.of(REASON_FILTER)

    @property
    def draining(self) -> npt.NDArray[np.bool_]:
        return self.of(REASON_DRAINING)

    @property
    def kept_for_gpus(self) -> npt.NDArray[np.bool_]:
        return self.of(REASON_GPU)

    def as_dict(self) -> dict[str, str]:
        """The ``held_back`` form: reason by agent id, for the held agents."""
        ids = self.agent_ids
        out = {ids[i]: why for why, mask in self.held for i in np.flatnonzero(mask).tolist()}
        return dict(sorted(out.items()))


# A slot count is cut here: no demand asks for more tasks (corral.limits.MAX_DEMAND_COUNT), and
# counts (and the fit cache's sort keys, slots times agents) stay far inside int64 for any
# quantity, however small, that reaches the allocator.
MAX_SLOTS = MAX_DEMAND_COUNT


def slots_of_one(free: Sequence[float], shape: Scalars) -> int:
    """``slots`` for one agent, in plain Python (numpy's call overhead would cost more than
    the arithmetic: a charge recounts one agent, a gang cut a small room)."""
    counts = [
        math.floor(min(f / need, MAX_SLOTS) + EPSILON)
        for f, need in zip(free, shape, strict=True)
        if need > 0
    ]
    return max(0, min(counts)) if counts else 0


def slots(free: npt.NDArray[np.float64], shape: Scalars) -> npt.NDArray[np.int64]:
    """A room's slots: tasks of ``shape`` that fit each row of ``free`` ([n, 4]; unreserved plus
    reserved), the count gang cuts take agents by (master/core/gangs.py)."""
    need = np.asarray(shape, dtype=np.float64)
    asked = need > 0
    if not asked.any():
        return np.zeros(len(free), dtype=np.int64)
    with np.errstate(over="ignore"):  # a quotient past MAX_SLOTS is cut to it just below
        per = np.floor(np.minimum(free[:, asked] / need[asked], MAX_SLOTS) + EPSILON).min(axis=1)
    out: npt.NDArray[np.int64] = np.maximum(per, 0).astype(np.int64)
    return out


class Allocator(Protocol):
    @property
    def rule_options(self) -> RuleOptions:
        """How the placement rules are asked (rules/facts.py): the core asks them so too."""
        ...

    def reserve(self, agents: int, frameworks: int) -> None:
        """Make room now for this many agents and frameworks in all (a master recovering from
        its registry knows how many are coming back): arrays kept per agent and framework
        grow once, not by doublings under the arrivals. Changes no decision."""

    def add_agent(
        self,
        agent_id: str,
        total: Scalars,
        attributes: Mapping[str, str],
        taints: Sequence[Taint],
        reservations: Mapping[str, Scalars] | None = None,
    ) -> None: ...

    def remove_agent(self, agent_id: str) -> None: ...

    def set_agent_draining(self, agent_id: str, draining: bool) -> None: ...

    def set_agent_condition(self, agent_id: str, name: str, on: bool) -> None:
        """Set (or clear) a named agent condition a dynamic rule reads (rules/base.py;
        ``set_agent_draining`` is the "draining" condition's)."""

    def set_framework_condition(self, framework_id: str, name: str, on: bool) -> None:
        """Set (or clear) a named framework condition a dynamic rule reads (``set_suppressed``
        is the "suppressed" condition's)."""

    def set_agent_pressure(self, agent_id: str, under_pressure: bool) -> None:
        """The agent is (or no longer is) under memory pressure (rules/pressure.py)."""

    def set_besteffort(self, framework_id: str, besteffort_only: bool) -> None:
        """The framework wants (or no longer wants) only BestEffort work (rules/pressure.py)."""

    def set_demand_shapes(
        self, framework_id: str, shapes: tuple[tuple[float, ...], ...] | None
    ) -> None:
        """One task's shape per unmet demand of the framework (None: it sets no demands); an
        agent none of them fits is not offered to it (rules/demand_fit.py)."""

    def add_framework(
        self,
        framework_id: str,
        role: str,
        tolerations: Sequence[Toleration] = (),
        constraints: Sequence[AttributeConstraint] = (),
        gpu_resources: bool = False,
    ) -> None: ...

    def remove_framework(self, framework_id: str) -> None: ...

    def set_suppressed(self, framework_id: str, suppressed: bool) -> None: ...

    def set_priority(self, framework_id: str, priority: int) -> None:
        """The framework's priority level (order.py's key 1; higher goes first; 0 at first)."""

    def set_weight(self, role: str, weight: float) -> None: ...

    def set_quota(self, role: str, guarantee: Scalars | None, limit: Scalars | None) -> None: ...

    def allocate(self, framework_id: str, agent_id: str, scalars: Scalars) -> None:
        """Charge resources that are in use without a cycle (tasks found at re-registration)."""

    def recover(self, framework_id: str, agent_id: str, scalars: Scalars) -> None:
        """Return charged resources to the agent's free pool."""

    def recover_many(self, returns: Sequence[tuple[str, str, Sequence[float]]]) -> None:
        """``recover`` for each (framework, agent, scalars), in order: a batch of declines.
        Scalars may be any sequence of four (an offer keeps the plan's row as a list)."""

    def recover_handles(
        self, source: PlanSource, handles: npt.ArrayLike, scalars: npt.ArrayLike
    ) -> None:
        """``recover_many(source.entries(handles, scalars))`` (``handles`` ints, ``scalars``
        [n, 4], lists or arrays) for entries of plans this
        allocator's ``cycle`` made (each whole, scalars as planned), in order. An allocator may
        take them back by their rows without looking ids up again (a batch of declines is
        thousands of entries)."""

    def add_filter(
        self,
        framework_id: str,
        agent_id: str,
        expires_at: float,
        refused: Sequence[float] | None = None,
    ) -> None:
        """A refuse filter: no offers of this agent to this framework until ``expires_at``, or
        until the agent has more free than ``refused`` in some resource (None: everything was
        refused, only the expiry lifts it). See masks/filters.py."""

    def clear_filters(self, framework_id: str) -> None:
        """REVIVE: drop every refuse filter of the framework."""

    def charged(self, framework_id: str, agent_id: str) -> Scalars:
        """What the framework is charged on the agent (zeros if nothing): the core's
        ``validate()`` holds it to the tasks and offers the core knows of."""

    def cycle(self, now: float, seed: int, cpus: float = math.inf) -> Plan:
        """Run one allocation cycle at time ``now``; charge and return the plan.

        With ``cpus``, the walk stops after the first agent at which the plan holds that many
        cpus: a master pacing its launches asks for what it may offer, and the free agents
        past it are neither walked nor charged (and recovered) for nothing."""

    def room(self, framework_id: str, now: float, shape: Scalars, want: int | None = None) -> Room:
        """See ``Room``. Charges nothing: a caller that takes some of it charges what it takes
        with ``allocate`` (and gives it back with ``recover``). ``want``: the caller needs
        only the agents with the most slots that hold this many tasks (``Room.partial``)."""

    def held_back(self, framework_id: str, now: float) -> dict[str, str]:
        """Agents the framework is not offered now for a reason of its own or the agent's
        state, by id: "refuse filter" (its active refuse filters), "agent draining" (the
        filter when both), a registered dynamic rule's reason (rules.masks(rooms=True), in
        registry order) or, with none of those, an agent kept for GPU work from a framework
        without the GPU_RESOURCES capability (rules/gpus.py). Taints and constraints are not
        asked: the master's explain counts them against a demand's own tolerations and
        constraints."""

    def held_back_masks(self, framework_id: str, now: float) -> HeldBack:
        """``held_back`` over every agent as arrays (see ``HeldBack``)."""

    def has_room(self, framework_id: str, now: float, shape: Scalars) -> bool:
        """Whether ``room(framework_id, now, shape)`` holds any agent, without gathering it
        (the why-pending scan's fast test)."""

    def has_room_many(self, framework_id: str, now: float, shapes: Sequence[Scalars]) -> list[bool]:
        """``has_room`` for each of ``shapes``, in order: asked once for many shapes (a
        why-pending scan's), it need not make a fit cache entry per shape."""

    def explain(self, framework_id: str, now: float) -> Explanation: ...
