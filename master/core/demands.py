"""Demands and priority classes in the core: the class table, the checks of a SetDemands call,
what a framework still needs, and why it is pending (docs/scheduling.md).

Rules:
1. A demand's unmet count is its ``count`` minus the framework's live tasks naming it
   (``TaskSpec.demand``; a task in a non-terminal state, UNREACHABLE included, counts).
   Outstanding offers do not count: an offer is not yet a task.
2. A framework's priority (the allocator's order key 1) is the highest class value among its
   demands with an unmet count; with none, the global default class's value. What people are
   shown as its priority (``class_priority``: `corral get frameworks`, the web UI) is the
   highest class value among all its demands, met or not: a batch framework is -100 whether
   or not it waits, where its place in the order falls to the default once it wants nothing.
3. A framework that has called SetDemands is offered only while some demand is unmet
   (auto-suppress); one that never did is offered as in Mesos. Its own SUPPRESS still holds.
4. A class named by a demand or by a live task cannot be deleted, and the global default
   cannot be deleted (another class must become the default first).
5. A name the table does not hold (a task an agent reports, or one that outlived its class
   after a restart that forgot it) resolves to the global default (``PriorityTable.resolve``);
   the core records an ``unknown_priority_class`` event where such a task comes in.
6. A demand may ask for no cpus and no mem: BestEffort work (corral.qos). It is never a gang
   and never preempts (it needs no room); it is pending on an agent under memory pressure
   (explain says so: master/allocator/rules/pressure.py).
7. A framework whose unmet demands are all BestEffort is offered no agent under memory
   pressure (``besteffort_only``, handed to the allocator with its priority).
8. A framework that set demands is offered no agent none of its unmet demands fits, even
   empty (``unmet_shapes``, handed to the allocator with its priority: rules/demand_fit.py).
   A demand that fits nowhere is pending, and holds nothing from anyone (issue #41).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any

from corral.limits import (
    MAX_CONSTRAINTS,
    MAX_DEMAND_COUNT,
    MAX_DEMANDS,
    MAX_NAME_LENGTH,
    MAX_TOLERATIONS,
    echo,
)
from corral.master.allocator.interface import HeldBack
from corral.master.allocator.rules.resources import insufficient
from corral.master.core import gangs, placement_facts
from corral.master.core.agent_view import SAMPLE_AGENTS, AgentView
from corral.master.core.priority_table import PriorityTable as PriorityTable
from corral.master.core.records import AgentRecord, FrameworkRecord
from corral.master.core.spread import SpreadCounts, spread_counts
from corral.master.core.states import FrameworkState
from corral.master.core.types import Demand
from corral.qos import is_besteffort
from corral.resources import GRANULARITY, SCALARS, lacking

if TYPE_CHECKING:
    from corral.master.core.state import CoreState

REASON_FITS = "fits"  # an agent with room for a task of the shape now


class DemandError(ValueError):
    """A demand the master refuses; the message names the demand and the problem."""


def check_demands(demands: Sequence[Demand], table: PriorityTable) -> None:
    """Raise DemandError naming the first demand that breaks a rule (nothing is applied)."""
    if len(demands) > MAX_DEMANDS:
        raise DemandError(f"{len(demands)} demands, more than the limit of {MAX_DEMANDS}")
    seen: set[str] = set()
    for d in demands:
        what = f"demand {echo(d.name)}"
        if not d.name:
            raise DemandError("a demand has an empty name")
        if len(d.name) > MAX_NAME_LENGTH:
            raise DemandError(f"{what}: the name is longer than {MAX_NAME_LENGTH} characters")
        if any(c.isspace() or not c.isprintable() for c in d.name):
            raise DemandError(f"{what}: the name has whitespace or unprintable characters")
        if d.name in seen:
            raise DemandError(f"{what} appears twice")
        seen.add(d.name)
        if isinstance(d.count, bool) or not isinstance(d.count, int) or d.count <= 0:
            raise DemandError(f"{what}: count must be more than 0, got {echo(d.count)}")
        if d.count > MAX_DEMAND_COUNT:
            raise DemandError(
                f"{what}: count {d.count} is more than the limit of {MAX_DEMAND_COUNT}"
            )
        fine = d.resources.below_granularity()
        if fine:
            raise DemandError(
                f"{what}: {fine[0]} is below the resources' granularity of {GRANULARITY:g}"
            )
        if is_besteffort(d.resources.cpus, d.resources.mem) and d.min_member > 0:
            raise DemandError(
                f"{what}: a gang's task shape asks for cpus or mem (a BestEffort shape, with "
                "neither, has nothing to bundle)"
            )
        if d.resources.ports:
            raise DemandError(f"{what}: ports are not part of a demand's shape")
        if not 0 <= d.min_member <= d.count:
            raise DemandError(
                f"{what}: min_member must be between 0 and count ({d.count}), got {d.min_member}"
            )
        if len(d.constraints) > MAX_CONSTRAINTS:
            raise DemandError(f"{what}: more than {MAX_CONSTRAINTS} constraints")
        if len(d.tolerations) > MAX_TOLERATIONS:
            raise DemandError(f"{what}: more than {MAX_TOLERATIONS} tolerations")
        if not table.known(d.priority_class):
            raise DemandError(f"{what}: unknown priority class {echo(d.priority_class)}")


def unmet(fw: FrameworkRecord, d: Demand) -> int:
    return max(0, d.count - fw.demand_tasks.get(d.name, 0))


def priority(fw: FrameworkRecord, table: PriorityTable) -> int:
    """Rule 2."""
    values = [table.value(d.priority_class) for d in fw.demands.values() if unmet(fw, d) > 0]
    return max(values) if values else table.value("")


def class_priority(fw: FrameworkRecord, table: PriorityTable) -> int:
    """Rule 2, as shown: the highest class value among all its demands; with none, the
    global default class's value. ``corral.master.http.state_json`` says the same from the wire's
    demands."""
    values = [table.value(d.priority_class) for d in fw.demands.values()]
    return max(values) if values else table.value("")


def besteffort_only(fw: FrameworkRecord) -> bool:
    """Rule 7: every unmet demand is BestEffort (no cpus and no mem): the framework is kept
    off agents under memory pressure (rules/pressure.py)."""
    if not fw.wants_by_demand:
        return False
    wanted = [d for d in fw.demands.values() if unmet(fw, d) > 0]
    return bool(wanted) and all(is_besteffort(d.resources.cpus, d.resources.mem) for d in wanted)


def unmet_shapes(fw: FrameworkRecord) -> tuple[tuple[float, ...], ...] | None:
    """Rule 8: one task's shape per unmet demand, each once, in order (None: the framework
    never set demands, and is offered as in Mesos)."""
    if not fw.wants_by_demand:
        return None
    shapes = {d.resources.scalars() for d in fw.demands.values() if unmet(fw, d) > 0}
    return tuple(sorted(shapes))


def wants_nothing(fw: FrameworkRecord) -> bool:
    """Rule 3: auto-suppressed."""
    return fw.wants_by_demand and not any(unmet(fw, d) > 0 for d in fw.demands.values())


def offered_regularly(fw: FrameworkRecord) -> bool:
    """Rule 3 for the regular cycle: some demand is unmet other than a gang waiting for its
    bundle (gangs.py rule 1: a waiting gang is offered only as a bundle)."""
    if not fw.wants_by_demand:
        return True
    return any(unmet(fw, d) > 0 and not gangs.waiting(fw, d) for d in fw.demands.values())


def classes_in_use(core: CoreState, name: str) -> str:
    """Who names class ``name`` (rule 4), as a reason; empty when nobody does."""
    live = core.tasks.live_classes.get(name, 0)
    if live > 0:
        # Counted over every live task, those of frameworks being removed included.
        return f"{live} live task{'s' if live != 1 else ''}"
    for fw in core.frameworks.values():
        if fw.state is FrameworkState.REMOVED:
            continue
        for d in fw.demands.values():
            if (d.priority_class or core.priority.default) == name:
                return f"demand {echo(d.name)} of framework {fw.framework_id}"
        for t in fw.tasks.values():
            if t.spec.priority_class == name:
                return f"task {echo(t.task_id)} of framework {fw.framework_id}"
    return ""


def demand_json(fw: FrameworkRecord, d: Demand, table: PriorityTable) -> dict[str, Any]:
    return {
        "name": d.name,
        "resources": {n: getattr(d.resources, n) for n in SCALARS},
        "count": d.count,
        "priority_class": d.priority_class or table.default,
        "priority": table.value(d.priority_class),
        "min_member": d.min_member,
        "constraints": [str(c) for c in d.constraints],
        "tolerations": [str(t) for t in d.tolerations],
        "spread": None if d.spread is None else str(d.spread),
        "tasks": fw.demand_tasks.get(d.name, 0),
        "unmet": unmet(fw, d),
    }


def _free_for(core: CoreState, fw: FrameworkRecord, agent: AgentRecord) -> list[float]:
    """What the framework could get of the agent now: its total less the tasks on it and the
    offers outstanding to other frameworks (its own offers are its to use)."""
    free = list(agent.spec.resources.scalars())
    for task in agent.tasks.values():
        for k, x in enumerate(task.spec.resources.scalars()):
            free[k] -= x
    for offer in core.book.of_agent(agent.agent_id):
        if offer.framework_id != fw.framework_id:
            for k, x in enumerate(offer.scalars):
                free[k] -= x
    return free


def _agent_reasons(
    core: CoreState,
    fw: FrameworkRecord,
    d: Demand,
    agent: AgentRecord,
    held: dict[str, str],
    spread: SpreadCounts | None = None,
) -> list[str]:
    """Why one task of ``d`` cannot go on ``agent`` now (empty: it fits). ``held``: the
    allocator's refuse filters and draining agents for the framework (Allocator.held_back);
    ``spread``: where the demand's tasks are, if it has a spread rule (spread.py)."""
    reasons = placement_facts.blocking(core.allocator, placement_facts.demand_facts(fw, d), agent)
    free = _free_for(core, fw, agent)
    shape = d.resources.scalars()
    reasons.extend(insufficient(SCALARS[k]) for k in lacking(free, shape))
    why = held.get(agent.agent_id)
    if why is not None:
        reasons.append(why)
    if spread is not None and (skewed := spread.reason(agent)):
        reasons.append(skewed)
    # Once each: a constraint the framework and the demand both set counted the agent twice.
    return list(dict.fromkeys(reasons))


def connected_agents(core: CoreState) -> list[AgentRecord]:
    """The agents explain counts (those in the allocator), by id."""
    agents = core.agents  # by id: sorting the ids is a plain string sort, no key per agent
    return [agents[aid] for aid in sorted(aid for aid, a in agents.items() if a.in_allocator)]


def held_back(core: CoreState, fw: FrameworkRecord, now: float) -> dict[str, str]:
    try:
        return core.allocator.held_back(fw.framework_id, now)
    except KeyError:  # not in the allocator (removed): nothing of it is held back
        return {}


def held_back_masks(core: CoreState, fw: FrameworkRecord, now: float) -> HeldBack | dict[str, str]:
    """``held_back`` as the allocator's arrays (one gather, not a dict of every filtered
    agent: a framework that declined everything has one filter per agent)."""
    try:
        return core.allocator.held_back_masks(fw.framework_id, now)
    except KeyError:  # not in the allocator (removed): nothing of it is held back
        return {}


def reasons_key(fw: FrameworkRecord, d: Demand) -> Hashable:
    """What ``demand_reasons`` reads of a demand, beside its framework and the cluster: its
    shape, constraints, tolerations and spread rule, and its name only when an enforced spread
    rule counts the tasks naming it (spread.py). Two demands of a framework with one key have
    the same reasons at one moment."""
    spread = d.spread
    named = d.name if spread is not None and not spread.schedule_anyway else ""
    return (fw.framework_id, d.resources.scalars(), d.constraints, d.tolerations, spread, named)


def demand_reasons(
    core: CoreState,
    fw: FrameworkRecord,
    d: Demand,
    agents: Sequence[AgentRecord],
    held: HeldBack | dict[str, str],
    view: AgentView | None = None,
) -> list[dict[str, Any]]:
    """Per reason a task of ``d`` cannot go on an agent (``fits`` for those it can): how many
    of ``agents`` it applies to and up to SAMPLE_AGENTS of them; most agents first. Counted
    over all agents at once (agent_view.py); pass ``view`` to reuse one for many demands."""
    if view is None:
        view = AgentView(core, agents)
    return view.reasons(fw, d, held, REASON_FITS)


def demand_reasons_reference(
    core: CoreState,
    fw: FrameworkRecord,
    d: Demand,
    agents: Sequence[AgentRecord],
    held: dict[str, str],
) -> list[dict[str, Any]]:
    """``demand_reasons`` agent by agent (``_agent_reasons``): the specification the fast one
    is tested against."""
    counts: dict[str, list[str]] = {}
    spread = spread_counts(core, fw, d, agents)
    for agent in agents:
        reasons = _agent_reasons(core, fw, d, agent, held, spread) or [REASON_FITS]
        for reason in reasons:
            counts.setdefault(reason, []).append(agent.agent_id)
    return [
        {"reason": r, "agents": len(ids), "sample_agents": ids[:SAMPLE_AGENTS]}
        for r, ids in sorted(counts.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    ]


def explain(core: CoreState, fw: FrameworkRecord, now: float) -> list[dict[str, Any]]:
    """Each pending demand (unmet > 0) with why: per reason, how many of the connected agents
    it applies to and a few of them by id, and a one-line summary ("3 of 5 agents:
    insufficient gpus"). A waiting gang (gangs.py) also gets ``gang``: its missing members,
    how many fit now, its bundle if one is outstanding; its summary counts tasks ("3/8 tasks
    unplaceable: insufficient gpus on 5 agents")."""
    agents = connected_agents(core)
    held = held_back_masks(core, fw, now)
    out: list[dict[str, Any]] = []
    view: AgentView | None = None
    for d in fw.demands.values():
        left = unmet(fw, d)
        if left <= 0:
            continue
        if view is None:
            view = AgentView(core, agents)
        counted = demand_reasons(core, fw, d, agents, held, view)
        # An agent with room is not a reason to be pending (kube-scheduler's "0/3 nodes are
        # available" never counts one): it is said apart, as where the demand's tasks can go.
        reasons_out = [r for r in counted if r["reason"] != REASON_FITS]
        room = next((r for r in counted if r["reason"] == REASON_FITS), None)
        n = len(agents)
        parts = [f"{r['agents']} of {n} agents: {r['reason']}" for r in reasons_out]
        if room is not None:
            parts.append(f"room for a task now on {room['agents']} of {n} agents")
        record = demand_json(fw, d, core.priority)
        record["agents"] = n
        record["reasons"] = reasons_out
        record["room"] = {
            "agents": room["agents"] if room else 0,
            "sample_agents": room["sample_agents"] if room else [],
        }
        record["summary"] = "; ".join(parts) if parts else "no agents connected"
        if gangs.waiting(fw, d):
            gang = gangs.explain(core, fw, d, now)
            record["gang"] = gang
            record["summary"] = gang_summary(gang, reasons_out) + "; " + record["summary"]
        out.append(record)
    return out


def gang_summary(gang: dict[str, Any], reasons: list[dict[str, Any]]) -> str:
    members, placeable = gang["members"], gang["placeable"]
    if gang["offered"]:
        return f"{members} tasks offered as gang {gang['offered']} on {gang['agents']} agents"
    if placeable >= members:
        why = "role quota or guarantee headroom" if gang.get("over_headroom") else "next cycle"
        return f"{members}/{members} tasks fit; not offered yet ({why})"
    blocked = [r for r in reasons if r["reason"] != REASON_FITS]
    counted = "; ".join(
        f"{r['reason']} on {r['agents']} agent{'s' if r['agents'] != 1 else ''}" for r in blocked
    )
    return f"{members - placeable}/{members} tasks unplaceable: " + (
        counted or "the agents that fit hold fewer tasks"
    )
