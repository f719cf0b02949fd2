"""A framework's answer to its offers: accept (launch tasks on them) or decline (give them
back, with a refuse filter).

Rules:
1. An accept is checked whole before anything changes: the offers are the framework's and
   outstanding, of one agent (or one gang's bundle, all of it: gangs.py rule 3), the tasks'
   ids new to the framework and each named once (an agent keys tasks by framework and id, as
   Mesos does: another framework's ids are no concern, nor told), naming only priority
   classes and demands that exist, no port asked for by two tasks, and all of it within what
   the offers hold; the ACLs must grant its priority classes and its principal's cap must
   hold it (authz.py); then admission control may refuse it (admission.py). A refused accept
   changes nothing: its offers are still the framework's. A task asking for no cpus and no
   mem is BestEffort (corral.qos): it is charged nothing.
2. Accepted: the offers are used whole; what the tasks leave goes back to the pool under the
   refuse filter (nothing left: no filter), and each task is STAGING on its agent, sent to it
   in one LAUNCH per agent.
3. A decline returns its offers (a gang's bundle whole) and installs one refuse filter per
   agent, for what was declined of it. Unknown ids are skipped: a decline racing a rescind is
   normal.
4. A refuse filter lasts at least one allocation interval (``refuse_seconds``).
5. Revocable offers (revocable.py) are accepted and declined there; a task marked revocable
   is refused on regular offers.
6. A task goes only to an agent that runs its containerizer (corral.containers rule 2): a
   container task on an agent without ``docker`` is refused (FAILED_PRECONDITION) with a
   reason naming the containerizer and the agent.
7. Memory pressure is a placement rule (rules/pressure.py): a BestEffort task is refused
   (FAILED_PRECONDITION, naming the pressure) on an agent under it, as Kubernetes'
   ``memory-pressure:NoSchedule`` taint keeps BestEffort pods off.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from corral import containers
from corral.limits import echo
from corral.master.allocator.rules import pressure
from corral.master.core import admission, authz, pending, revocable
from corral.master.core import commands as cmd
from corral.master.core import events as ev
from corral.master.core.gangs import Gang
from corral.master.core.offer_book import return_ports
from corral.master.core.records import AgentRecord, FrameworkRecord, OfferRecord, TaskRecord
from corral.master.core.refusals import CallRejected, Refusal
from corral.master.core.refusals import invalid as _invalid
from corral.master.core.refusals import no_repeats as _no_repeats
from corral.master.core.types import Status, TaskSpec, TaskState
from corral.qos import is_besteffort
from corral.resources import GRANULARITY, Resources, ranges_count

if TYPE_CHECKING:
    from corral.master.core.state import CoreState

Commands = list[cmd.Command]


def refuse_seconds(core: CoreState, value: float | None) -> float:
    """How long a refuse filter lasts. A filter shorter than one allocation interval would
    expire before the next cycle could honour it: it lasts one interval (Mesos MESOS-4302),
    so a short ``refuse_seconds`` means "not in the next cycle", not "no filter"."""
    if value is None:
        value = core.config.default_refuse_seconds
    if not math.isfinite(value) or value < 0:
        raise _invalid(f"refuse_seconds must be a finite number >= 0, got {value}")
    if value == 0:
        return 0.0
    return min(max(value, core.config.allocation_interval), core.config.max_refuse_seconds)


def accept(core: CoreState, e: ev.Accept) -> Commands:
    fw = core.caller(e)
    refuse = refuse_seconds(core, e.refuse_seconds)
    core.expiries.answered(fw.framework_id)  # offer_expiry.py rule 3
    _no_repeats(list(e.offer_ids), "offer id")
    if core.revocable.out and any(map(core.revocable.mine, e.offer_ids)):
        return accept_revocable(core, fw, e, refuse)  # rule 5
    offers = core.book.own(fw, e.offer_ids)
    agent_ids = sorted({o.agent_id for o in offers})
    gang = gang_of(core, offers)
    if gang is None and len(agent_ids) > 1:
        raise _invalid(f"offers of different agents ({', '.join(agent_ids)}) in one accept")
    for t in e.tasks:
        if t.revocable is not None:
            raise _invalid(
                f"task {echo(t.task_id)} is marked revocable and the offers are not: it goes "
                "on revocable offers only"
            )
    need = check_tasks(core, fw, e.tasks)
    if gang is None:
        groups = {agent_ids[0]: (offers, list(e.tasks), need)}
    else:
        groups = gang_groups(gang, offers, agent_ids, e.tasks)
    offered_on: dict[str, Resources] = {}
    for aid, (agent_offers, _, agent_need) in groups.items():
        offered = Resources()
        for o in agent_offers:
            offered = offered + o.resources
        offered_on[aid] = offered
        short = offered.exceeded_by(agent_need)
        if short:
            on = f" on agent {aid}" if gang is not None else ""
            raise _invalid(
                f"tasks{on} exceed the offered {', '.join(short)}: they need {agent_need}, "
                f"the offers hold {offered}"
            )
    for aid, (_, tasks, _) in groups.items():
        _check_containerizers(core.agents[aid], tasks)
        _check_pressure(core, core.agents[aid], tasks)
    authz.tasks_gate(core.acl, authz.acting(fw), e.tasks, core.tasks.held)
    admission.check_accept(core, fw, ((aid, len(g[1])) for aid, g in groups.items()))
    # Valid and admitted: apply.
    out: Commands = []
    launched: dict[str, list[str]] = {}  # per demand named, the agent of each task
    for aid, (agent_offers, tasks, agent_need) in groups.items():
        agent = core.agents[aid]
        out += launch(core, fw, agent, agent_offers, tasks, offered_on[aid], agent_need, refuse, e)
        if tasks:
            core.holds.launched(agent)
        for t in tasks:
            if t.demand:
                launched.setdefault(t.demand, []).append(aid)
    if launched:
        out += pending.scheduled(core, fw, launched, e)
    return out


def check_tasks(core: CoreState, fw: FrameworkRecord, tasks: Sequence[TaskSpec]) -> Resources:
    """Rule 1 for the tasks alone; returns what they need (charged resources, ports)."""
    # Summed as floats and one Resources at the end, and each distinct resources value checked
    # against the granularity once: an accept's tasks mostly share one (the decoder caches it).
    cpus = mem = disk = gpus = 0.0
    ports: list[tuple[int, int]] = []
    checked: Resources | None = None
    seen: set[str] = set()
    ports_of: dict[str, int] = {}  # tasks' ports must not overlap: each port is one task's
    for t in tasks:
        if not t.task_id:
            raise _invalid("a task has an empty task_id")
        if t.task_id in seen:
            raise _invalid(f"task id {t.task_id!r} appears twice in this accept")
        if t.task_id in fw.tasks:
            raise _invalid(f"task id {t.task_id!r} is already in use")
        r = t.resources
        if r is not checked:
            fine = r.below_granularity()
            if fine:
                raise _invalid(
                    f"task {t.task_id!r}: {fine[0]} is below the resources' granularity of "
                    f"{GRANULARITY:g}"
                )
            checked = r
        if not core.priority.known(t.priority_class):
            raise _invalid(
                f"task {t.task_id!r} names unknown priority class {echo(t.priority_class)}"
            )
        if t.demand and t.demand not in fw.demands:
            raise _invalid(
                f"task {t.task_id!r} names demand {echo(t.demand)}, which the framework has not set"
            )
        seen.add(t.task_id)
        if r.ports:
            ports_of[t.task_id] = ranges_count(r.ports)
            ports.extend(r.ports)
        cpus += r.cpus
        mem += r.mem
        disk += r.disk
        gpus += r.gpus
    need = Resources.from_scalars((cpus, mem, disk, gpus), tuple(ports))
    if ports_of and ranges_count(need.ports) != sum(ports_of.values()):
        raise _invalid(
            f"tasks {', '.join(echo(t) for t in ports_of)} ask for the same port; "
            "each port can go to one task"
        )
    return need


def _check_containerizers(agent: AgentRecord, tasks: Sequence[TaskSpec]) -> None:
    """Rule 6, asked once per containerizer the tasks need (the answer depends on no more)."""
    fine: set[str] = set()
    for t in tasks:
        want = containers.needed(t.container)
        if want in fine:
            continue
        why = containers.refusal(t.task_id, t.container, agent.agent_id, agent.spec.attributes)
        if why is not None:
            raise CallRejected(Refusal.FAILED_PRECONDITION, why)
        fine.add(want)


def _check_pressure(core: CoreState, agent: AgentRecord, tasks: Sequence[TaskSpec]) -> None:
    """Rule 7: no BestEffort task on an agent under memory pressure, the placement rule's
    predicate asked per task (a revocable task is not BestEffort work: it uses lent room)."""
    if not pressure.blocks(agent.under_pressure, True):
        return  # it keeps not even BestEffort work off this agent now
    for t in tasks:
        besteffort = t.revocable is None and is_besteffort(t.resources.cpus, t.resources.mem)
        if pressure.blocks(agent.under_pressure, besteffort):
            usage = agent.usage
            why = usage.pressure_message if usage is not None else "memory pressure"
            raise CallRejected(
                Refusal.FAILED_PRECONDITION,
                f"agent {agent.agent_id} is under memory pressure ({why}): BestEffort task "
                f"{echo(t.task_id)} (no cpus or mem request) is not placed there until it "
                "clears; give the task a request, or place it elsewhere",
            )


def gang_of(core: CoreState, offers: Sequence[OfferRecord]) -> Gang | None:
    """The gang the accepted offers are, None for ordinary offers; a mixture is refused."""
    if not core.book.gangs:
        return None
    ids = {o.gang_id for o in offers}
    if ids == {""}:
        return None
    if len(ids) > 1:
        named = ", ".join(sorted(i or "(not a gang's)" for i in ids))
        raise _invalid(
            f"offers of gang and other offers ({named}) in one accept: a gang is accepted "
            "on its own"
        )
    return core.book.gangs[ids.pop()]


def gang_groups(
    gang: Gang,
    offers: Sequence[OfferRecord],
    agent_ids: list[str],
    tasks: Sequence[TaskSpec],
) -> dict[str, tuple[list[OfferRecord], list[TaskSpec], Resources]]:
    """Gang rule 3: all the bundle's offers and at least its members, each task on the agent
    it names (one agent: that one). Returns per agent its offers, tasks and their need."""
    what = f"gang {gang.gang_id} (demand {echo(gang.demand)}, {gang.members} members)"
    if len(offers) != len(gang.offer_ids):
        raise _invalid(
            f"{what} is {len(gang.offer_ids)} offers; an accept uses all of them or none "
            f"(this one names {len(offers)}); decline to return them"
        )
    for t in tasks:
        if t.demand != gang.demand:
            raise _invalid(
                f"task {echo(t.task_id)} does not name demand {echo(gang.demand)}: {what} "
                "launches its members only"
            )
    if len(tasks) < gang.members:
        raise _invalid(
            f"{what} launches all its members or none: this accept has {len(tasks)} tasks"
        )
    groups: dict[str, tuple[list[OfferRecord], list[TaskSpec], Resources]] = {
        aid: ([], [], Resources()) for aid in agent_ids
    }
    for o in offers:
        groups[o.agent_id][0].append(o)
    for t in tasks:
        aid = t.agent_id or (agent_ids[0] if len(agent_ids) == 1 else "")
        if not aid:
            raise _invalid(
                f"task {echo(t.task_id)} names no agent_id: {what} spans agents "
                f"({', '.join(agent_ids)}), so each task names the agent it goes on"
            )
        if aid not in groups:
            raise _invalid(
                f"task {echo(t.task_id)} names agent {echo(aid)}, which holds none of "
                f"{what}'s offers"
            )
        offered, placed, agent_need = groups[aid]
        placed.append(t)
        groups[aid] = (offered, placed, agent_need + t.resources)
    return groups


def launch(
    core: CoreState,
    fw: FrameworkRecord,
    agent: AgentRecord,
    offers: Sequence[OfferRecord],
    tasks: Sequence[TaskSpec],
    offered: Resources,
    need: Resources,
    refuse: float,
    e: ev.Accept,
) -> Commands:
    """Use ``offers`` (all of ``agent``, holding ``offered``, checked to hold ``need``) for
    ``tasks``: what they leave unused goes back under the refuse filter."""
    for o in offers:
        core.book.drop(o)
    unused = offered - need
    return_ports(agent, unused.ports)
    if any(v > 0 for v in unused.scalars()):
        core.allocator.recover(fw.framework_id, agent.agent_id, unused.scalars())
        core.freed(agent)
        if refuse > 0:
            # What was left unused is what was refused (nothing left: nothing refused).
            core.allocator.add_filter(
                fw.framework_id, agent.agent_id, e.now + refuse, unused.scalars()
            )
    if not tasks:
        return []
    fw_id, agent_id, now = fw.framework_id, agent.agent_id, e.now
    values: dict[str, int] = {}  # class -> value, looked up once per class of the accept
    records = []
    for t in tasks:
        value = values.get(t.priority_class)
        if value is None:
            value = values[t.priority_class] = core.priority.value(t.priority_class)
        t.priority = value  # for the agent's evictions
        task = TaskRecord(
            spec=t,
            framework_id=fw_id,
            agent_id=agent_id,
            state=TaskState.STAGING,
            status=Status(
                task_id=t.task_id,
                framework_id=fw_id,
                agent_id=agent_id,
                state=TaskState.STAGING,
                timestamp=now,
            ),
            launched_at=now,
        )
        records.append(task)
    core.tasks.add_many(fw, agent, records)
    core.pacer.launching_many(records)
    return [
        cmd.SendLaunch(
            stimulus_id=e.stimulus_id,
            agent_id=agent.agent_id,
            framework_id=fw.framework_id,
            tasks=tuple(tasks),
            principal=fw.spec.principal,
            role=fw.spec.role,
        )
    ]


def decline(core: CoreState, e: ev.Decline) -> Commands:
    fw = core.caller(e)
    refuse = refuse_seconds(core, e.refuse_seconds)
    core.expiries.answered(fw.framework_id)  # offer_expiry.py rule 3
    _no_repeats(e.offer_ids, "offer id")
    fid = fw.framework_id
    offer_ids = e.offer_ids
    if core.revocable.out or core.revocable.filters:
        offer_ids = tuple(revocable.decline(core, fw, e, refuse))
    entries = core.book.known(fw, offer_ids)  # a gang goes back whole
    core.book.give_back_entries(entries)
    core.pacer.declined(sum(map(len, entries.values())))
    if refuse > 0:
        refused: dict[str, list[float]] = {}  # per agent: the offers of it declined here
        for cols, idx in entries.items():
            for i in idx:
                aid, scalars = cols.agent_ids[i], cols.scalar_rows()[i]
                had = refused.get(aid)
                if had is None:
                    refused[aid] = list(scalars)
                else:
                    refused[aid] = [x + y for x, y in zip(had, scalars, strict=True)]
        for agent_id, amount in refused.items():
            core.allocator.add_filter(fid, agent_id, e.now + refuse, amount)
    return []


def accept_revocable(core: CoreState, fw: FrameworkRecord, e: ev.Accept, refuse: float) -> Commands:
    """revocable.py's rule 4 (rule 5 here): launch marked tasks on revocable offers of one
    agent; the rest is filtered. Here, beside the regular path whose checks and launch it
    shares, so revocable.py never imports this module."""
    book = core.revocable
    offers: list[OfferRecord] = []
    for oid in e.offer_ids:
        o = book.out.get(oid)
        if o is None or o.framework_id != fw.framework_id:
            if not book.mine(oid):
                raise _invalid(
                    "revocable and regular offers in one accept: accept each kind on its own"
                )
            raise _invalid(f"offer {echo(oid)} is unknown, rescinded or already used")
        offers.append(o)
    agent_ids = sorted({o.agent_id for o in offers})
    if len(agent_ids) > 1:
        raise _invalid(f"offers of different agents ({', '.join(agent_ids)}) in one accept")
    agent = core.agents.get(agent_ids[0])
    if agent is None or not agent.in_allocator or agent.connection is None:
        raise _invalid(f"the offers' agent {agent_ids[0]} is gone: they are void")
    for t in e.tasks:
        if t.revocable is None:
            raise _invalid(
                f"task {echo(t.task_id)} is not marked revocable (TaskInfo.revocable) and the "
                "offers are revocable: a task on revocable resources must say so"
            )
        if t.revocable.cpus <= 0 and t.revocable.mem <= 0:
            raise _invalid(f"revocable task {echo(t.task_id)} asks for no cpus and no mem")
    check_tasks(core, fw, e.tasks)
    need = _revocable_need(e.tasks)
    cpus = sum(o.scalars[0] for o in offers)
    mem = sum(o.scalars[1] for o in offers)
    offered = Resources(cpus=cpus, mem=mem)
    short = offered.exceeded_by(need)
    if short:
        raise _invalid(
            f"revocable tasks exceed the offered {', '.join(short)}: they need {need}, "
            f"the offers hold {offered}"
        )
    admission.check_accept(core, fw, [(agent.agent_id, len(e.tasks))])
    for o in offers:
        del book.out[o.offer_id]
    left = offered - need
    if refuse > 0 and (left.cpus >= revocable.MIN_CPUS or left.mem >= revocable.MIN_MEM):
        book.filters[(fw.framework_id, agent.agent_id)] = e.now + refuse
    if not e.tasks:
        return []
    out = launch(core, fw, agent, [], e.tasks, Resources(), Resources(), 0.0, e)
    core.holds.launched(agent)
    return out


def _revocable_need(tasks: Sequence[TaskSpec]) -> Resources:
    need = Resources()
    for t in tasks:
        if t.revocable is not None:
            need = need + t.revocable
    return need
