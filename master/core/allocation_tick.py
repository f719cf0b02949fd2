"""The allocation tick: what an AllocationTick offers, and to whom.

Rules (in this order):
1. Nominations past their time are swept, and agents held at their launch bound whose
   launches moved on are released (admission.py).
2. Launch pacing decides how many cpus this cycle may offer (pacing.py); a cycle the shell
   holds (its backlog at a bound) offers nothing. With nothing to offer, the allocator is
   spared its walk.
3. Preemption runs before the cycle (nominations.py rule 3), so the room a preemptor needs is
   not offered to others first.
4. Waiting gangs get their bundles before the regular cycle sees the resources (gangs.py rule
   2), then the allocator's plan is turned into offers (offer_book.py) up to what is left.
5. The window was in the way if the plan reached it (``pacer.limited``: the next cycle comes
   sooner, MasterCore.cycle_interval); why-pending events follow, rate-limited (pending.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from corral.master.core import commands as cmd
from corral.master.core import events as ev
from corral.master.core import gangs, nominations, pending
from corral.master.core.offer_columns import OfferColumns

if TYPE_CHECKING:
    from corral.master.core.master import MasterCore

Commands = list[cmd.Command]


def allocation_tick(core: MasterCore, e: ev.AllocationTick) -> Commands:
    out: Commands = nominations.sweep(core, e) if core.nominations else []
    if core.holds.held:
        core.holds.release(core)
    allowance = core.pacer.allowance(e.now)
    if e.hold:
        allowance = 0.0  # the shell's backlog is at its bound: let it drain first
    if allowance <= 0:
        core.pacer.limited = True
        return out  # nothing may be offered: spare the allocator a walk over the free agents
    if core.config.preemption:
        # Before the cycle: the free room a preemptor's planned tasks need beside their
        # victims' is held for it now, not offered to others first (nominations.py rule 3).
        out += nominations.preempt(core, e)
    per_fw: dict[str, list[OfferColumns]] = {}
    if core.gang_frameworks:
        allowance = _offer_gangs(core, e.now, allowance, per_fw)
    if allowance > 0:
        plan = core.allocator.cycle(e.now, e.seed, allowance)
        regular, allowance = core.book.make(plan, allowance, e.now)
        for fw_id, batch in regular.items():
            had = per_fw.get(fw_id)
            if had is None:
                per_fw[fw_id] = batch
            else:
                had.extend(batch)
    # The window was in the way if the plan reached it: the walk stopped there.
    core.pacer.limited = allowance <= 0
    out += [
        cmd.SendOffers(stimulus_id=e.stimulus_id, framework_id=fw_id, batches=tuple(batch))
        for fw_id, batch in per_fw.items()
    ]
    out += pending.scan(core, e)  # why-pending events, rate-limited (pending.py)
    return out


def _offer_gangs(
    core: MasterCore, now: float, allowance: float, per_fw: dict[str, list[OfferColumns]]
) -> float:
    """Gang rule 2 (gangs.py): cut a bundle for each waiting gang that fits, before the
    regular cycle sees the resources. Returns the allowance left."""
    for fw, d, members in gangs.candidates(core):
        if allowance <= 0:
            break
        shape = d.resources.scalars()
        allowed = gangs.demand_filter(core, d)
        room = core.allocator.room(fw.framework_id, now, shape, want=members)
        got = gangs.fit(room, shape, members, allowed)
        if not got.found and room.partial:
            # The head of the room did not do (the demand's own constraints or the role's
            # headroom): the whole room decides.
            room = core.allocator.room(fw.framework_id, now, shape)
            got = gangs.fit(room, shape, members, allowed)
        if not got.found:
            continue  # nothing held (gang rule 2); explain says why
        slots = [
            (aid, (k * shape[0], k * shape[1], k * shape[2], k * shape[3])) for aid, k in got.slots
        ]
        made = core.book.make_gang(fw, d.name, members, slots, now)
        allowance -= members * shape[0]
        per_fw.setdefault(fw.framework_id, []).append(made)
    return allowance
