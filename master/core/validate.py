"""The master core's cross-index invariants, checked after every event in the core's tests
(``CoreState.validate``), as dask's worker state machine does in validate mode.

Each rule says what must agree between two of the core's indexes, or between the core and the
allocator; a broken rule raises ``InvariantBroken`` naming the record that broke it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from corral.master.core.agent_arrays import task_use
from corral.master.core.clocks import is_told
from corral.master.core.demands import connected_agents
from corral.master.core.durable import agent_entry, framework_entry
from corral.master.core.invariants import InvariantBroken, close
from corral.master.core.states import FrameworkState
from corral.resources import SCALARS

if TYPE_CHECKING:
    from corral.master.core.state import CoreState


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise InvariantBroken(message)


def _ports(ranges: tuple[tuple[int, int], ...] | list[tuple[int, int]]) -> list[int]:
    return [p for begin, end in ranges for p in range(begin, end + 1)]


def validate(core: CoreState) -> None:
    _offers(core)
    _frameworks(core)
    # Each component checks itself; the rules below hold between components.
    for fault in core.agent_table.validate():  # agent_table.py rule 3
        _check(False, fault)
    for fault in core.tasks.validate(core.frameworks, core.agents):  # task_table.py rule 4
        _check(False, fault)
    _charges(core)
    _free_ports(core)
    _durable(core)
    _nominations(core)
    _gangs(core)
    for fault in core.expiries.validate(core.frameworks):
        _check(False, fault)
    for fault in core.holds.validate():
        _check(False, fault)
    _kept_view(core)
    for fault in core.preempt_wanting.check(core.frameworks, core.priority):
        _check(False, fault)
    _told_intervals(core)


def _told_intervals(core: CoreState) -> None:
    """clocks.py: both heaps the tick re-tells from hold every ACTIVE connected agent's
    heartbeat interval."""
    clocks = core.clocks
    low, high = set(clocks.told_low), {(-i, aid) for i, aid in clocks.told_high}
    for agent in core.agents.values():
        if is_told(agent):
            entry = (agent.heartbeat_interval, agent.agent_id)
            _check(
                entry in low and entry in high,
                f"agent {agent.agent_id}'s heartbeat interval {agent.heartbeat_interval} is "
                "missing from the heaps the tick re-tells from",
            )


def _offers(core: CoreState) -> None:
    """The book's own rules hold (offer_book.py); an outstanding offer's framework is
    subscribed and its agent attached."""
    for fault in core.book.validate():
        _check(False, fault)
    for oid, offer in core.offers.items():
        _check(offer.offer_id == oid, f"offer {oid} is filed under another id")
        fw = core.frameworks.get(offer.framework_id)
        agent = core.agents.get(offer.agent_id)
        _check(fw is not None, f"offer {oid} of an unknown framework")
        _check(agent is not None, f"offer {oid} of an unknown agent")
        assert fw is not None and agent is not None
        _check(fw.state is FrameworkState.SUBSCRIBED, f"offer {oid} held by a gone framework")
        _check(agent.in_allocator, f"offer {oid} of agent {agent.agent_id}, which is detached")
    by_agent = sum(len(core.book.of_agent(a)) for a in core.agents)
    by_fw = sum(len(core.book.of_framework(f)) for f in core.frameworks)
    _check(
        by_agent == by_fw == len(core.offers),
        f"{len(core.offers)} offers, {by_agent} by their agents, {by_fw} by their frameworks",
    )


def _frameworks(core: CoreState) -> None:
    """Identity (authz.py rule 1): a framework subscribed by a principal carries it in its
    spec; a placeholder has no stream, and no principal unless a sealed report named it."""
    for fw_id, fw in core.frameworks.items():
        _check(fw.framework_id == fw_id, f"framework {fw_id} is filed under another id")
        if fw.principal.name:
            _check(
                fw.spec.principal == fw.principal.name,
                f"framework {fw_id} subscribed by {fw.principal.name} says {fw.spec.principal}",
            )
        if fw.placeholder:
            _check(
                fw.state is not FrameworkState.SUBSCRIBED and fw.connection is None,
                f"placeholder {fw_id} is subscribed",
            )
            _check(
                fw.owner_reported or fw.spec.principal == "",
                f"placeholder {fw_id} names a principal no report gave it",
            )
        else:
            _check(not fw.owner_reported, f"framework {fw_id} subscribed, owner still reported")


def _charges(core: CoreState) -> None:
    """Rule 2: what the allocator charges a framework on an attached agent is its live tasks
    there plus its outstanding offers of it, plus what preemption holds for it there
    (nominations.py, rule 3)."""
    expected: dict[tuple[str, str], list[float]] = {}

    def add(key: tuple[str, str], amounts: tuple[float, ...] | list[float]) -> None:
        had = expected.setdefault(key, [0.0] * len(SCALARS))
        expected[key] = [x + y for x, y in zip(had, amounts, strict=True)]

    for agent in core.agents.values():
        if not agent.in_allocator:
            continue
        for (fw_id, _), task in agent.tasks.items():
            add((fw_id, agent.agent_id), task.spec.resources.scalars())
        for offer in core.book.of_agent(agent.agent_id):
            add((offer.framework_id, agent.agent_id), list(offer.scalars))
    for n in core.nominations.values():
        held_on = core.agents.get(n.agent_id)
        if held_on is not None and held_on.in_allocator:
            add((n.framework_id, n.agent_id), n.held)
    for (fw_id, agent_id), amounts in expected.items():
        if core.frameworks[fw_id].state is FrameworkState.REMOVED:
            continue
        charged = core.allocator.charged(fw_id, agent_id)
        _check(
            close(charged, amounts),
            f"allocator charges {fw_id} on {agent_id} {charged}, tasks and offers make {amounts}",
        )


def _free_ports(core: CoreState) -> None:
    """An attached agent's ports are each in exactly one place: free, an offer, or a task."""
    for agent in core.agents.values():
        if not agent.in_allocator:
            continue
        places = list(agent.free_ports)
        for offer in core.book.of_agent(agent.agent_id):
            places += offer.ports
        for task in agent.tasks.values():
            places += task.spec.resources.ports
        ports = _ports(places)
        _check(
            len(ports) == len(set(ports)),
            f"agent {agent.agent_id}: a port is in two places ({sorted(places)})",
        )
        _check(
            set(ports) == set(_ports(agent.spec.resources.ports)),
            f"agent {agent.agent_id}: free, offered and used ports {sorted(places)} are not "
            f"its ports {agent.spec.resources.ports}",
        )


def _durable(core: CoreState) -> None:
    """Rule 7 of master.py: every agent and every framework but placeholders is in the registry
    as it is now."""
    for agent in core.agents.values():
        _check(
            core.durable_agents.get(agent.agent_id) == agent_entry(agent),
            f"agent {agent.agent_id} changed without its registry record",
        )
    for fw in core.frameworks.values():
        if fw.placeholder:
            continue
        _check(
            core.durable_frameworks.get(fw.framework_id) == framework_entry(fw),
            f"framework {fw.framework_id} changed without its registry record",
        )


def _nominations(core: CoreState) -> None:
    """nominations.py: a nomination's victims are live tasks on its agent, marked preempted and
    being killed, each filed under it; a hold is on an attached agent for a subscribed
    framework; an offered nomination holds nothing more."""
    for key, n in core.nominations.items():
        _check(key == (n.framework_id, n.demand, n.agent_id), f"nomination {key} misfiled")
        agent = core.agents.get(n.agent_id)
        fw = core.frameworks.get(n.framework_id)
        _check(agent is not None and agent.in_allocator, f"nomination {key} on a detached agent")
        _check(
            fw is not None and fw.state is FrameworkState.SUBSCRIBED,
            f"nomination {key} for a framework not subscribed",
        )
        assert agent is not None
        for v in n.victims:
            task = agent.tasks.get(v)
            _check(task is not None, f"nomination {key}: victim {v} is not live on its agent")
            assert task is not None
            _check(
                task.kill_requested and bool(task.preempted_by),
                f"nomination {key}: victim {v} is not being killed as preempted",
            )
            _check(core.victim_of.get(v) == key, f"victim {v} not filed under nomination {key}")
        if n.offer_id:
            _check(not n.victims, f"nomination {key} offered with victims left")
            _check(all(x == 0 for x in n.held), f"nomination {key} offered and still holds")
    for v, key in core.victim_of.items():
        filed = core.nominations.get(key)
        _check(
            filed is not None and v in filed.victims, f"victim {v} filed under unknown nomination"
        )
    _check(not core.victims_freed, "victims' freed resources left unsettled after an event")


def _gangs(core: CoreState) -> None:
    """Gang rule 3 (gangs.py): a gang's offers are all outstanding or none, one per agent, of
    its framework; an offer marked with a gang is one of its gang's; a demand has at most one
    bundle outstanding; only the gang's frameworks are walked for bundles."""
    demands_seen: set[tuple[str, str]] = set()
    for gid, gang in core.book.gangs.items():
        _check(gang.gang_id == gid, f"gang {gid} is filed under another id")
        _check(gang.offer_ids != (), f"gang {gid} has no offers")
        agents: set[str] = set()
        for oid in gang.offer_ids:
            offer = core.offers.get(oid)
            _check(offer is not None, f"gang {gid}: offer {oid} is gone, the rest outstanding")
            assert offer is not None
            _check(offer.gang_id == gid, f"gang {gid}: offer {oid} is marked {offer.gang_id!r}")
            _check(offer.framework_id == gang.framework_id, f"gang {gid}: offer {oid} elsewhere")
            _check(offer.agent_id not in agents, f"gang {gid}: two offers of {offer.agent_id}")
            agents.add(offer.agent_id)
        key = (gang.framework_id, gang.demand)
        _check(key not in demands_seen, f"demand {key} has two bundles outstanding")
        demands_seen.add(key)
        _check(
            gang.framework_id in core.gang_frameworks,
            f"gang {gid} of framework {gang.framework_id}, which has no gang demand",
        )
    for oid, offer in core.offers.items():
        if offer.gang_id:
            holder = core.book.gangs.get(offer.gang_id)
            _check(
                holder is not None and oid in holder.offer_ids,
                f"offer {oid} is marked with gang {offer.gang_id}, which does not hold it",
            )
    for fw_id in core.gang_frameworks:
        fw = core.frameworks.get(fw_id)
        _check(
            fw is not None and any(d.min_member > 0 for d in fw.demands.values()),
            f"framework {fw_id} walked for gangs without a gang demand",
        )


def _kept_view(core: CoreState) -> None:
    """The why-pending scan's kept agent arrays (agent_arrays.py) are right where its versions say
    they are current: an agent whose ``tasks_version`` they recorded has the task sums they
    hold, and while the book's ``version`` is the one they recorded, its offers are the ones
    they summed. (A change that moved no version would leave them stale: this catches it at
    the event.)"""
    pending = core.pending
    if pending.connected_version == core.largest.version:
        connected = connected_agents(core)
        _check(
            len(connected) == len(pending.connected)
            and all(a is b for a, b in zip(connected, pending.connected, strict=True)),
            "the scan's connected agents changed without Largest.version",
        )
    view = core.pending.arrays
    if view is None:
        return
    for i, agent in enumerate(view.agents):
        if agent.tasks_version == view.tasks_versions[i]:
            _check(
                list(view.task_use[i]) == task_use(agent),
                f"kept agent arrays: agent {agent.agent_id}'s tasks changed without its version",
            )
    if core.book.version == view.book_version:
        _check(
            bool((core.book.offered_rows(view.index, len(view.agents)) == view.offered).all()),
            "kept agent arrays: the offers changed without the book's version",
        )
    _check(
        bool((view.free == view.statics.totals - view.task_use - view.offered).all()),
        "kept agent arrays: free is not totals - task_use - offered",
    )
