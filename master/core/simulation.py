"""What if: the cluster autoscaler's questions (docs/autoscaler.md), answered by the master's own
placement rules so the autoscaler never re-implements placement (issue #47).

A query, not an event: it reads the core and changes nothing (the shell runs it between two
events, ``MasterRuntime.query``), and its answer depends only on the core's state, the request
and ``now``.

Rules:
1. **Pending.** The demands considered are the why-pending scan's (pending.py rule 1: unmet
   tasks, of a framework subscribed, connected and not suppressed). A demand is *unschedulable*
   by the scan's own test (pending.py rules 2 and 3: no connected agent has room for a task, or
   a waiting gang whose missing members the cut cannot place), except that room the scan's fast
   test leaves out still counts as room: the framework's own outstanding offers and agents
   only its refuse filters hold back (the why-pending reasons' "fits", demands.py; a cordoned
   or draining agent is no room). Only unschedulable demands ask
   for nodes; a demand whose class value is below ``priority_cutoff`` (Cluster Autoscaler's
   ``expendable-pods-priority-cutoff``) never does.
2. **Scale-up options.** For each node group of the request, independently (as Cluster
   Autoscaler's estimator does), the unschedulable demands are packed onto up to ``max_new``
   hypothetical agents of the group's template, highest priority first, then by framework and
   demand: each task first fits on a new agent already opened, else opens one. A task may go on
   a template only when every static placement rule allows the demand there
   (``rules.blocking``: taints and tolerations, constraints, GPUs...), when its shape fits the
   template's total, and, for a DoNotSchedule spread, when one more task in the template's
   domain keeps the skew (its live tasks counted by domain, plus the tasks this option already
   placed; the template's domain joins the domains).
3. **Gangs: all or nothing.** A waiting gang needs its missing members less those the cut
   could place on the agents there are; they all go on new agents of one option or none do
   (the option is left as it was).
4. **Why not.** Each unschedulable demand says, per group it does not place on, the first
   reason: a rule's reason, ``insufficient <resource>`` (the template is too small),
   the spread's reason, ``group at max`` (``max_new`` is 0), ``gang needs N more nodes than the
   group may add``, ``below the priority cutoff``.
5. **Removals.** Each agent named in ``remove`` (unknown ones say so) has a utilization, the
   larger of its cpus and mem used over its total, or for an agent with GPUs its GPUs' (Cluster
   Autoscaler's). Agents below
   ``utilization_threshold`` are tried in increasing utilization, each as if the removable ones
   before it were gone: an agent holding a gang member, or a task no other agent (connected,
   not under maintenance, not itself being removed) could take with every static rule
   allowing it, is not removable; otherwise its tasks are charged where they would go (the
   largest first, first fit), so the next agent's tasks do not count the same room twice.
   A task labelled ``corral.io/safe-to-evict: "false"`` (Cluster Autoscaler's
   ``cluster-autoscaler.kubernetes.io/safe-to-evict`` annotation) keeps its agent: a task that
   must not be moved by a scale-down, though an operator's drain still moves it.
6. **Disruption budgets** (Kubernetes' PodDisruptionBudget, Marathon's minimum health; the
   master's ``--disruption-budgets``): a budget selects live tasks by labels (every one given
   must match; ``app: NAME`` is the serving service's app) and/or framework name, and holds
   ``min_available`` of them healthy (RUNNING, no kill asked) or at most ``max_unavailable``
   of them not. Disrupting agents (a drain, rule 5's removals, counted together) would
   disrupt their healthy selected tasks; when that breaks a budget the drain is refused
   (FAILED_PRECONDITION naming the budget: ``corral drain`` waits) and the removal is not
   removable. A budget already broken by other agents blocks only the agents holding its
   tasks.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from corral.master.allocator import rules
from corral.master.allocator.interface import Scalars
from corral.master.allocator.rules import FrameworkFacts
from corral.master.allocator.rules.resources import insufficient
from corral.master.core import demands, disruption_budgets, gangs, pending, placement_facts
from corral.master.core import events as ev
from corral.master.core.agent_view import AgentView
from corral.master.core.records import AgentRecord, FrameworkRecord
from corral.master.core.states import FrameworkState
from corral.master.core.types import AgentSpec, Demand
from corral.resources import SCALARS, fits, fits_rows, lacking

if TYPE_CHECKING:
    from corral.master.core.state import CoreState

GROUP_AT_MAX = "group at max"
BELOW_CUTOFF = "below the priority cutoff"


def budget_denial(core: CoreState, agent_ids: set[str]) -> str:
    """Rule 6: why disrupting ``agent_ids`` together breaks a budget (empty: it does not)."""
    for b in core.config.disruption_budgets:
        selected, healthy_tasks = disruption_budgets.health(b, core.frameworks.values())
        healthy = len(healthy_tasks)
        disrupted = sum(t.agent_id in agent_ids for t in healthy_tasks)
        if not disrupted or disrupted <= disruption_budgets.allowed(b, selected, healthy):
            continue
        if b.min_available is not None:
            return (
                f"disruption budget {b}: {healthy} of {selected} healthy, disrupting "
                f"{disrupted} would leave {healthy - disrupted}"
            )
        return (
            f"disruption budget {b}: {selected - healthy} of {selected} unavailable, "
            f"disrupting {disrupted} more would make {selected - healthy + disrupted}"
        )
    return ""


@dataclass(frozen=True, slots=True)
class NodeGroupOption:
    """A node group the caller could grow: ``max_new`` more agents like ``template``."""

    name: str
    template: AgentSpec
    max_new: int


@dataclass(frozen=True, slots=True)
class SimulationRequest:
    groups: tuple[NodeGroupOption, ...] = ()
    priority_cutoff: int | None = None  # demands of a lower class value never scale up
    remove: tuple[str, ...] = ()  # agent ids to consider for removal (rule 5)
    utilization_threshold: float = 0.5


@dataclass(slots=True)
class _Wanting:
    """An unschedulable demand: how many tasks it asks new agents for."""

    fw: FrameworkRecord
    d: Demand
    tasks: int
    gang: bool
    priority: int
    facts: FrameworkFacts
    fkey: Hashable
    shape: Scalars
    not_placed: dict[str, str]  # its answer's, by group (rule 4)
    spread_counts: Counter[str] | None = None
    spread_domains: frozenset[str] = frozenset()


@dataclass(slots=True)
class _Option:
    group: NodeGroupOption
    nodes: list[list[float]] = field(default_factory=list)  # free scalars per new agent
    placed: dict[tuple[str, str], int] = field(default_factory=dict)
    # With the group at its max, the most any new agent has free of each resource: a shape
    # that does not fit it fits none (asked without a walk over the nodes). None: stale.
    most_free: list[float] | None = None

    # known_full's answers per shape while most_free holds (shapes repeat: a few dozen).
    full_memo: dict[Scalars, bool] = field(default_factory=dict)

    def known_full(self, shape: Scalars) -> bool:
        if len(self.nodes) < self.group.max_new:
            return False
        if self.most_free is None:
            self.most_free = [max(col) for col in zip(*self.nodes, strict=True)] or [0.0] * len(
                SCALARS
            )
            self.full_memo.clear()
        got = self.full_memo.get(shape)
        if got is None:
            got = self.full_memo[shape] = not fits(self.most_free, shape)
        return got


def simulate(core: CoreState, request: SimulationRequest, now: float) -> dict[str, Any]:
    wanting, pending_out = _pending(core, request, now)
    options = [_pack(core, g, wanting) for g in request.groups]
    return {
        "pending": list(pending_out.values()),
        "options": [o for o in options if o["nodes"]],
        "removals": _removals(core, request),
    }


def _pending(
    core: CoreState, request: SimulationRequest, now: float
) -> tuple[list[_Wanting], dict[tuple[str, str], dict[str, Any]]]:
    """Rule 1: the unschedulable demands, and each one's answer (filled in by ``_pack``)."""
    probe = ev.Event(stimulus_id="simulate", now=now)
    roomy: dict[tuple[str, Scalars], bool] = {}
    wanting: list[_Wanting] = []
    out: dict[tuple[str, str], dict[str, Any]] = {}
    agents: list[AgentRecord] | None = None
    view: AgentView | None = None
    free: npt.NDArray[np.float64] | None = None
    held: dict[str, str] = {}
    # A spread's domains depend on the demand's facts alone (spread.py): asked once per key.
    domains: dict[tuple[Hashable, str], frozenset[str]] = {}
    for fw in sorted(core.frameworks.values(), key=lambda f: f.framework_id):
        if (
            not fw.wants_by_demand
            or fw.state is not FrameworkState.SUBSCRIBED
            or fw.connection is None
            or fw.suppressed
        ):
            continue
        for d in sorted(fw.demands.values(), key=lambda x: x.name):
            unmet = demands.unmet(fw, d)
            if unmet <= 0:
                continue
            never = core.largest.never_fits(core, d.resources.scalars())
            # The scan's own test (pending.py rules 2-3), so "unschedulable" means one thing.
            kind, gang = pending._test(core, fw, d, never, roomy, probe)
            if kind is not None and gang is None and not never:
                # Room the fast test does not count is no reason for a node (rule 1): the
                # framework's own offers, agents its refuse filters hold back for now. First
                # a look over every usable agent's free array (no room there, none at all),
                # then the why-pending reasons for the few demands that pass it.
                if free is None:
                    agents = agents or demands.connected_agents(core)
                    usable = [a for a in agents if a.maintenance is None]
                    free = np.array([_free(a) for a in usable], dtype=np.float64).reshape(
                        len(usable), len(SCALARS)
                    )
                    held = {a.agent_id: "cordoned" for a in agents if a.maintenance is not None}
                if fits_rows(free, d.resources.scalars()).any():
                    if view is None:
                        view = AgentView(core, agents or [])
                    reasons = demands.demand_reasons(core, fw, d, agents or [], held, view)
                    if any(r["reason"] == demands.REASON_FITS for r in reasons):
                        kind = None
            priority = core.priority.value(d.priority_class)
            entry: dict[str, Any] = {
                "framework_id": fw.framework_id,
                "demand": d.name,
                "unmet": unmet,
                "priority": priority,
                "gang": gangs.waiting(fw, d),
                "schedulable": kind is None,
                "tasks_wanted": 0,
                "expendable": False,
                "not_placed": {},
            }
            out[(fw.framework_id, d.name)] = entry
            if kind is None:
                continue
            tasks = unmet
            if gang is not None:
                tasks = max(0, int(gang["members"]) - int(gang["placeable"]))
            entry["tasks_wanted"] = tasks
            if request.priority_cutoff is not None and priority < request.priority_cutoff:
                entry["expendable"] = True
                continue
            facts = _facts(fw, d)
            w = _Wanting(
                fw,
                d,
                tasks,
                gang is not None,
                priority,
                facts,
                rules.framework_key(facts),
                d.resources.scalars(),
                entry["not_placed"],
            )
            rule = d.spread
            if rule is not None and not rule.schedule_anyway:
                agents = agents or demands.connected_agents(core)
                w.spread_counts = _spread_counts(core, fw, d)
                key = (w.fkey, rule.topology_key)
                found = domains.get(key)
                if found is None:
                    found = domains[key] = frozenset(
                        v
                        for a in agents
                        if placement_facts.in_spread_domain(core.allocator, facts, a)
                        and (v := rule.value_of(a.spec.hostname, a.spec.attributes)) is not None
                    )
                w.spread_domains = found
            wanting.append(w)
    wanting.sort(key=lambda w: (-w.priority, w.fw.framework_id, w.d.name))
    return wanting, out


def _facts(fw: FrameworkRecord, d: Demand) -> FrameworkFacts:
    return placement_facts.demand_facts(fw, d)


def _spread_counts(core: CoreState, fw: FrameworkRecord, d: Demand) -> Counter[str]:
    """The demand's live tasks per domain, as spread.py counts them."""
    rule = d.spread
    assert rule is not None
    counts: Counter[str] = Counter()
    for task in fw.tasks.values():
        if task.spec.demand != d.name:
            continue
        agent = core.agents.get(task.agent_id)
        if agent is not None:
            value = rule.value_of(agent.spec.hostname, agent.spec.attributes)
            if value is not None:
                counts[value] += 1
    return counts


def _pack(
    core: CoreState,
    group: NodeGroupOption,
    wanting: Sequence[_Wanting],
) -> dict[str, Any]:
    """Rules 2-4 for one group."""
    template = group.template
    total = list(template.resources.scalars())
    afacts = placement_facts.agent_facts(template)
    options = core.allocator.rule_options
    verdicts: dict[object, list[str]] = {}  # static rules per framework key: asked once
    too_small: dict[Scalars, str] = {}  # per shape: the template's lack (empty: it fits)
    opt = _Option(group)
    name = group.name
    for w in wanting:
        if w.tasks <= 0:
            continue
        blocked = verdicts.get(w.fkey)
        if blocked is None:
            blocked = verdicts[w.fkey] = rules.blocking(afacts, w.facts, options)
        if blocked:
            w.not_placed[name] = blocked[0]
            continue
        shape = w.shape
        small = too_small.get(shape)
        if small is None:
            lack = lacking(total, shape)
            small = too_small[shape] = insufficient(SCALARS[lack[0]]) if lack else ""
        if small:
            w.not_placed[name] = small
            continue
        if opt.known_full(shape):  # the common case once the group is at its max
            w.not_placed[name] = GROUP_AT_MAX if not w.gang else _gang_at_max(group.max_new)
            continue
        placed, why = _place(opt, w, shape, total, template)
        if placed < w.tasks and (placed == 0 or w.gang):
            w.not_placed[name] = why
    nodes = opt.nodes
    waste = [0.0, 0.0]
    for free in nodes:
        for k in (0, 1):
            waste[k] += free[k] / total[k] if total[k] > 0 else 0.0
    n = len(nodes)
    return {
        "group": group.name,
        "nodes": n,
        "tasks": sum(opt.placed.values()),
        "demands": [
            {"framework_id": f, "demand": d, "tasks": t} for (f, d), t in sorted(opt.placed.items())
        ],
        # Cluster Autoscaler's least-waste score: the share of cpus and mem the new agents
        # would leave idle, averaged over them.
        "waste_cpus": waste[0] / n if n else 0.0,
        "waste_mem": waste[1] / n if n else 0.0,
    }


def _spread_reason(w: _Wanting, value: str | None, more: int) -> str:
    """The spread's reason against one more task of ``w`` in domain ``value`` once ``more``
    were placed there by this option (empty: it may go)."""
    rule = w.d.spread
    if rule is None or w.spread_counts is None:
        return ""
    counts = Counter(w.spread_counts)
    domains = set(w.spread_domains)
    if value is not None:
        counts[value] += more
        domains.add(value)
    fewest = min((counts.get(v, 0) for v in domains), default=0)
    return rule.blocked(value, counts, fewest)


def _gang_at_max(max_new: int) -> str:
    return (
        GROUP_AT_MAX
        if max_new <= 0
        else f"gang needs more nodes than the group may add ({max_new})"
    )


def _place(
    opt: _Option, w: _Wanting, shape: Scalars, total: list[float], template: AgentSpec
) -> tuple[int, str]:
    """Rules 2-3: pack ``w``'s tasks (a gang's all or none): how many were placed and, when
    not all, why the next one was not."""
    max_new = opt.group.max_new
    nodes = [list(free) for free in opt.nodes] if w.gang else opt.nodes
    rule = w.d.spread
    value = rule.value_of(template.hostname, template.attributes) if rule is not None else None
    placed = 0
    why = ""
    at_max = GROUP_AT_MAX if max_new <= 0 or not w.gang else _gang_at_max(max_new)
    for _ in range(w.tasks):
        if (why := _spread_reason(w, value, placed)) != "":
            break
        for free in nodes:
            if fits(free, shape):
                break
        else:
            if len(nodes) >= max_new:
                why = at_max
                break
            free = list(total)
            nodes.append(free)
        for k, x in enumerate(shape):
            free[k] -= x
        placed += 1
        opt.most_free = None
    if w.gang:
        if placed < w.tasks:
            return placed, why  # all or none: the option is left as it was
        opt.nodes[:] = nodes
    if placed:
        key = (w.fw.framework_id, w.d.name)
        opt.placed[key] = opt.placed.get(key, 0) + placed
    return placed, why


def _utilization(agent: AgentRecord) -> float:
    """Cluster Autoscaler's: a GPU agent's is its GPUs' (idle GPUs are what it costs), any
    other's the larger of its cpus' and mem's."""
    total = agent.spec.resources
    used = agent.used
    if total.gpus > 0:
        return used.gpus / total.gpus
    shares = [used.cpus / total.cpus if total.cpus > 0 else 0.0]
    shares.append(used.mem / total.mem if total.mem > 0 else 0.0)
    return max(shares)


# Rule 5: the task label that keeps a task's agent from being removed by a scale-down.
SAFE_TO_EVICT = "corral.io/safe-to-evict"


def _removals(core: CoreState, request: SimulationRequest) -> list[dict[str, Any]]:
    """Rule 5."""
    out: dict[str, dict[str, Any]] = {}
    candidates: list[tuple[float, str, AgentRecord]] = []
    for aid in request.remove:
        agent = core.agents.get(aid)
        if agent is None:
            out[aid] = {"agent_id": aid, "removable": False, "reason": "unknown agent"}
            continue
        u = _utilization(agent)
        out[aid] = {"agent_id": aid, "utilization": u, "removable": False, "reason": ""}
        if u >= request.utilization_threshold:
            out[aid]["reason"] = (
                f"utilization {u:.2f} not below the threshold {request.utilization_threshold}"
            )
            continue
        candidates.append((u, aid, agent))
    candidates.sort(key=lambda c: (c[0], c[1]))
    # The agents that could take tasks: connected, not under maintenance, not removed.
    targets = [a for a in demands.connected_agents(core) if a.maintenance is None]
    free = {a.agent_id: _free(a) for a in targets}
    options = core.allocator.rule_options
    gone: set[str] = set()
    for _, aid, agent in candidates:
        others = [a for a in targets if a.agent_id != aid]
        reason, charged = _moves(core, agent, others, free, options)
        if not reason:
            reason = budget_denial(core, gone | {aid})
        if not reason:
            gone.add(aid)
        out[aid]["reason"] = reason
        out[aid]["removable"] = not reason
        if not reason:
            targets = others
            for tid, shape in charged:
                for k, x in enumerate(shape):
                    free[tid][k] -= x
    return [out[aid] for aid in request.remove if aid in out]


def _free(agent: AgentRecord) -> list[float]:
    free = list(agent.spec.resources.scalars())
    for k, x in enumerate(agent.used.scalars()):
        free[k] -= x
    return free


def _moves(
    core: CoreState,
    agent: AgentRecord,
    targets: Sequence[AgentRecord],
    free: dict[str, list[float]],
    options: rules.RuleOptions,
) -> tuple[str, list[tuple[str, Scalars]]]:
    """Where ``agent``'s tasks would go: ("", charges) or (why not, [])."""
    tasks = sorted(
        agent.tasks.values(),
        key=lambda t: (-sum(t.spec.resources.scalars()), t.framework_id, t.task_id),
    )
    scratch = {aid: list(f) for aid, f in free.items()}
    charged: list[tuple[str, Scalars]] = []
    for t in tasks:
        labels = getattr(t.spec.wire, "labels", None)
        if labels is not None and labels.get(SAFE_TO_EVICT) == "false":
            return (
                f"task {t.task_id} of {t.framework_id} is marked not safe to evict "
                f"({SAFE_TO_EVICT}=false)",
                [],
            )
        fw = core.frameworks.get(t.framework_id)
        d = fw.demands.get(t.spec.demand) if fw is not None and t.spec.demand else None
        if d is not None and d.min_member > 0:
            return f"holds a member of gang {t.framework_id}/{d.name} (task {t.task_id})", []
        facts = placement_facts.demand_facts(fw, d) if fw is not None else FrameworkFacts()
        shape = t.spec.resources.scalars()
        for target in targets:
            room = scratch[target.agent_id]
            if fits(room, shape) and rules.allows(
                placement_facts.record_facts(target), facts, options
            ):
                for k, x in enumerate(shape):
                    room[k] -= x
                charged.append((target.agent_id, shape))
                break
        else:
            return f"task {t.task_id} of {t.framework_id} fits no other agent", []
    return "", charged


def agent_template(
    name: str, resources: Any, attributes: dict[str, str], taints: tuple[Any, ...]
) -> AgentSpec:
    """A hypothetical agent: no id, its group's name as its hostname."""
    return AgentSpec("", name, resources, dict(attributes), tuple(taints))


__all__ = ["NodeGroupOption", "SimulationRequest", "agent_template", "simulate"]
