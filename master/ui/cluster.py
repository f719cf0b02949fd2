"""The cluster page's data: agents grouped by an attribute with allocated and total resources
per group, the agents as pages of rows (filtered, sorted), and one agent in full.

Each function runs on the core's task (``MasterRuntime.query``) and costs one pass over the
agents and their tasks at most: at 10,000 agents that is tens of milliseconds, so the page asks
for it every few seconds, never per event (docs/ui.md, "Cost").
"""

from __future__ import annotations

from collections import Counter
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


def overview(core: MasterCore, query: Mapping[str, str]) -> dict[str, Any]:
    """Counts by status, totals, and per group of ``group_by`` (an attribute; default ``zone``
    when some agent has it): agents by status, total and allocated resources, taints."""
    keys: set[str] = set()
    for a in core.agents.values():
        keys.update(a.spec.attributes)
    group_by = query.get("group_by")
    if group_by is None:
        group_by = "zone" if "zone" in keys else ""
    # An attribute no agent has (yet) is no error: every agent is then in group "(none)".
    groups: dict[str, dict[str, Any]] = {}
    by_status: Counter[str] = Counter()
    taints: Counter[str] = Counter()
    total = [0.0] * len(SCALARS)
    used = [0.0] * len(SCALARS)
    for a in core.agents.values():
        status = agent_status(core, a)
        by_status[status] += 1
        key = _group_key(a, group_by)
        g = groups.get(key)
        if g is None:
            g = groups[key] = {
                "key": key,
                "agents": 0,
                "by_status": Counter(),
                "total": [0.0] * len(SCALARS),
                "used": [0.0] * len(SCALARS),
                "taints": Counter(),
            }
        g["agents"] += 1
        g["by_status"][status] += 1
        a_used = used_scalars(a)
        counted = a.state is not AgentState.UNREACHABLE  # its resources are not usable
        for k, x in enumerate(a.spec.resources.scalars()):
            if counted:
                g["total"][k] += x
                total[k] += x
            g["used"][k] += a_used[k]
            used[k] += a_used[k]
        for t in a.spec.taints:
            g["taints"][str(t)] += 1
            taints[str(t)] += 1
    ordered = sorted(groups.values(), key=lambda g: (g["key"] == NO_VALUE, g["key"]))
    shown = [
        {
            **g,
            "by_status": dict(g["by_status"]),
            "total": scalars_json(g["total"]),
            "used": scalars_json(g["used"]),
            "taints": dict(g["taints"]),
        }
        for g in ordered[:MAX_GROUPS]
    ]
    return {
        "master_id": core.master_id,
        "statuses": list(STATUSES),
        "by_status": {s: by_status.get(s, 0) for s in STATUSES},
        "agents": len(core.agents),
        "frameworks_subscribed": sum(
            1 for f in core.frameworks.values() if f.state is FrameworkState.SUBSCRIBED
        ),
        "tasks_active": sum(len(f.tasks) for f in core.frameworks.values()),
        "offers_outstanding": len(core.offers),
        "total": scalars_json(total),
        "used": scalars_json(used),
        "taints": dict(taints),
        "group_by": group_by,
        "attribute_keys": sorted(keys),
        "groups": shown,
        "groups_omitted": max(0, len(ordered) - MAX_GROUPS),
    }


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
    rows.sort(key=lambda row: row[0])
    chosen = rows[page.offset : page.offset + page.limit]
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
    """One point of the utilisation chart: usable totals, what tasks hold, and counts. One
    pass over the agents' tasks (a few ms per 10,000 tasks); the sampler takes one every few
    seconds, whoever watches."""
    total = [0.0] * len(SCALARS)
    used = [0.0] * len(SCALARS)
    by_status: Counter[str] = Counter()
    for a in core.agents.values():
        by_status[agent_status(core, a)] += 1
        if a.state is not AgentState.UNREACHABLE:
            for k, x in enumerate(a.spec.resources.scalars()):
                total[k] += x
        for t in a.tasks.values():
            r = t.spec.resources
            used[0] += r.cpus
            used[1] += r.mem
            used[2] += r.disk
            used[3] += r.gpus
    return {
        "total": scalars_json(total),
        "used": scalars_json(used),
        "by_status": {s: by_status.get(s, 0) for s in STATUSES},
        "tasks_active": sum(len(f.tasks) for f in core.frameworks.values()),
        "frameworks_subscribed": sum(
            1 for f in core.frameworks.values() if f.state is FrameworkState.SUBSCRIBED
        ),
        "offers_outstanding": len(core.offers),
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
