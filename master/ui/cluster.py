"""The cluster page's data: agents grouped by an attribute with allocated and total resources
per group, the agents as pages of rows (filtered, sorted), and one agent in full.

Each function runs on the core's task (``MasterRuntime.query``) and costs one pass over the
agents and their tasks at most: at 10,000 agents that is tens of milliseconds, so the page asks
for it every few seconds, never per event (docs/ui.md, "Cost").
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from typing import Any

from corral.master.core.master import MasterCore
from corral.master.core.records import AgentRecord
from corral.master.core.states import AgentState, FrameworkState
from corral.master.ui import params
from corral.master.ui.common import (
    STATUSES,
    agent_conditions,
    agent_status,
    events_about,
    resources_json,
    scalars_json,
    used_scalars,
)
from corral.master.ui.params import Page
from corral.resources import SCALARS

MAX_GROUPS = 500  # groups listed; the rest are counted (a group-by on a unique attribute)
NO_VALUE = "(none)"  # the group of agents without the attribute
AGENT_SORTS = ("id", "hostname", "tasks", "cpus", "mem", "disk", "gpus")
AGENT_PARAMS = (*Page.PARAMS, "status", "group_by", "group", "q", "sort")
OVERVIEW_PARAMS = ("group_by",)


def _group_key(agent: AgentRecord, group_by: str) -> str:
    if not group_by:
        return "all agents"
    return agent.spec.attributes.get(group_by, NO_VALUE)


class _Group:
    """One group's sums, kept as plain fields: the overview adds to them 10,000 times."""

    __slots__ = ("agents", "by_status", "cpus", "disk", "gpus", "mem", "taints", "used")

    def __init__(self) -> None:
        self.agents = 0
        self.by_status: dict[str, int] = {}
        self.cpus = self.mem = self.disk = self.gpus = 0.0
        self.used = [0.0, 0.0, 0.0, 0.0]
        self.taints: dict[str, int] = {}

    def json(self, key: str) -> dict[str, Any]:
        return {
            "key": key,
            "agents": self.agents,
            "by_status": self.by_status,
            "total": scalars_json((self.cpus, self.mem, self.disk, self.gpus)),
            "used": scalars_json(self.used),
            "taints": self.taints,
        }


def overview(core: MasterCore, query: Mapping[str, str]) -> dict[str, Any]:
    """Counts by status, totals, and per group of ``group_by`` (an attribute; default ``zone``
    when some agent has it): agents by status, total and allocated resources, taints.

    One pass over the agents and their tasks, written for speed (about 4 µs an agent): the
    page asks for it every few seconds at 10,000 agents."""
    asked = query.get("group_by")
    group_by = "zone" if asked is None else asked
    groups: dict[str, _Group] = {}
    keys: set[str] = set()
    for a in core.agents.values():
        spec = a.spec
        attributes = spec.attributes
        if attributes:
            keys.update(attributes)
        key = attributes.get(group_by, NO_VALUE) if group_by else "all agents"
        g = groups.get(key)
        if g is None:
            g = groups[key] = _Group()
        g.agents += 1
        status = agent_status(core, a)
        g.by_status[status] = g.by_status.get(status, 0) + 1
        if a.state is not AgentState.UNREACHABLE:  # an unreachable agent's resources are not usable
            r = spec.resources
            g.cpus += r.cpus
            g.mem += r.mem
            g.disk += r.disk
            g.gpus += r.gpus
        if a.tasks:
            used = g.used
            for t in a.tasks.values():
                r = t.spec.resources
                used[0] += r.cpus
                used[1] += r.mem
                used[2] += r.disk
                used[3] += r.gpus
        for taint in spec.taints:
            text = str(taint)
            g.taints[text] = g.taints.get(text, 0) + 1
    if asked is None and "zone" not in keys and groups:
        # No agent has a zone: one group, as group_by="" gives.
        whole = _Group()
        for g in groups.values():
            _add(whole, g)
        group_by, groups = "", {"all agents": whole}
    everything = _Group()
    for g in groups.values():
        _add(everything, g)
    ordered = sorted(groups, key=lambda k: (k == NO_VALUE, k))
    return {
        "master_id": core.master_id,
        "statuses": list(STATUSES),
        "by_status": {s: everything.by_status.get(s, 0) for s in STATUSES},
        "agents": len(core.agents),
        "frameworks_subscribed": sum(
            1 for f in core.frameworks.values() if f.state is FrameworkState.SUBSCRIBED
        ),
        "tasks_active": sum(len(f.tasks) for f in core.frameworks.values()),
        "offers_outstanding": len(core.offers),
        "total": scalars_json((everything.cpus, everything.mem, everything.disk, everything.gpus)),
        "used": scalars_json(everything.used),
        "taints": everything.taints,
        "group_by": group_by,
        "attribute_keys": sorted(keys),
        "groups": [groups[k].json(k) for k in ordered[:MAX_GROUPS]],
        "groups_omitted": max(0, len(ordered) - MAX_GROUPS),
    }


def _add(into: _Group, g: _Group) -> None:
    into.agents += g.agents
    for status, n in g.by_status.items():
        into.by_status[status] = into.by_status.get(status, 0) + n
    into.cpus += g.cpus
    into.mem += g.mem
    into.disk += g.disk
    into.gpus += g.gpus
    into.used = [x + y for x, y in zip(into.used, g.used, strict=True)]
    for taint, n in g.taints.items():
        into.taints[taint] = into.taints.get(taint, 0) + n


def agent_row(core: MasterCore, a: AgentRecord, used: list[float] | None = None) -> dict[str, Any]:
    return {
        "id": a.agent_id,
        "hostname": a.spec.hostname,
        "state": a.state.value,
        "status": agent_status(core, a),
        "conditions": agent_conditions(core, a),
        "connected": a.connection is not None,
        "attributes": dict(a.spec.attributes),
        "taints": [str(t) for t in a.spec.taints],
        "resources": resources_json(a.spec.resources),
        "used": scalars_json(used if used is not None else used_scalars(a)),
        "tasks": len(a.tasks),
        "registered_at": a.registered_at,
        "last_seen": a.last_seen,
    }


def agents_page(core: MasterCore, query: Mapping[str, str]) -> dict[str, Any]:
    """A page of agents: ``status`` (one of STATUSES), ``group_by`` and ``group`` (agents whose
    attribute has that value, ``(none)`` for those without it), ``q`` (in the id, hostname or
    an attribute's value), ``sort`` (id, hostname, or the most tasks / most allocated of a
    resource first)."""
    page = Page.of(query)
    status = params.choice(query, "status", STATUSES)
    group_by = query.get("group_by", "")
    group = query.get("group")
    if group is not None and not group_by:
        raise ValueError("group needs group_by (the attribute the group is a value of)")
    text = query.get("q", "").lower()
    sort = params.choice(query, "sort", AGENT_SORTS, "id")
    rows: list[tuple[Any, AgentRecord, list[float] | None]] = []
    for a in core.agents.values():
        if status and agent_status(core, a) != status:
            continue
        if group is not None and _group_key(a, group_by) != group:
            continue
        if text and not (
            text in a.agent_id.lower()
            or text in a.spec.hostname.lower()
            or any(text in v.lower() for v in a.spec.attributes.values())
        ):
            continue
        used: list[float] | None = None
        if sort == "id":
            key: Any = a.agent_id
        elif sort == "hostname":
            key = (a.spec.hostname, a.agent_id)
        elif sort == "tasks":
            key = (-len(a.tasks), a.agent_id)
        else:
            k = SCALARS.index(sort)
            used = used_scalars(a)
            total = a.spec.resources.scalars()[k]
            key = (-(used[k] / total if total > 0 else 0.0), a.agent_id)
        rows.append((key, a, used))
    # The first offset+limit only (keys are unique: the agent id is in each): a full sort of
    # 50,000 rows (137 ms, ids in random order) per page of 50 is what this avoids (36 ms).
    # Deep into the list a sort is the cheaper of the two.
    wanted = page.offset + page.limit
    if wanted * 8 < len(rows):
        chosen = heapq.nsmallest(wanted, rows, key=lambda row: row[0])[page.offset :]
    else:
        rows.sort(key=lambda row: row[0])
        chosen = rows[page.offset : wanted]
    return page.envelope(len(rows), [agent_row(core, a, used) for _, a, used in chosen])


def agent_detail(core: MasterCore, agent_id: str, events: Any) -> dict[str, Any] | None:
    """One agent with its live tasks, outstanding offers and the events about it."""
    a = core.agents.get(agent_id)
    if a is None:
        return None
    offered = [0.0] * len(SCALARS)
    offers = core.book.of_agent(agent_id)
    for o in offers:
        for k, x in enumerate(o.scalars):
            offered[k] += x
    tasks = sorted(a.tasks.values(), key=lambda t: -t.launched_at)
    return {
        **agent_row(core, a),
        "offered": scalars_json(offered),
        "offers": [{"id": o.offer_id, "framework_id": o.framework_id} for o in offers],
        "heartbeat_interval": a.heartbeat_interval,
        "unreachable_at": a.unreachable_at,
        "task_list": [
            {
                "id": t.task_id,
                "name": t.spec.name,
                "framework_id": t.framework_id,
                "state": t.state.name,
                "resources": resources_json(t.spec.resources),
                "launched_at": t.launched_at,
            }
            for t in tasks
        ],
        "events": events_about(events, agent_id),
    }


def sample(core: MasterCore) -> dict[str, Any]:
    """One point of the utilisation chart: usable totals, what tasks hold, and counts: the
    overview without its groups, taken every few seconds whoever watches."""
    point = overview(core, {"group_by": ""})
    return {
        "total": point["total"],
        "used": point["used"],
        "by_status": point["by_status"],
        "tasks_active": point["tasks_active"],
        "frameworks_subscribed": point["frameworks_subscribed"],
        "offers_outstanding": point["offers_outstanding"],
        "pending_tasks": pending_tasks(core),
    }


def pending_tasks(core: MasterCore) -> int:
    """Tasks the frameworks' demands still want (their unmet counts, summed)."""
    n = 0
    for f in core.frameworks.values():
        if f.state is FrameworkState.REMOVED:
            continue
        for d in f.demands.values():
            n += max(0, d.count - f.demand_tasks.get(d.name, 0))
    return n
