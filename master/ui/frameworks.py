"""Frameworks, roles and pending demands for the UI.

Per framework: its role, priority, dominant share (its tasks' largest fraction of any usable
resource of the cluster, as DRF ranks it), outstanding offers and tasks by state; the roles
with weight, quota and use (``/api/v1/roles``' rows); every unmet demand with why it is
pending, as ``corral explain`` gives it (agents counted per reason; a gang's members that fit).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from corral.master import views
from corral.master.core import demands
from corral.master.core.master import MasterCore
from corral.master.core.records import FrameworkRecord
from corral.master.core.states import AgentState, FrameworkState
from corral.master.ui import params
from corral.master.ui.common import events_about, resources_json, scalars_json
from corral.master.ui.params import Page
from corral.resources import SCALARS, Resources

FRAMEWORK_STATES = tuple(s.value for s in FrameworkState)
FRAMEWORK_PARAMS = (*Page.PARAMS, "state", "role", "q")
PENDING_PARAMS = (*Page.PARAMS, "framework_id")


def cluster_total(core: MasterCore) -> list[float]:
    """The usable resources: every agent's but the unreachable ones'."""
    cpus = mem = disk = gpus = 0.0
    for a in core.agents.values():
        if a.state is not AgentState.UNREACHABLE:
            r = a.spec.resources
            cpus += r.cpus
            mem += r.mem
            disk += r.disk
            gpus += r.gpus
    return [cpus, mem, disk, gpus]


def _used(fw: FrameworkRecord) -> list[float]:
    used = [0.0] * len(SCALARS)
    for t in fw.tasks.values():
        for k, x in enumerate(t.spec.resources.scalars()):
            used[k] += x
    return used


def framework_row(core: MasterCore, fw: FrameworkRecord, total: list[float]) -> dict[str, Any]:
    used = _used(fw)
    shares = [u / t for u, t in zip(used, total, strict=True) if t > 0]
    live = Counter(t.state.name for t in fw.tasks.values())
    ended = Counter(t.state.name for t in core.completed.of_framework(fw.framework_id))
    unmet = sum(demands.unmet(fw, d) for d in fw.demands.values())
    return {
        "id": fw.framework_id,
        "name": fw.spec.name,
        "role": fw.spec.role,
        "principal": fw.spec.principal,
        "state": fw.state.value,
        "suppressed": fw.suppressed,
        # Its class's value, met or not (demands.py rule 2): not 0 once its demands are met.
        "priority": demands.class_priority(fw, core.priority),
        "dominant_share": max(shares, default=0.0),
        "used": scalars_json(used),
        "offers": core.book.count_of(fw.framework_id),
        "tasks": len(fw.tasks),
        "tasks_by_state": dict(live + ended),
        "unmet": unmet,
        "wants_nothing": demands.wants_nothing(fw),
        "registered_at": fw.registered_at,
    }


def frameworks_page(core: MasterCore, query: Mapping[str, str]) -> dict[str, Any]:
    """A page of frameworks (``state``, ``role``, ``q`` in the id or name), subscribed first,
    then by name; with every role's weight, quota and use."""
    page = Page.of(query)
    state = params.choice(query, "state", FRAMEWORK_STATES)
    role = query.get("role", "")
    text = query.get("q", "").lower()
    order = {s: i for i, s in enumerate(FrameworkState)}
    found = [
        fw
        for fw in core.frameworks.values()
        if (not state or fw.state.value == state)
        and (not role or fw.spec.role == role)
        and (not text or text in fw.framework_id.lower() or text in fw.spec.name.lower())
    ]
    found.sort(key=lambda fw: (order[fw.state], fw.spec.name, fw.framework_id))
    total = cluster_total(core)
    rows = [framework_row(core, fw, total) for fw in found[page.offset : page.offset + page.limit]]
    return {
        **page.envelope(len(found), list(rows)),
        "roles": views.roles_json(core)["roles"],
        "cluster_total": scalars_json(total),
    }


def framework_detail(
    core: MasterCore, framework_id: str, now: float, events: Any
) -> dict[str, Any] | None:
    """One framework in full: its row, what it asked for (constraints, tolerations, demands),
    why it is or is not offered (``corral explain``) and the events about it and its demands."""
    fw = core.frameworks.get(framework_id)
    if fw is None:
        return None
    spec = fw.spec
    return {
        **framework_row(core, fw, cluster_total(core)),
        "hostname": spec.hostname,
        "user": spec.user,
        "failover_timeout": spec.failover_timeout,
        "partition_aware": spec.partition_aware,
        "gpu_resources": spec.gpu_resources,
        "offer_constraints": [str(c) for c in spec.offer_constraints],
        "tolerations": [str(t) for t in spec.tolerations],
        "disconnected_at": fw.disconnected_at,
        "removed_at": fw.removed_at,
        "pending_updates": len(fw.pending),
        "offered": resources_json(_offered(core, framework_id)),
        "demands": [demands.demand_json(fw, d, core.priority) for d in fw.demands.values()],
        "explain": core.explain(framework_id, now),
        "events": events_about(events, framework_id, prefix=framework_id + "/"),
    }


def _offered(core: MasterCore, framework_id: str) -> Resources:
    total = Resources()
    for o in core.book.of_framework(framework_id):
        total = total + o.resources
    return total


def pending(core: MasterCore, query: Mapping[str, str], now: float) -> dict[str, Any]:
    """Every unmet demand (of ``framework_id`` only, if given), highest priority first, each
    with ``corral explain``'s why-pending: per reason the agents it applies to, a one-line
    summary, and for a waiting gang how many of its members fit. Explained a page at a time:
    each framework's explanation is a pass over the agents."""
    page = Page.of(query)
    only = query.get("framework_id", "")
    if only and only not in core.frameworks:
        raise KeyError(only)
    waiting: list[tuple[int, str, str, FrameworkRecord]] = []
    for fw in core.frameworks.values():
        if fw.state is FrameworkState.REMOVED or (only and fw.framework_id != only):
            continue
        for d in fw.demands.values():
            if demands.unmet(fw, d) > 0:
                value = core.priority.value(d.priority_class)
                waiting.append((-value, fw.framework_id, d.name, fw))
    waiting.sort(key=lambda w: w[:3])
    chosen = waiting[page.offset : page.offset + page.limit]
    explained: dict[str, dict[str, dict[str, Any]]] = {}
    rows = []
    for _, fid, name, fw in chosen:
        if fid not in explained:
            explained[fid] = {r["name"]: r for r in demands.explain(core, fw, now)}
        record = explained[fid].get(name)
        if record is None:
            continue
        rows.append(
            {
                **record,
                "framework_id": fid,
                "framework_name": fw.spec.name,
                "role": fw.spec.role,
                "framework_state": fw.state.value,
            }
        )
    return {
        **page.envelope(len(waiting), list(rows)),
        "unmet_tasks": sum(demands.unmet(w[3], w[3].demands[w[2]]) for w in waiting),
    }
