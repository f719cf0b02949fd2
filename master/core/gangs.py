"""Gang offers (docs/scheduling.md, "Gang offers"): a demand with ``min_member`` = N is offered
as one bundle of N tasks' resources across agents, or not at all.

Rules:
1. A gang demand is *waiting* while its live tasks are fewer than its ``min_member``: its
   missing members (``min_member`` - live tasks) are offered only as a bundle, never agent by
   agent, so nothing is held for a gang that cannot start (the auto-suppress of demands.py
   counts a waiting gang as wanting nothing from the regular cycle). A gang at its minimum is
   ordinary demand for its further tasks (up to ``count``).
2. Bundles are cut before the regular cycle, in each allocation tick that has a waiting gang
   (no cost otherwise): higher class value first, then the least recently cut, framework id,
   demand name; at most ``demand_work.GANG_BUDGET`` cuts that find nothing a tick, none for a
   shape no agent could hold or one that failed this tick for as many members or fewer. Each is
   cut from the allocator's ``room`` for its framework (the eligibility rule: placement, refuse
   filters, draining) less the demand's own constraints: a slot is one task's shape on one
   agent, agents with the most slots first (fewest agents; ties by id), within the role's
   quota headroom. Found: the slots are charged (``allocate``) and offered, one offer per
   agent, marked with one gang id, in the tick's OFFERS. Not found: nothing is charged. A gang
   whose preemption holds room is not cut here: its bundle is made of its holds
   (gang_holds.py).
3. A demand has at most one bundle outstanding; a bundle's offers are all outstanding or none
   (offer_book.py, checked by validate()). An accept must use all of them and launch at least
   its members; declining any, a rescind of any, or the framework's stream going returns all.
4. A running gang whose member fails is the framework's to handle: the failure is reported as
   usual and the demand is waiting again (rule 1) once its live tasks fall below the minimum.
5. Priority across all demands (allocation_tick.py): a gang whose class is below the highest
   priority the regular cycle will serve is cut after that cycle, from what it left; an
   outstanding bundle is rescinded when a demand of a higher class has no room for a task
   (a higher-priority demand never waits behind a lower gang's bundle). A declined bundle is
   held back by the refuse filters its decline installs, as any offer: ``room`` leaves out
   the agents a framework's filters cover until they expire, whatever their amounts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from corral.master.allocator.interface import Room, Scalars, slots_of_one
from corral.master.allocator.interface import slots as room_slots
from corral.master.core import placement_facts
from corral.master.core.gang_bundle import Gang as Gang
from corral.master.core.records import FrameworkRecord
from corral.master.core.states import FrameworkState
from corral.master.core.types import Demand
from corral.resources import fits

if TYPE_CHECKING:
    from corral.master.core.state import CoreState


@dataclass(frozen=True, slots=True)
class Fit:
    """Where a bundle goes: ``slots`` (agent id, tasks) when all ``members`` fit, else empty;
    ``placeable`` how many of them fit now (for explain); ``headroom`` True when they fit the
    agents but not the role's quota headroom."""

    members: int
    placeable: int
    slots: tuple[tuple[str, int], ...]
    over_headroom: bool = False

    @property
    def found(self) -> bool:
        return bool(self.slots)


def missing(fw: FrameworkRecord, d: Demand) -> int:
    """Members the gang lacks to reach its minimum (0 for a demand that is not a gang)."""
    return max(0, d.min_member - fw.demand_tasks.get(d.name, 0))


def waiting(fw: FrameworkRecord, d: Demand) -> bool:
    """Rule 1."""
    return d.min_member > 0 and missing(fw, d) > 0


def fit(
    room: Room, shape: Scalars, members: int, allowed: Callable[[str], bool] | None = None
) -> Fit:
    """Rule 2's cut of ``members`` slots of ``shape`` from ``room`` (pure)."""
    if len(room.agent_ids) <= SMALL_ROOM:
        return _fit_small(room, shape, members, allowed)
    return _fit_arrays(room, shape, members, allowed)


def _fit_arrays(
    room: Room, shape: Scalars, members: int, allowed: Callable[[str], bool] | None
) -> Fit:
    need = np.asarray(shape, dtype=np.float64)
    m = len(room.agent_ids)
    if not m:
        return Fit(members, 0, ())
    per = room_slots(room.unreserved + room.reserved, shape)
    if allowed is not None:
        ids = room.agent_ids
        for i in np.flatnonzero(per).tolist():
            if not allowed(ids[i]):
                per[i] = 0
    placeable = int(min(int(per.sum()), members))
    if placeable < members:
        return Fit(members, placeable, ())
    # Most slots first, ties in id order (the room's order). Each agent taken holds at least
    # one member, so only the best ``members`` agents can be needed: a partition finds them
    # without sorting a 10k-agent room.
    key = per * (m + 1) - np.arange(m, dtype=np.int64)  # larger is better
    if m > members:
        best = np.argpartition(-key, members - 1)[:members]
        best = best[np.argsort(-key[best])]
    else:
        best = np.argsort(-key)
    held = per[best]
    before = np.cumsum(held) - held
    taken = np.minimum(held, np.maximum(members - before, 0))
    chosen = best[taken > 0]
    counts = taken[taken > 0]
    # What comes out of unreserved resources counts against the role's headroom.
    take = counts[:, None] * need[None, :]
    unreserved = np.maximum(take - room.reserved[chosen], 0.0).sum(axis=0)
    if not fits(room.headroom, unreserved.tolist()):
        return Fit(members, placeable, (), over_headroom=True)
    ids = room.agent_ids
    return Fit(
        members,
        placeable,
        tuple((str(ids[a]), k) for a, k in zip(chosen.tolist(), counts.tolist(), strict=True)),
    )


SMALL_ROOM = 32  # agents: below this, plain Python beats numpy's per-call overhead


def _fit_small(
    room: Room, shape: Scalars, members: int, allowed: Callable[[str], bool] | None
) -> Fit:
    """``fit`` for a small room (the head of one, usually: Allocator.room with ``want``), with
    the same arithmetic in plain Python; tests/unit/test_gangs_fit.py holds the two equal."""
    m = len(room.agent_ids)
    if not m:
        return Fit(members, 0, ())
    ids = room.agent_ids
    unreserved, reserved = room.unreserved.tolist(), room.reserved.tolist()
    per: list[int] = []
    for i in range(m):
        p = slots_of_one([u + r for u, r in zip(unreserved[i], reserved[i], strict=True)], shape)
        if p > 0 and allowed is not None and not allowed(ids[i]):
            p = 0
        per.append(p)
    placeable = min(sum(per), members)
    if placeable < members:
        return Fit(members, placeable, ())
    chosen: list[tuple[int, int]] = []
    left = members
    for i in sorted(range(m), key=lambda i: (-per[i], i)):
        if left <= 0:
            break
        k = min(per[i], left)
        chosen.append((i, k))
        left -= k
    over = [0.0, 0.0, 0.0, 0.0]
    for i, k in chosen:
        for j in range(4):
            over[j] += max(k * shape[j] - reserved[i][j], 0.0)
    if not fits(room.headroom, over):
        return Fit(members, placeable, (), over_headroom=True)
    return Fit(members, placeable, tuple((str(ids[i]), k) for i, k in chosen))


def demand_filter(core: CoreState, d: Demand, fw: FrameworkRecord) -> Callable[[str], bool] | None:
    """The placement rules per agent with the demand's own constraints added (the framework's
    alone are the allocator's, in room); None when it has none. Its tolerations cannot open an
    agent its framework's do not: an offer is the framework's, and the allocator's eligibility
    is per framework, so only its constraints are added."""
    if not d.constraints:
        return None
    agents = core.agents
    facts = placement_facts.framework_facts(fw.spec).with_demand(d.constraints, ())

    def allowed(agent_id: str) -> bool:
        return placement_facts.allows(core.allocator, facts, agents[agent_id])

    return allowed


def candidates(core: CoreState, now: float) -> list[tuple[FrameworkRecord, Demand, int, int]]:
    """Waiting gangs without a bundle outstanding, of frameworks that may be offered, in rule
    2's order, with the members each lacks and its class value."""
    out: list[tuple[int, str, str, FrameworkRecord, Demand, int]] = []
    outstanding = {(g.framework_id, g.demand) for g in core.book.gangs.values()}
    # A gang whose preemption holds room gets its bundle from those holds (gang_holds.py).
    outstanding.update((n.framework_id, n.demand) for n in core.nominations.values())
    for fw_id in core.gang_frameworks:
        fw = core.frameworks.get(fw_id)
        if (
            fw is None
            or fw.state is not FrameworkState.SUBSCRIBED
            or fw.connection is None
            or fw.suppressed
        ):
            continue
        for d in fw.demands.values():
            n = missing(fw, d) if d.min_member > 0 else 0
            if (
                n <= 0
                or (fw_id, d.name) in outstanding
                or core.quarantine.holds(fw_id, d.name, now)
            ):
                continue
            value = core.priority.value(d.priority_class)
            out.append((-value, fw_id, d.name, fw, d, n))
    rotation = core.gang_rotation
    if len(rotation.last) > len(out):
        rotation.keep({(x[1], x[2]) for x in out})
    # Higher classes first; within a class frameworks take turns (demand_work.py rule 3).
    ordered = rotation.order([(-x[0], x[1], x[2], x) for x in out])
    return [(fw, d, n, -v) for v, _, _, fw, d, n in ordered]


def value_of(core: CoreState, g: Gang) -> int:
    """The class value of an outstanding bundle's demand (the lowest if it is gone)."""
    fw = core.frameworks.get(g.framework_id)
    d = fw.demands.get(g.demand) if fw is not None else None
    return core.priority.value(d.priority_class) if d is not None else -(2**63)


def explain(
    core: CoreState, fw: FrameworkRecord, d: Demand, now: float, never_fits: bool = False
) -> dict[str, Any]:
    """What explain says of a gang demand: its bundle if one is outstanding, else how many of
    its missing members fit now (rule 2's cut, charging nothing; none when ``never_fits``: its
    shape is larger than every agent, demand_work.py)."""
    members = missing(fw, d)
    for g in core.book.gangs.values():
        if g.framework_id == fw.framework_id and g.demand == d.name:
            return {
                "members": g.members,
                "placeable": g.members,
                "offered": g.gang_id,
                "agents": len(g.offer_ids),
                "over_headroom": False,
            }
    if members <= 0 or never_fits:
        return {
            "members": members,
            "placeable": 0,
            "offered": "",
            "agents": 0,
            "over_headroom": False,
        }
    shape = d.resources.scalars()
    allowed = demand_filter(core, d, fw)
    # As the tick cuts (allocation_tick.py, _offer_gangs): the head of the room when it does, which
    # is the whole room's cut; else the whole room, for how many fit.
    room = core.allocator.room(fw.framework_id, now, shape, want=members)
    got = fit(room, shape, members, allowed)
    if not got.found and room.partial:
        room = core.allocator.room(fw.framework_id, now, shape)
        got = fit(room, shape, members, allowed)
    return {
        "members": members,
        "placeable": got.placeable,
        "offered": "",
        "agents": len(got.slots),
        "over_headroom": got.over_headroom,
    }
