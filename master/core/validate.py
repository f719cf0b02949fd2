"""The master core's cross-index invariants, checked after every event in the core's tests
(``CoreState.validate``), as dask's worker state machine does in validate mode.

Each rule says what must agree between two of the core's indexes, or between the core and the
allocator; a broken rule raises ``InvariantBroken`` naming the record that broke it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from corral.master.core.agent_arrays import task_use
from corral.master.core.agent_holds import launching
from corral.master.core.demands import connected_agents
from corral.master.core.durable import agent_entry, framework_entry
from corral.master.core.states import AgentState, FrameworkState
from corral.resources import SCALARS

if TYPE_CHECKING:
    from corral.master.core.offer_book import OfferBook
    from corral.master.core.state import CoreState

# Charges are sums of floats added and taken back in different orders.
TOLERANCE = 1e-6


class InvariantBroken(AssertionError):
    pass


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise InvariantBroken(message)


def _ports(ranges: tuple[tuple[int, int], ...] | list[tuple[int, int]]) -> list[int]:
    return [p for begin, end in ranges for p in range(begin, end + 1)]


def validate(core: CoreState) -> None:
    _offers(core)
    _frameworks(core)
    _tasks(core)
    _charges(core)
    _free_ports(core)
    _durable(core)
    _demand_tasks(core)
    _task_sums(core)
    _principal_held(core)
    _nominations(core)
    _gangs(core)
    _expiries(core)
    _admission(core)
    _kept_view(core)


def _offers(core: CoreState) -> None:
    """The book's own rules hold (offer_book.py); an outstanding offer's framework is
    subscribed and its agent attached."""
    for fault in _offer_book(core.book):
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


def _tasks(core: CoreState) -> None:
    """A live task is the same record in its framework's and its agent's index, and live;
    one with a cause to be killed for is being killed."""
    for fw in core.frameworks.values():
        for task_id, task in fw.tasks.items():
            _check(task.task_id == task_id, f"task {task_id} is filed under another id")
            _check(not task.state.terminal, f"ended task {task_id} still live ({task.state})")
            agent = core.agents.get(task.agent_id)
            _check(agent is not None, f"task {task_id} on unknown agent {task.agent_id}")
            assert agent is not None
            held = agent.tasks.get((fw.framework_id, task_id))
            _check(held is task, f"task {task_id} missing from agent {task.agent_id}'s index")
            # A cause to kill it for (a framework's preemption, an operator, a drain) comes
            # with the kill (framework_calls.py rule 4, kills.py).
            _check(
                task.kill_requested or task.killed_for is None,
                f"task {task_id} has a cause to be killed for but no kill was asked",
            )
    for agent in core.agents.values():
        for (fw_id, task_id), task in agent.tasks.items():
            owner = core.frameworks.get(fw_id)
            _check(
                owner is not None and owner.tasks.get(task_id) is task,
                f"agent {agent.agent_id} holds task {task_id} its framework does not",
            )


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
            all(abs(x - y) <= TOLERANCE for x, y in zip(charged, amounts, strict=True)),
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
    as it is now; the RECOVERING count is the agents in that state."""
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
    recovering = sum(1 for a in core.agents.values() if a.state is AgentState.RECOVERING)
    _check(
        core.recovering == recovering,
        f"{core.recovering} agents counted RECOVERING, {recovering} are",
    )
    # pruning.py, rule 1: the order that forgets them holds exactly the UNREACHABLE agents,
    # each since it became so, oldest first.
    unreachable = {
        a.agent_id: a.unreachable_at
        for a in core.agents.values()
        if a.state is AgentState.UNREACHABLE
    }
    order = core.clocks.unreachable
    _check(
        order == unreachable,
        f"{len(order)} agents in the pruning order, {len(unreachable)} unreachable",
    )
    since = list(order.values())
    _check(since == sorted(since), "the pruning order is not oldest first")


def _demand_tasks(core: CoreState) -> None:
    """A framework's count of live tasks per demand is the tasks naming it (demands.py)."""
    for fw in core.frameworks.values():
        counted: dict[str, int] = {}
        for task in fw.tasks.values():
            if task.spec.demand:
                counted[task.spec.demand] = counted.get(task.spec.demand, 0) + 1
        _check(
            counted == fw.demand_tasks,
            f"framework {fw.framework_id} counts {fw.demand_tasks} tasks per demand, "
            f"its live tasks name {counted}",
        )


def _task_sums(core: CoreState) -> None:
    """task_sums.py: every agent has a row holding its resources, and the sums per class value
    are its live tasks' (as a recount would make them)."""
    sums = core.task_sums
    _check(set(sums.rows) == set(core.agents), "task sums' agent rows differ from the agents")
    for aid, agent in core.agents.items():
        row = sums.rows[aid]
        _check(
            tuple(sums.totals[row]) == agent.spec.resources.scalars(),
            f"task sums hold {tuple(sums.totals[row])} for agent {aid}, its resources are "
            f"{agent.spec.resources.scalars()}",
        )
    expected: dict[tuple[str, int], list[float]] = {}
    for fw in core.frameworks.values():
        for t in fw.tasks.values():
            if t.state.terminal or t.agent_id not in sums.rows:
                continue
            key = (t.agent_id, core.priority.value(t.spec.priority_class))
            had = expected.setdefault(key, [0.0, 0.0, 0.0, 0.0])
            for k, x in enumerate(t.spec.resources.scalars()):
                had[k] += x
    for value, arr in sums.by_value.items():
        for aid, row in sums.rows.items():
            want = expected.pop((aid, value), [0.0, 0.0, 0.0, 0.0])
            _check(
                all(abs(a - b) <= 1e-6 for a, b in zip(arr[row], want, strict=True)),
                f"task sums hold {list(arr[row])} for agent {aid} at value {value}, its live "
                f"tasks {want}",
            )
    left = {k: v for k, v in expected.items() if any(x > 0 for x in v)}
    _check(not left, f"live tasks the task sums do not count: {left}")


def _principal_held(core: CoreState) -> None:
    """authz.py rule 4: what each principal's tasks hold is its frameworks' live tasks."""
    expected: dict[str, list[float]] = {}
    for fw in core.frameworks.values():
        if not fw.spec.held_by:
            continue
        for t in fw.tasks.values():
            if t.state.terminal:
                continue
            had = expected.setdefault(fw.spec.held_by, [0.0, 0.0, 0.0, 0.0])
            for k, x in enumerate(t.spec.resources.scalars()):
                had[k] += x
    for principal in set(expected) | set(core.principal_held.held):
        have = core.principal_held.of(principal)
        want = expected.get(principal, [0.0, 0.0, 0.0, 0.0])
        _check(
            all(abs(a - b) <= 1e-6 for a, b in zip(have, want, strict=True)),
            f"principal {principal}'s tasks hold {want}, the sums say {list(have)}",
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


def _admission(core: CoreState) -> None:
    """No agent has more launches in flight than the bound (admission.py), and an agent held
    out of offers for it is one the core knows."""
    bound = core.config.max_agent_launches
    for agent in core.agents.values():
        n = launching(agent)
        _check(n <= bound, f"agent {agent.agent_id} has {n} launches in flight, bound {bound}")
    stray = core.holds.held - core.agents.keys()
    _check(not stray, f"agents held for their launches are unknown: {sorted(stray)}")


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


def _offer_book(book: OfferBook) -> list[str]:
    """The offer book's own rules, as faults found."""
    faults: list[str] = []
    live = 0
    for base, cols in book._batches.items():
        n = sum(cols.alive)
        if cols.base != base or n != cols.live or n == 0:
            faults.append(f"batch {base}: filed at {cols.base}, {cols.live} live of {n}")
        if book._of_fw.get(cols.framework_id, {}).get(base) is not cols:
            faults.append(f"batch {base} missing from framework {cols.framework_id}'s")
        live += n
    if live != book.count:
        faults.append(f"{book.count} offers counted, {live} alive")
    if sum(len(b) for b in book._of_fw.values()) != len(book._batches):
        faults.append("a framework holds a batch the book does not")
    if book._bases != sorted(book._bases) or not set(book._batches) <= set(book._bases):
        faults.append("the bases are out of order or miss a batch")
    detached = [a for a in book._freed_at if not getattr(book._agents.get(a), "in_allocator", 0)]
    if detached:
        faults.append(f"agents waiting to be offered are not attached: {sorted(detached)}")
    return faults


def _expiries(core: CoreState) -> None:
    """offer_expiry.py: streaks and holds are of frameworks the core keeps, not removed ones
    (rule 5), each hold of an agent with an amount of every scalar, and a streak positive."""
    for fw_id, n in core.expiries.streak.items():
        fw = core.frameworks.get(fw_id)
        _check(n > 0, f"framework {fw_id}'s expiry streak is {n}")
        _check(
            fw is not None and fw.state is not FrameworkState.REMOVED,
            f"expiry streak of gone framework {fw_id}",
        )
    for fw_id, holds in core.expiries.holds.items():
        fw = core.frameworks.get(fw_id)
        _check(
            fw is not None and fw.state is not FrameworkState.REMOVED and bool(holds),
            f"expiry holds of gone framework {fw_id} (or an empty entry)",
        )
        for agent_id, (_, amount) in holds.items():
            _check(len(amount) == len(SCALARS), f"expiry hold of {fw_id} on {agent_id}: {amount}")
