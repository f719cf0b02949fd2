"""Room preempted for a gang becomes that gang's bundle, and nothing else (issue #32, defect 1).

A gang demand waiting for its minimum is offered only as one bundle (gangs.py rule 1). Its
preemption (nominations.py) holds room on several agents; were each hold offered as soon as its
own victims were gone, as an ordinary demand's is, the framework would get ordinary offers it
cannot use for the gang, and use them for something else (its requeued lower-priority tasks),
and the gang would preempt again: a loop.

Rules:
1. A waiting gang's preemption also holds the free room its planned members need on agents
   without victims (nominations.py ``_preempt_for``): every member has a hold, so the bundle
   does not depend on free room someone else may take meanwhile.
2. A gang's holds are one group, (framework, demand). Nothing of the group is offered while any
   of its victims lives. Then the holds, topped up with the agents' free room their members
   need beside them (as nominations.py rule 4), become one bundle of the gang's missing members
   (``make_gang``: one offer per agent, one gang id), offered to the framework alone; holds the
   bundle does not need go back to the pool. Members the holds cannot take (an agent left) are
   cut from the framework's room elsewhere; if they do not fit, the group waits, retried each
   allocation tick, until ``preemption_nomination_seconds`` after its last victim ended.
3. The bundle is accepted, declined, rescinded or expires whole (gangs.py rule 3), and counts
   once against the demand's preemption budget (preemption_budget.py rule 2) however many
   agents it spans. A gang that is no longer waiting (its members came some other way) gives
   its holds back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from corral.master.allocator.interface import Scalars, slots_of_one
from corral.master.core import commands as cmd
from corral.master.core import gangs
from corral.master.core.nomination_holds import release
from corral.master.core.records import FrameworkRecord, Nomination
from corral.master.core.states import FrameworkState
from corral.master.core.types import Demand

if TYPE_CHECKING:
    from corral.master.core import events as ev
    from corral.master.core.state import CoreState

Commands = list[cmd.Command]
Group = tuple[str, str]  # (framework id, demand)


def is_gang_hold(core: CoreState, n: Nomination) -> bool:
    """The nomination holds room for a gang still waiting for its bundle."""
    fw = core.frameworks.get(n.framework_id)
    d = fw.demands.get(n.demand) if fw is not None else None
    return d is not None and fw is not None and gangs.waiting(fw, d)


def group(core: CoreState, key: Group) -> list[Nomination]:
    return [n for n in core.nominations.values() if (n.framework_id, n.demand) == key]


def ready_groups(core: CoreState) -> list[Group]:
    """Groups whose victims are all gone and that are not offered yet (rule 2's retry)."""
    groups: dict[Group, bool] = {}
    for n in core.nominations.values():
        key = (n.framework_id, n.demand)
        ok = not n.victims and not n.offer_id and is_gang_hold(core, n)
        groups[key] = groups.get(key, True) and ok
    return [k for k, ok in groups.items() if ok]


def became_ready(core: CoreState, key: Group, now: float) -> None:
    """The group's last victim ended: its holds wait ``preemption_nomination_seconds`` at most."""
    deadline = now + core.config.preemption_nomination_seconds
    for n in group(core, key):
        n.expires_at = deadline


def offer(core: CoreState, key: Group, e: ev.Event) -> Commands:
    """Rule 2: the group as one bundle, if its victims are gone and its members fit."""
    members = group(core, key)
    if not members or any(n.victims or n.offer_id for n in members):
        return []
    fw = core.frameworks.get(key[0])
    d = fw.demands.get(key[1]) if fw is not None else None
    if fw is None or d is None or fw.state is not FrameworkState.SUBSCRIBED:
        return []
    want = gangs.missing(fw, d)
    if want <= 0:
        for n in members:  # rule 3: the gang is no longer waiting
            release(core, n)
        return []
    shape = d.resources.scalars()
    per_agent = sorted(
        ((_slots(core, n, shape), n) for n in members), key=lambda s: (-s[0], s[1].agent_id)
    )
    taken: list[tuple[Nomination, int]] = []
    left = want
    for k, n in per_agent:
        use = min(k, left)
        if use > 0:
            taken.append((n, use))
            left -= use
    elsewhere: list[tuple[str, int]] = []
    if left > 0:
        found = _room_elsewhere(core, fw, d, {n.agent_id for n in members}, left, e.now)
        if found is None:
            return []  # wait (rule 2); the tick retries, sweep() ends it at its deadline
        elsewhere = found
    # Each hold goes back and the bundle charges exactly its members' resources, in this one
    # event: no cycle sees any of it free.
    for n in members:
        if any(x > 0 for x in n.held):
            core.allocator.recover(n.framework_id, n.agent_id, _scalars(n.held))
            n.held = [0.0, 0.0, 0.0, 0.0]
    slots = [(n.agent_id, _times(shape, k)) for n, k in taken]
    slots += [(aid, _times(shape, k)) for aid, k in elsewhere]
    made = core.book.make_gang(fw, d.name, want, slots, e.now)
    ids = made.ids()
    offer_of = {aid: ids[i] for i, aid in enumerate(made.agent_ids)}
    used = {n.agent_id for n, _ in taken}
    deadline = e.now + core.config.preemption_nomination_seconds
    for n in members:
        if n.agent_id in used:
            n.offer_id = offer_of[n.agent_id]
            n.offered_at = e.now
            n.expires_at = deadline
        else:
            release(core, n)
    return [
        cmd.SendOffers(stimulus_id=e.stimulus_id, framework_id=fw.framework_id, batches=(made,))
    ]


def retry(core: CoreState, e: ev.Event) -> Commands:
    """Rule 2's retry, at each allocation tick before gangs are cut."""
    out: Commands = []
    for key in ready_groups(core):
        out += offer(core, key, e)
    return out


def _slots(core: CoreState, n: Nomination, shape: Scalars) -> int:
    """Whole members the hold takes with the agent's free room beside it."""
    from corral.master.core.preemption_room import UsedRoom

    agent = core.agents.get(n.agent_id)
    if agent is None or not agent.in_allocator:
        return 0
    used = UsedRoom(core).get(agent)  # tasks, offers and every hold on the agent, this one included
    free = [max(0.0, t - u) for t, u in zip(agent.spec.resources.scalars(), used, strict=True)]
    return slots_of_one([h + f for h, f in zip(n.held, free, strict=True)], shape)


def _room_elsewhere(
    core: CoreState, fw: FrameworkRecord, d: Demand, skip: set[str], count: int, now: float
) -> list[tuple[str, int]] | None:
    """``count`` members of ``d`` on agents other than ``skip``, as the gang cut would place
    them (gangs.py rule 2); None if they do not fit."""
    shape = d.resources.scalars()
    own = gangs.demand_filter(core, d, fw)

    def allowed(agent_id: str) -> bool:
        return agent_id not in skip and (own is None or own(agent_id))

    got = gangs.fit(core.allocator.room(fw.framework_id, now, shape), shape, count, allowed)
    return list(got.slots) if got.found else None


def _scalars(x: list[float]) -> Scalars:
    return (x[0], x[1], x[2], x[3])


def _times(shape: Scalars, k: int) -> Scalars:
    return (k * shape[0], k * shape[1], k * shape[2], k * shape[3])
