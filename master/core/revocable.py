"""Revocable resources (Mesos' oversubscription) in the master: what is offered, to whom, and
what an accept or decline of them does (docs/scheduling.md, "Revocable resources").

Rules:
1. An agent's revocable pool is its latest estimate (what its own tasks were allocated and do
   not use, less a safety margin: agent/core/revocable.py) less what its revocable tasks hold
   less what is out in revocable offers. It is offered once it holds at least MIN_CPUS cpus
   and MIN_MEM MiB, at most one revocable offer per agent at a time, each allocation tick,
   after the regular cycle. Never on an agent under memory pressure or out of the allocator.
2. Only frameworks with the REVOCABLE_RESOURCES capability are offered them: subscribed,
   connected, not suppressed, wanting something by their demands (or without demands), and
   not holding a refuse filter for the agent (a decline, or an accept's leftover, with its
   ``refuse_seconds``). They take turns: the one holding the least revocable memory first,
   then the fewest revocable offers made so far, then its id.
3. Revocable resources are kept apart from the allocator: they are charged to no framework or
   role, and count in no DRF share, quota, preemption or why-pending. A revocable task's
   ``TaskSpec.resources`` hold nothing; ``TaskSpec.revocable`` holds what it took. The agent
   takes them back by killing the task (REVOCABLE_RESOURCES_RECLAIMED) when its own tasks'
   usage rises.
4. An accept uses revocable offers or regular ones, never both, of one agent; every task on
   revocable offers is marked revocable (TaskInfo.revocable), asks for cpus or mem, and a
   marked task goes on revocable offers only (accepts.py checks both: ``accept_revocable``).
5. Revocable offers go back when used, declined or past ``offer_timeout``; they are
   rescinded when their agent leaves the allocator or comes under pressure, when its estimate
   shrinks below what is held and offered, and dropped when their framework is gone (each
   allocation tick sweeps, and usage.py on each report).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from corral.master.core import commands as cmd
from corral.master.core import demands
from corral.master.core.offer_columns import OfferColumns
from corral.master.core.records import AgentRecord, FrameworkRecord, OfferRecord
from corral.master.core.revocable_book import RevocableOffers as RevocableOffers
from corral.master.core.states import FrameworkState
from corral.resources import EPSILON

if TYPE_CHECKING:
    from corral.master.core import events as ev
    from corral.master.core.state import CoreState

Commands = list[cmd.Command]

MIN_CPUS = 0.01
MIN_MEM = 32.0


def held(agent: AgentRecord) -> tuple[float, float]:
    """The cpus and mem the agent's live revocable tasks hold."""
    cpus = mem = 0.0
    for t in agent.tasks.values():
        r = t.spec.revocable
        if r is not None and not t.state.terminal:
            cpus += r.cpus
            mem += r.mem
    return cpus, mem


def pool(core: CoreState, agent: AgentRecord) -> tuple[float, float]:
    """Rule 1: what of the agent's estimate is neither held nor offered (may be negative)."""
    if agent.usage is None:
        return 0.0, 0.0
    cpus, mem = agent.usage.revocable_cpus, agent.usage.revocable_mem
    h_cpus, h_mem = held(agent)
    cpus, mem = cpus - h_cpus, mem - h_mem
    for o in core.revocable.of_agent(agent.agent_id):
        cpus, mem = cpus - o.scalars[0], mem - o.scalars[1]
    return cpus, mem


def _offerable(core: CoreState, fw: FrameworkRecord) -> bool:
    return (
        fw.spec.revocable_resources
        and fw.state is FrameworkState.SUBSCRIBED
        and fw.connection is not None
        and not fw.suppressed
        and demands.offered_regularly(fw)
    )


def offer(core: CoreState, e: ev.AllocationTick) -> tuple[dict[str, OfferColumns], Commands]:
    """Rules 1 and 2 at an allocation tick, after the sweep (rule 5): the revocable offers
    made, one batch per framework, and the rescinds of the sweep."""
    book = core.revocable
    out = sweep(core, e)
    capable = [fw for fw in core.frameworks.values() if _offerable(core, fw)]
    if not capable:
        return {}, out
    holding: dict[str, float] = {fw.framework_id: 0.0 for fw in capable}
    for fw in capable:
        for t in fw.tasks.values():
            if t.spec.revocable is not None:
                holding[fw.framework_id] += t.spec.revocable.mem
    busy = {o.agent_id for o in book.out.values()}
    made: dict[str, list[tuple[AgentRecord, float, float]]] = {}
    for agent_id in sorted(book.lenders):
        agent = core.agents.get(agent_id)
        if agent is None:
            book.lenders.discard(agent_id)
            continue
        if agent_id in busy or not agent.in_allocator or agent.under_pressure:
            continue
        cpus, mem = pool(core, agent)
        if cpus < MIN_CPUS or mem < MIN_MEM:
            continue
        takers = [
            fw for fw in capable if book.filters.get((fw.framework_id, agent_id), -1.0) <= e.now
        ]
        if not takers:
            continue
        fw = min(
            takers,
            key=lambda f: (holding[f.framework_id], book.made[f.framework_id], f.framework_id),
        )
        book.made[fw.framework_id] += 1
        made.setdefault(fw.framework_id, []).append((agent, cpus, mem))
    batches: dict[str, OfferColumns] = {}
    for fw_id, entries in made.items():
        cols = OfferColumns(
            book.prefix,
            book.seq + 1,
            fw_id,
            [a.agent_id for a, _, _ in entries],
            [a.spec for a, _, _ in entries],
            np.array([[c, m, 0.0, 0.0] for _, c, m in entries], dtype=np.float64),
            {},
            e.now,
            revocable=True,
        )
        book.seq += len(cols)
        for i in range(len(cols)):
            record = cols.record(i)
            book.out[record.offer_id] = record
        batches[fw_id] = cols
    return batches, out


def sweep(core: CoreState, e: ev.Event) -> Commands:
    """Rule 5: offers whose framework is gone are dropped; those of agents out of the
    allocator or under pressure, or past ``offer_timeout``, are rescinded. Expired filters
    are forgotten."""
    timeout = core.config.offer_timeout
    book = core.revocable
    for key in [k for k, until in book.filters.items() if until <= e.now]:
        del book.filters[key]

    def stale(o: OfferRecord) -> bool:
        agent = core.agents.get(o.agent_id)
        return (
            agent is None
            or not agent.in_allocator
            or agent.under_pressure
            or (timeout > 0 and o.created_at <= e.now - timeout)
        )

    return rescind(core, stale, e, "rescinded: its agent left, is under pressure or it expired")


def rescind(
    core: CoreState, which: Callable[[OfferRecord], bool], e: ev.Event, why: str
) -> Commands:
    book = core.revocable
    per_fw: dict[str, list[str]] = {}
    for oid, o in list(book.out.items()):
        fw = core.frameworks.get(o.framework_id)
        gone = fw is None or fw.connection is None or fw.state is not FrameworkState.SUBSCRIBED
        if gone or which(o):
            del book.out[oid]
            if not gone:
                per_fw.setdefault(o.framework_id, []).append(oid)
    out: Commands = [
        cmd.SendRescind(stimulus_id=e.stimulus_id, framework_id=fw_id, offer_ids=tuple(ids))
        for fw_id, ids in per_fw.items()
    ]
    return out + core.rescinded_events(out, e, f"(revocable) {why}")


def estimate_changed(core: CoreState, agent: AgentRecord, e: ev.Event) -> Commands:
    """Rule 5 after a usage report: the agent's revocable offers are rescinded when its pool
    went negative (the estimate shrank below what is held and offered) or it is under
    pressure."""
    offers = core.revocable.of_agent(agent.agent_id)
    if not offers:
        return []
    cpus, mem = pool(core, agent)
    if cpus >= -EPSILON and mem >= -EPSILON and not agent.under_pressure:
        return []
    ids = {o.offer_id for o in offers}
    return rescind(
        core,
        lambda o: o.offer_id in ids,
        e,
        f"rescinded: agent {agent.agent_id}'s revocable estimate shrank or it is under pressure",
    )


def decline(core: CoreState, fw: FrameworkRecord, e: ev.Decline, refuse: float) -> list[str]:
    """The revocable offers among a decline go back, each agent's pool filtered for the
    framework for ``refuse`` seconds; returns the other ids (the regular decline's)."""
    book = core.revocable
    rest: list[str] = []
    for oid in e.offer_ids:
        if not book.mine(oid):
            rest.append(oid)
            continue
        o = book.out.get(oid)
        if o is None or o.framework_id != fw.framework_id:
            continue  # a decline racing a rescind is normal
        del book.out[oid]
        if refuse > 0:
            book.filters[(fw.framework_id, o.agent_id)] = e.now + refuse
    return rest
