"""The allocation tick: what an AllocationTick offers, and to whom.

Rules (in this order):
1. Nominations past their time are swept, gangs' holds whose victims are gone are offered as
   their bundles if they could not be before (gang_holds.py), and agents held at their launch
   bound whose launches moved on are released (admission.py).
2. Launch pacing decides how many cpus this cycle may offer (pacing.py; launches on agents
   whose stream is down do not count); a cycle the shell holds (its backlog at a bound) offers
   nothing. With nothing to offer, the allocator is spared its walk.
3. Preemption runs before the cycle (nominations.py rule 3), so the room a preemptor needs is
   not offered to others first.
4. Outstanding gang bundles of a class below a demand that has no room are rescinded (gangs.py
   rule 5). Waiting gangs of a class at or above the highest priority the regular cycle serves
   get their bundles before that cycle sees the resources (gangs.py rule 2), then the
   allocator's plan is turned into offers (offer_book.py) up to what is left; lower gangs are
   cut after it, from what it left.
5. A unit of the passes over demands that raises quarantines its demand, and the tick goes on
   for everyone else (quarantine.py).
6. The window was in the way if the plan reached it (``pacer.limited``: the next cycle comes
   sooner, CoreState.cycle_interval); why-pending events follow, rate-limited (pending.py).
6. Revocable resources are offered after the regular cycle, apart from the allocator
   (revocable.py).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING

from corral.master.allocator.interface import Scalars
from corral.master.core import commands as cmd
from corral.master.core import (
    demand_work,
    demands,
    gang_holds,
    gangs,
    nomination_sweep,
    nominations,
    pending,
    revocable,
)
from corral.master.core import events as ev
from corral.master.core.offer_columns import OfferColumns
from corral.master.core.records import FrameworkRecord
from corral.master.core.states import FrameworkState
from corral.master.core.types import Demand

if TYPE_CHECKING:
    from corral.master.core.state import CoreState

Commands = list[cmd.Command]


def allocation_tick(core: CoreState, e: ev.AllocationTick) -> Commands:
    out: Commands = nomination_sweep.sweep(core, e) if core.nominations else []
    if core.nominations:
        out += gang_holds.retry(core, e)  # gangs' holds waiting for room for their bundle
    if len(core.quarantine):
        core.quarantine.sweep(e.now)
    if core.holds.held:
        core.holds.release()
    some_detached = core.agent_table.connected < len(core.agents)
    allowance = core.pacer.allowance(e.now, core.agents if some_detached else None)
    if e.hold:
        allowance = 0.0  # the shell's backlog is at its bound: let it drain first
    if allowance <= 0:
        core.pacer.limited = True
        return out  # nothing may be offered: spare the allocator a walk over the free agents
    if core.book.gangs:
        out += _rescind_lower_bundles(core, e)  # before preemption counts them as used
    if core.config.preemption:
        # Before the cycle: the free room a preemptor's planned tasks need beside their
        # victims' is held for it now, not offered to others first (nominations.py rule 3).
        out += nominations.preempt(core, e)
    per_fw: dict[str, list[OfferColumns]] = {}
    later: list[tuple[FrameworkRecord, Demand, int, int]] = []
    if core.gang_frameworks:
        waiting = gangs.candidates(core, e.now)
        if waiting:
            top = _top_regular_priority(core)
            first = [c for c in waiting if c[3] >= top]
            later = [c for c in waiting if c[3] < top]
            cuts = _GangPass()
            allowance = _offer_gangs(core, e, allowance, per_fw, first, cuts)
    if allowance > 0:
        plan = core.allocator.cycle(e.now, e.seed, allowance)
        regular, allowance = core.book.make(plan, allowance, e.now)
        for fw_id, batch in regular.items():
            had = per_fw.get(fw_id)
            if had is None:
                per_fw[fw_id] = batch
            else:
                had.extend(batch)
    if later and allowance > 0:
        allowance = _offer_gangs(core, e, allowance, per_fw, later, cuts)
    # The window was in the way if the plan reached it: the walk stopped there.
    core.pacer.limited = allowance <= 0
    if core.revocable.out or core.revocable.lenders:
        # Revocable resources, kept apart from the allocator's (revocable.py rule 3).
        made, rescinds = revocable.offer(core, e)
        out += rescinds
        for fw_id, cols in made.items():
            per_fw.setdefault(fw_id, []).append(cols)
    out += [
        cmd.SendOffers(stimulus_id=e.stimulus_id, framework_id=fw_id, batches=tuple(batch))
        for fw_id, batch in per_fw.items()
    ]
    out += pending.scan(core, e)  # why-pending events, rate-limited (pending.py)
    return out + core.quarantine.take_events()


def _top_regular_priority(core: CoreState) -> float:
    """The highest priority among the frameworks the regular cycle offers to (subscribed, not
    suppressed, wanting something of it); -inf with none."""
    top = -float("inf")
    for fw in core.frameworks.values():
        if (
            fw.state is FrameworkState.SUBSCRIBED
            and fw.connection is not None
            and not fw.suppressed
            and demands.offered_regularly(fw)
        ):
            top = max(top, demands.priority(fw, core.priority))
    return top


MAX_ROOM_TESTS = 16  # (framework, shape) pairs a tick tests for room before rescinding bundles


def _rescind_lower_bundles(core: CoreState, e: ev.AllocationTick) -> Commands:
    """Gang rule 5: a demand with unmet tasks, no room anywhere, and a class above an
    outstanding bundle's has that bundle (and any lower) rescinded, so its resources are
    free for the higher demand this tick. Demands are tested highest class first, a
    (framework, shape) once, at most MAX_ROOM_TESTS a tick."""
    bundles = [(gangs.value_of(core, g), g) for g in core.book.gangs.values()]
    lowest = min(v for v, _ in bundles)
    wanting: list[tuple[int, str, FrameworkRecord, Demand]] = []
    for fw in core.frameworks.values():
        if fw.state is not FrameworkState.SUBSCRIBED or fw.suppressed or not fw.demands:
            continue
        for d in fw.demands.values():
            value = core.priority.value(d.priority_class)
            if value > lowest and demands.unmet(fw, d) > 0 and not gangs.waiting(fw, d):
                wanting.append((value, fw.framework_id, fw, d))
    if not wanting:
        return []
    wanting.sort(key=lambda w: (-w[0], w[1], w[3].name))
    tested: set[tuple[str, Scalars]] = set()
    for value, fw_id, _, d in wanting:
        shape = d.resources.scalars()
        if (fw_id, shape) in tested:
            continue
        if len(tested) >= MAX_ROOM_TESTS:
            break
        tested.add((fw_id, shape))
        if core.allocator.has_room(fw_id, e.now, shape):
            continue
        below = [g for v, g in bundles if v < value]
        offers = [core.book.offers[oid] for g in below for oid in g.offer_ids]
        core.book.give_back(offers)
        out: Commands = []
        for g in below:
            out.append(
                cmd.SendRescind(
                    stimulus_id=e.stimulus_id, framework_id=g.framework_id, offer_ids=g.offer_ids
                )
            )
        return out + core.rescinded_events(
            out,
            e,
            f"rescinded: demand {d.name} of framework {fw_id} (class value {value}) "
            "has no room while this lower-priority gang bundle holds it",
        )
    return []


class _GangPass:
    """A tick's gang cuts (demand_work.py): how many found nothing, and the fewest members each
    shape failed for."""

    def __init__(self) -> None:
        self.cuts = 0
        self.failed: dict[Hashable, int] = {}


def _cut(core: CoreState, fw: FrameworkRecord, d: Demand, members: int, now: float) -> gangs.Fit:
    """Gang rule 2's cut for one gang, changing nothing (a quarantine unit)."""
    shape = d.resources.scalars()
    allowed = gangs.demand_filter(core, d, fw)
    room = core.allocator.room(fw.framework_id, now, shape, want=members)
    got = gangs.fit(room, shape, members, allowed)
    if not got.found and room.partial:
        # The head of the room did not do (the demand's own constraints or the role's
        # headroom): the whole room decides.
        room = core.allocator.room(fw.framework_id, now, shape)
        got = gangs.fit(room, shape, members, allowed)
    return got


def _offer_gangs(
    core: CoreState,
    e: ev.AllocationTick,
    allowance: float,
    per_fw: dict[str, list[OfferColumns]],
    waiting: list[tuple[FrameworkRecord, Demand, int, int]],
    gang_pass: _GangPass,
) -> float:
    """Gang rule 2 (gangs.py): cut a bundle for each of the ``waiting`` gangs that fits.
    Returns the allowance left."""
    now = e.now
    for fw, d, members, value in waiting:
        if allowance <= 0 or gang_pass.cuts >= demand_work.GANG_BUDGET:
            break
        shape = d.resources.scalars()
        key = demand_work.shape_key(fw.framework_id, d, value)
        failed = gang_pass.failed.get(key)
        if (failed is not None and members >= failed) or core.largest.never_fits(core, shape):
            continue
        core.gang_rotation.served(fw.framework_id, d.name, now)
        got = core.quarantine.run(
            core, e, "gang cut", fw.framework_id, d.name, _cut, core, fw, d, members, now
        )
        if got is None:
            continue  # quarantined (quarantine.py)
        if not got.found:
            gang_pass.cuts += 1  # the budget counts the cuts that found nothing
            gang_pass.failed[key] = min(members, failed if failed is not None else members)
            continue  # nothing held (gang rule 2); explain says why
        slots = [
            (aid, (k * shape[0], k * shape[1], k * shape[2], k * shape[3])) for aid, k in got.slots
        ]
        made = core.book.make_gang(fw, d.name, members, slots, now)
        allowance -= members * shape[0]
        per_fw.setdefault(fw.framework_id, []).append(made)
    return allowance
