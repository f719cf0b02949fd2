"""Nominations that end (nominations.py rule 4): their offer used or returned, past their
deadline, or their victims past the kill timeout, swept at each allocation tick. A gang's holds
end together, as one (gang_holds.py rule 3); an unused one is a strike against its demand
(preemption_budget.py rule 2), said as a ``nomination_expired`` event."""

from __future__ import annotations

from typing import TYPE_CHECKING

from corral.master.core import commands as cmd
from corral.master.core import gang_holds
from corral.master.core.nomination_holds import key as _key
from corral.master.core.nomination_holds import release
from corral.master.core.records import Nomination

if TYPE_CHECKING:
    from corral.master.core import events as ev
    from corral.master.core.state import CoreState


def sweep(core: CoreState, e: ev.Event) -> list[cmd.Command]:
    """End nominations whose offer was used or returned, expired, or whose victims outlived
    the kill timeout (rule 4). A gang's holds end together, as one (gang_holds.py rule 3)."""
    out: list[cmd.Command] = []
    ended: dict[tuple[str, str], list[Nomination]] = {}  # offers gone, by (framework, demand)
    expired: dict[tuple[str, str], list[Nomination]] = {}  # offers past their deadline
    for nkey, n in list(core.nominations.items()):
        group = (n.framework_id, n.demand)
        if n.offer_id:
            if core.offers.get(n.offer_id) is None:
                del core.nominations[nkey]  # used, declined or rescinded
                ended.setdefault(group, []).append(n)
            elif e.now >= n.expires_at:
                expired.setdefault(group, []).append(n)
        elif e.now >= n.expires_at:
            if not n.victims and gang_holds.is_gang_hold(core, n):
                expired.setdefault(group, []).append(n)  # a gang's holds that found no bundle
            else:
                release(core, n)
    for ns in ended.values():
        n = ns[0]
        if any(_launched_in(core, m) for m in ns):
            core.preemption_budget.used(n.framework_id, n.demand)
        else:
            out.append(_unused(core, n, e, "was declined or rescinded unused"))
    seconds = core.config.preemption_nomination_seconds
    for ns in expired.values():
        n = ns[0]
        offers = {m.offer_id: core.offers[m.offer_id] for m in ns if m.offer_id}
        for o in list(offers.values()):
            bundle = core.book.gangs.get(o.gang_id) if o.gang_id else None
            for oid in bundle.offer_ids if bundle is not None else ():
                offers.setdefault(oid, core.offers[oid])
        if offers:
            core.book.give_back(offers.values())
            out.append(
                cmd.SendRescind(
                    stimulus_id=e.stimulus_id,
                    framework_id=n.framework_id,
                    offer_ids=tuple(offers),
                )
            )
        for m in ns:
            if m.offer_id:
                core.nominations.pop(_key(m), None)
            else:
                release(core, m)
        out.append(_unused(core, n, e, f"was not used in {seconds:g}s"))
    return out


def _launched_in(core: CoreState, n: Nomination) -> bool:
    """The hold's offer launched tasks of its demand (preemption_budget.py rule 2)."""
    agent = core.agents.get(n.agent_id)
    if agent is None:
        return False
    return any(
        t.framework_id == n.framework_id
        and t.spec.demand == n.demand
        and t.launched_at >= n.offered_at
        for t in agent.tasks.values()
    )


def _unused(core: CoreState, n: Nomination, e: ev.Event, what: str) -> cmd.ClusterEvent:
    """A strike against the demand (preemption_budget.py rule 2), said as an event."""
    backoff = core.preemption_budget.unused(n.framework_id, n.demand, e.now)
    return core.cluster_event(
        e,
        "nomination_expired",
        n.framework_id,
        f"the room preempted on agent {n.agent_id} for demand {n.demand} {what}; "
        f"the demand preempts nothing for {backoff:g}s",
    )
