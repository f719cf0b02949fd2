"""The core's side of preemption: which demands preempt, killing the victims, and holding what
they free for the preemptor (nomination). The choice of victims is preemption.py's.

Rules (the core's validate() checks 3 and 4):
1. At each allocation tick, before the cycle offers anything, a demand with unmet tasks, a class
   that may preempt (not ``Never``), a subscribed framework that is not suppressed, and no
   nomination in progress, counts its tasks that fit in the room free for it now (its own offers
   count as room); for the rest it asks preemption.py for victims, within the cycle's bound and
   its framework's budget (preemption_budget.py). Searches stop for the tick once they have
   looked at ``demand_work.PREEMPTION_AGENT_VISITS`` agents, higher classes first and, within a
   class, the framework and then the demand least recently searched first; a shape no agent
   could hold, or one a search found nothing for this tick, is not searched (demand_work.py).
   Which demands may preempt by class, shape and unmet count is kept per framework across ticks
   (preempt_wanting.py), and the rotation is read only as far as the budgets reach.
2. A victim is told to die through its agent (SendKill) and remembers who preempted it; its
   KILLED status reaches its framework with reason PREEMPTED and that message.
3. What a victim frees when it ends is charged to the preemptor at once, in the same event
   (``held``): no cycle ever sees it free. So is, when the victims are chosen, the free room the
   planned tasks need beside them (``_hold_free_room``). The allocator charges the preemptor its
   tasks, its offers and its holds.
4. Once the last victim on the agent is gone, the hold becomes one offer to the preemptor,
   rescinded after ``preemption_nomination_seconds`` if unused; the offer adds the agent's
   free room the demand's tasks need beside the hold (``_top_up``), so it holds whole tasks.
   Until the offer is used, declined or rescinded (or the victims outlive
   ``preemption_kill_timeout``), the demand does not preempt again. A hold on an agent that
   leaves the allocator, or of a framework that leaves, goes back to the pool.
5. A gang waiting for its minimum preempts for its missing members, and its holds are not
   offered one by one: together they become its bundle (gang_holds.py), so room freed for a
   gang reaches that gang and nothing else.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING

from corral.master.allocator.interface import slots_of_one
from corral.master.core import commands as cmd
from corral.master.core import (
    demand_work,
    disruption_budgets,
    gang_holds,
    gangs,
    preempt_wanting,
    preemption,
)
from corral.master.core.nomination_holds import release
from corral.master.core.preemption_room import UsedRoom, may_die
from corral.master.core.records import (
    AgentRecord,
    FrameworkRecord,
    Nomination,
    NominationKey,
    TaskRecord,
)
from corral.master.core.states import AgentState, FrameworkState
from corral.master.core.types import Demand, TaskState
from corral.resources import fits

if TYPE_CHECKING:
    from corral.master.core import events as ev
    from corral.master.core.state import CoreState


def _lowest_live_priority(core: CoreState) -> float:
    values = [core.priority.value(name) for name, n in core.tasks.live_classes.items() if n > 0]
    return min(values) if values else float("inf")


def preempt(core: CoreState, e: ev.Event) -> list[cmd.Command]:
    """Rule 1 and 2, once per allocation cycle."""
    lowest = _lowest_live_priority(core)
    if all(c.value <= lowest for c in core.priority.classes.values()):
        return []  # no class is above every live task's (none live: inf): nobody to preempt
    wanting: list[preempt_wanting.Entry] = []
    busy = {(n.framework_id, n.demand) for n in core.nominations.values()}
    kept = core.preempt_wanting
    kept.keep(core.frameworks)
    for fw in core.frameworks.values():
        if fw.state is not FrameworkState.SUBSCRIBED or fw.suppressed or not fw.demands:
            continue
        # Its demands of a class that may preempt, needing room, with unmet tasks: kept
        # across ticks while they cannot have changed (preempt_wanting.py).
        entries, least = kept.of(fw, core.priority)
        if least > lowest and not busy:
            wanting += entries
        else:
            wanting += [
                w
                for w in entries
                if w[0] > lowest  # nobody to preempt: the common case ends here
                and (w[1], w[2]) not in busy
            ]
    if not wanting:
        return []
    rotation = core.preempt_rotation
    if len(rotation.last) > len(wanting):
        rotation.keep({(w[1], w[2]) for w in wanting})
    # Higher classes first; within a class frameworks take turns (demand_work.py), taken
    # only as far as the budgets below reach.
    ordered = rotation.ordered(wanting)
    used = UsedRoom(core)
    budget = core.config.preemption_max_victims_per_cycle
    per_framework = core.preemption_budget
    per_framework.sweep(e.now)
    out: list[cmd.Command] = []
    found_nothing: set[Hashable] = set()
    for value, fw_id, fw, d in ordered:
        if (
            budget <= 0
            or used.visits >= demand_work.PREEMPTION_AGENT_VISITS
            or used.searches >= demand_work.PREEMPTION_SEARCHES
        ):
            break
        allowance = per_framework.allowance(fw_id, d.name, e.now)
        if allowance <= 0:
            continue  # its bucket is empty, or its last room went unused (preemption_budget.py)
        shape = d.resources.scalars()
        key = demand_work.shape_key(fw_id, d, value)
        if (
            key in found_nothing
            or core.largest.never_fits(core, shape)
            or core.quarantine.holds(fw_id, d.name, e.now)
        ):
            continue
        rotation.served(fw_id, d.name, e.now)
        used.searches += 1
        cap = min(budget, allowance)
        found = core.quarantine.run(
            core, e, "preemption", fw_id, d.name, _search, core, fw, d, value, used, cap
        )
        made = _nominate(core, fw, d, found[0], used, e, found[1]) if found and found[0] else []
        if not made:
            found_nothing.add(key)
        per_framework.spent(fw_id, _victims_this_cycle(made), e.now)
        out += made
        budget = core.config.preemption_max_victims_per_cycle - _victims_this_cycle(out)
    return out


def _victims_this_cycle(out: list[cmd.Command]) -> int:
    return sum(1 for c in out if isinstance(c, cmd.SendKill))


def _search(
    core: CoreState,
    fw: FrameworkRecord,
    d: Demand,
    value: int,
    used: UsedRoom,
    budget: int,
) -> tuple[list[preemption.Placement], dict[str, int]]:
    """Rule 1's search for one demand, changing nothing (a quarantine unit): the placements
    that need victims (none: nothing to preempt), and for a waiting gang the members planned
    in free room per agent (gang_holds.py)."""
    shape = d.resources.scalars()
    # A waiting gang needs its missing members, as one bundle (gang_holds.py): it can use
    # neither its framework's ordinary offers nor room it does not hold.
    gang = gangs.waiting(fw, d)
    need = gangs.missing(fw, d) if gang else d.count - fw.demand_tasks.get(d.name, 0)
    free_slots: dict[str, int] = {}
    views: list[preemption.AgentView] = []
    agents = core.agents
    ids = core.tasks.sums.could_hold(shape, value)  # demand_work.py rule 4
    used.visits += len(ids)
    for agent_id in ids:
        agent = agents[agent_id]
        if (
            not agent.in_allocator
            or agent.state is not AgentState.ACTIVE
            or agent.connection is None
            or agent.maintenance is not None  # cordoned: nothing new goes there
            or not used.placeable(fw, d, agent)
        ):
            continue
        u = used.get(agent)
        free = [t - x for t, x in zip(agent.spec.resources.scalars(), u, strict=True)]
        for offer in core.book.of_agent(agent.agent_id):  # its own offers are room it can use
            if offer.framework_id == fw.framework_id and not gang:
                free = [f + x for f, x in zip(free, offer.scalars, strict=True)]
        while need > 0 and fits(free, shape):
            need -= 1
            free = [f - x for f, x in zip(free, shape, strict=True)]
            if gang:
                free_slots[agent_id] = free_slots.get(agent_id, 0) + 1
        if need <= 0:
            return [], {}  # room for every unmet task: nothing to preempt
        lower = used.lower(agent, value)
        if not fits([f + x for f, x in zip(free, lower, strict=True)], shape):
            continue  # not even every lower task gone would make room here
        candidates = tuple(
            _candidate(core, t) for t in agent.tasks.values() if may_die(core, t, value)
        )
        if candidates:
            views.append(preemption.AgentView(agent.agent_id, tuple(free), candidates))
    if not views:
        return [], free_slots
    placed = preemption.place(shape, need, value, views, _spare(core), budget, _allowed(core))
    return placed, free_slots


def _group(task: TaskRecord) -> str:
    return f"{task.framework_id}/{task.spec.demand}" if task.spec.demand else ""


def _candidate(core: CoreState, task: TaskRecord) -> preemption.Candidate:
    return preemption.Candidate(
        (task.framework_id, task.task_id),
        core.priority.value(task.spec.priority_class),
        task.launched_at,
        task.spec.resources.scalars(),
        _group(task),
        _budgets_of(core, task),
    )


def _budgets_of(core: CoreState, task: TaskRecord) -> tuple[str, ...]:
    """The disruption budgets a victim would count against: those selecting it while it is
    healthy (a task not RUNNING, or already being killed, is no disruption to its budget)."""
    budgets = core.config.disruption_budgets
    if not budgets or task.state is not TaskState.RUNNING or task.kill_requested:
        return ()
    fw = core.frameworks.get(task.framework_id)
    if fw is None:
        return ()
    labels = getattr(task.spec.wire, "labels", None)
    return tuple(b.name for b in budgets if b.selects(fw, labels))


def _allowed(core: CoreState) -> dict[str, int]:
    """Per disruption budget, how many of its healthy tasks may go now (preemption rule 4)."""
    out: dict[str, int] = {}
    for b in core.config.disruption_budgets:
        selected, healthy = disruption_budgets.health(b, core.frameworks.values())
        out[b.name] = disruption_budgets.allowed(b, selected, len(healthy))
    return out


def _spare(core: CoreState) -> dict[str, int]:
    """Per gang (a demand with min_member), how many of its live tasks it can lose."""
    spare: dict[str, int] = {}
    for fw in core.frameworks.values():
        for d in fw.demands.values():
            if d.min_member > 0:
                live = fw.demand_tasks.get(d.name, 0)
                spare[f"{fw.framework_id}/{d.name}"] = max(0, live - d.min_member)
    return spare


def _nominate(
    core: CoreState,
    fw: FrameworkRecord,
    d: Demand,
    placements: list[preemption.Placement],
    used: UsedRoom,
    e: ev.Event,
    free_slots: dict[str, int] | None = None,
) -> list[cmd.Command]:
    out: list[cmd.Command] = []
    by = f"preempted by framework {fw.framework_id} ({fw.spec.name}) for demand {d.name}"
    for p in placements:
        if not p.victims:
            continue  # room the earlier victims on that agent make: their hold covers it
        key = (fw.framework_id, d.name, p.agent_id)
        n = core.nominations.get(key)
        if n is None:
            n = Nomination(
                fw.framework_id,
                d.name,
                p.agent_id,
                set(),
                e.now,
                e.now + core.config.preemption_kill_timeout,
            )
            core.nominations[key] = n
        agent = core.agents[p.agent_id]
        for v in p.victims:
            task = agent.tasks[v.key]
            task.kill_requested = True
            task.preempted_by = by
            n.victims.add(v.key)
            core.victim_of[v.key] = key
            out.append(
                cmd.SendKill(
                    stimulus_id=e.stimulus_id,
                    agent_id=p.agent_id,
                    framework_id=task.framework_id,
                    task_id=task.task_id,
                )
            )
            out.append(
                core.cluster_event(
                    e,
                    "task_preempted",
                    task.task_id,
                    f"task of framework {task.framework_id} on agent {p.agent_id} {by} "
                    f"(priority {v.priority} < {core.priority.value(d.priority_class)})",
                )
            )
    if out and free_slots:
        # gang_holds.py rule 1: the members planned in free room are held too.
        for agent_id in free_slots:
            key = (fw.framework_id, d.name, agent_id)
            if key not in core.nominations:
                core.nominations[key] = Nomination(
                    fw.framework_id,
                    d.name,
                    agent_id,
                    set(),
                    e.now,
                    e.now + core.config.preemption_kill_timeout,
                )
    _hold_free_room(core, fw, d, placements, used, free_slots if out else None)
    return out


def _hold_free_room(
    core: CoreState,
    fw: FrameworkRecord,
    d: Demand,
    placements: list[preemption.Placement],
    used: UsedRoom,
    free_slots: dict[str, int] | None = None,
) -> None:
    """Rule 3 for the part of the planned tasks that free room covers (their mem, say, when
    only cpus were short): held for the preemptor from now, as the victims' share will be.
    Left free, the next cycle would offer it to someone else, the preemptor's offer would not
    hold whole tasks, and the demand would preempt again."""
    tasks: dict[str, int] = dict(free_slots or {})
    freed: dict[str, list[float]] = {a: [0.0, 0.0, 0.0, 0.0] for a in tasks}
    for p in placements:
        tasks[p.agent_id] = tasks.get(p.agent_id, 0) + 1
        f = freed.setdefault(p.agent_id, [0.0, 0.0, 0.0, 0.0])
        for v in p.victims:
            for k, x in enumerate(v.scalars):
                f[k] += x
    shape = d.resources.scalars()
    for agent_id, count in tasks.items():
        if (fw.framework_id, d.name, agent_id) not in core.nominations:
            continue  # no victims there: its free room is offered in the usual way
        agent = core.agents[agent_id]
        u = used.get(agent)
        part = [
            min(max(0.0, t - x), max(0.0, count * need - f))
            for t, x, need, f in zip(
                agent.spec.resources.scalars(), u, shape, freed[agent_id], strict=True
            )
        ]
        if not any(x > 0 for x in part):
            continue
        n = core.nominations[(fw.framework_id, d.name, agent_id)]
        core.allocator.allocate(fw.framework_id, agent_id, (part[0], part[1], part[2], part[3]))
        n.held = [h + x for h, x in zip(n.held, part, strict=True)]
        used.charge(agent_id, part)


def victim_ended(core: CoreState, task: TaskRecord) -> None:
    """A task ended; if it was a victim, what it held goes to its nomination (rule 3) when the
    event's other returns are done (``settle``)."""
    key = (task.framework_id, task.task_id)
    nkey = core.victim_of.pop(key, None)
    if nkey is None:
        return
    n = core.nominations.get(nkey)
    if n is None:
        return
    n.victims.discard(key)
    agent = core.agents.get(n.agent_id)
    if agent is not None and agent.in_allocator:
        core.victims_freed.append((nkey, task.spec.resources.scalars()))


def settle(core: CoreState, e: ev.Event) -> list[cmd.Command]:
    """After an event: charge what victims freed to their preemptors (rule 3) and offer each
    hold whose victims are all gone (rule 4)."""
    freed, core.victims_freed = core.victims_freed, []
    touched: list[NominationKey] = []
    for nkey, scalars in freed:
        n = core.nominations.get(nkey)
        if n is None:
            continue
        core.allocator.allocate(n.framework_id, n.agent_id, scalars)
        n.held = [h + x for h, x in zip(n.held, scalars, strict=True)]
        touched.append(nkey)
    out: list[cmd.Command] = []
    gang_groups: dict[gang_holds.Group, None] = {}
    for nkey in dict.fromkeys(touched):
        n = core.nominations[nkey]
        if n.victims or n.offer_id:
            continue
        if gang_holds.is_gang_hold(core, n):
            gang_groups[(n.framework_id, n.demand)] = None  # one bundle (gang_holds.py)
            continue
        fw = core.frameworks[n.framework_id]
        agent = core.agents[n.agent_id]
        held = (n.held[0], n.held[1], n.held[2], n.held[3])
        n.held = [0.0, 0.0, 0.0, 0.0]
        extra = _top_up(core, fw, n, agent, held)
        if any(x > 0 for x in extra):
            core.allocator.allocate(fw.framework_id, agent.agent_id, extra)
            held = (held[0] + extra[0], held[1] + extra[1], held[2] + extra[2], held[3] + extra[3])
        offer = core.book.make_one(fw, agent, held, e.now)
        n.offer_id = offer.offer_id(0)
        n.offered_at = e.now
        n.expires_at = e.now + core.config.preemption_nomination_seconds
        out.append(
            cmd.SendOffers(
                stimulus_id=e.stimulus_id, framework_id=fw.framework_id, batches=(offer,)
            )
        )
    for key in gang_groups:
        if not any(m.victims for m in gang_holds.group(core, key)):
            gang_holds.became_ready(core, key, e.now)
            out += gang_holds.offer(core, key, e)
    return out


def _top_up(
    core: CoreState,
    fw: FrameworkRecord,
    n: Nomination,
    agent: AgentRecord,
    held: tuple[float, float, float, float],
) -> tuple[float, float, float, float]:
    """What the hold's offer needs from the agent's free room to hold whole tasks (rule 4).

    Victims were chosen to cover only what the free room lacked (say cpus), so the hold alone
    may not fit one task (its mem was free, and free room goes to whoever the next cycle
    picks). Without this the preemptor declines the hold, the victims' framework takes the
    room back, and the demand preempts again: a preemption loop."""
    d = fw.demands.get(n.demand)
    if d is None:
        return (0.0, 0.0, 0.0, 0.0)
    used = UsedRoom(core).get(agent)  # tasks, offers and other holds: this one is zeroed
    free = [
        max(0.0, t - u - h)
        for t, u, h in zip(agent.spec.resources.scalars(), used, held, strict=True)
    ]
    shape = d.resources.scalars()
    whole = slots_of_one([h + f for h, f in zip(held, free, strict=True)], shape)
    k = min(whole, max(0, d.count - fw.demand_tasks.get(d.name, 0)))
    a, b, c, g = (min(f, max(0.0, k * x - h)) for f, x, h in zip(free, shape, held, strict=True))
    return (a, b, c, g)


def release_agent(core: CoreState, agent_id: str) -> None:
    for n in [n for n in core.nominations.values() if n.agent_id == agent_id and not n.offer_id]:
        release(core, n)


def release_framework(core: CoreState, framework_id: str) -> None:
    for n in [n for n in core.nominations.values() if n.framework_id == framework_id]:
        release(core, n)
