"""Read-only views of the core's state: protobuf for the Operator API, JSON for HTTP.

Run only through ``MasterRuntime.query`` so they see the core between two events.
"""

from __future__ import annotations

import html
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

from corral.master.core import demands, revocable
from corral.master.core.maintenance import drained
from corral.master.core.master import MasterCore
from corral.master.core.records import AgentRecord, FrameworkRecord, OfferRecord, TaskRecord
from corral.master.core.roles import RoleView
from corral.master.core.states import AgentState, FrameworkState
from corral.master.core.types import Maintenance
from corral.master.http import state_json as wire_json
from corral.master.wire import convert
from corral.master.wire import usage as usage_wire
from corral.master.wire.convert_container import container_to_pb
from corral.master.wire.encoded import delimited
from corral.resources import Resources
from corral.v1 import operator_pb2

_NOTHING = Resources()  # made once: each Resources() checks its fields (~12 % of a first view)


def _offered(offers: Iterable[OfferRecord]) -> Resources:
    total = _NOTHING
    for offer in offers:
        total = total + offer.resources
    return total


def _all_tasks(
    core: MasterCore, framework_id: str | None = None, completed: bool = True
) -> list[TaskRecord]:
    """Live tasks, then ended ones (``completed``); of one framework with ``framework_id``."""
    if framework_id is not None:
        fw = core.frameworks.get(framework_id)
        live = list(fw.tasks.values()) if fw is not None else []
        return live + list(core.completed.of_framework(framework_id)) if completed else live
    live = [t for fw in core.frameworks.values() for t in fw.tasks.values()]
    return live + list(core.completed.values()) if completed else live


def role_to_pb(v: RoleView, out: operator_pb2.RoleState) -> None:
    out.role, out.weight, out.share = v.role, v.weight, v.share
    convert.quota_to_pb(v.quota, out.quota)
    convert.resources_to_pb(v.allocated, out.allocated)
    convert.resources_to_pb(v.offered, out.offered)
    out.framework_ids.extend(v.framework_ids)


def roles_pb(core: MasterCore) -> operator_pb2.Roles:
    roles = operator_pb2.Roles()
    for v in core.role_views():
        role_to_pb(v, roles.roles.add())
    return roles


def roles_json(core: MasterCore) -> dict[str, Any]:
    return {"roles": [wire_json.role(r) for r in roles_pb(core).roles]}


def priority_classes_json(core: MasterCore) -> list[dict[str, Any]]:
    """Highest value first (the order offers follow)."""
    return [wire_json.priority_class(c) for c in priority_classes_pb(core).priority_classes]


def priority_classes_pb(core: MasterCore) -> operator_pb2.PriorityClasses:
    out = operator_pb2.PriorityClasses()
    for c in core.priority.sorted():
        convert.priority_class_to_pb(c, out.priority_classes.add())
    return out


def maintenance_to_pb(m: Maintenance, drained: bool, out: operator_pb2.Maintenance) -> None:
    out.mode, out.since, out.requested_by, out.drained = m.mode, m.since, m.requested_by, drained
    if m.grace_seconds is not None:
        out.grace_seconds = m.grace_seconds


def state_json(
    core: MasterCore,
    framework_id: str | None = None,
    completed: bool = True,
    tasks: bool = True,
) -> dict[str, Any]:
    """``/api/v1/state``: ``state_pb`` as JSON (master/http/state_json.py, the shape `corral get -o
    json` prints too), with a summary that always counts everything.

    The whole view (no ``framework_id``) is made of kept fragments (``_Fragments``): each
    agent's, task's and demand's JSON is made again only when what it is made from changed.
    The answer shares them with later answers: read it, never change it."""
    if framework_id is not None:
        out = wire_json.state(state_pb(core, framework_id, completed, tasks))
    else:
        # Everything but the agents, frameworks and tasks as the message has them; those three
        # from the kept fragments, equal to what the message would give.
        pb = state_pb(core, completed=completed, tasks=False, parts=False)
        out = wire_json.state(pb)
        kept = _fragments(core)
        classes = wire_json.classes_of(pb)
        out["agents"] = kept.agents_json(core)
        out["frameworks"] = kept.frameworks_json(core, completed, classes)
        out["tasks"] = kept.tasks_json(_all_tasks(core, None, completed)) if tasks else []
    out["summary"] = {
        "agents_active": sum(1 for a in core.agents.values() if a.state is AgentState.ACTIVE),
        "frameworks_subscribed": sum(
            1 for f in core.frameworks.values() if f.state is FrameworkState.SUBSCRIBED
        ),
        "tasks_active": sum(len(f.tasks) for f in core.frameworks.values()),
        "offers_outstanding": len(core.offers),
    }
    return out


class _Fragments:
    """The whole state view's JSON fragments, each kept with what it was made from (its key):
    an agent's by its record, spec, state, connection, times, ``tasks_version`` (its tasks, so
    its use, task count and drained), maintenance, usage and what its revocable tasks and its
    offers hold; a task's by its record, spec, status, usage and launch time (all replaced,
    never changed in place); a demand's by the demand, its task count, what is unmet and the
    priority classes. A fragment whose key is unchanged is the one made before; every view
    keeps only the fragments it showed. At 10,000 agents and 20,000 tasks the view was ~700 ms
    of protobuf and JSON per call (docs/performance.md, "The state view's kept fragments")."""

    def __init__(self) -> None:
        self.agents: _Kept[str, dict[str, Any]] = _Kept()
        self.tasks: _Kept[int, dict[str, Any]] = _Kept()
        self.demands: dict[tuple[str, str], tuple[tuple[object, ...], dict[str, Any]]] = {}
        # GetState's whole answer (``state_wire``): each agent's and task's serialized part of
        # the State message, field key and length included, kept by the same keys.
        self.agents_pb: _Kept[str, bytes] = _Kept()
        self.tasks_pb: _Kept[int, bytes] = _Kept()

    def agents_json(self, core: MasterCore) -> list[dict[str, Any]]:
        return self.agents.refresh(_agents(core), lambda a: wire_json.agent(_agent_entry(core, a)))

    def tasks_json(self, records: list[TaskRecord]) -> list[dict[str, Any]]:
        return self.tasks.refresh(_tasks(records), lambda t: wire_json.task(_task_entry(t)))

    def agents_wire(self, core: MasterCore) -> list[bytes]:
        return self.agents_pb.refresh(
            _agents(core),
            lambda a: delimited(_STATE_AGENTS, _agent_entry(core, a).SerializeToString()),
        )

    def tasks_wire(self, records: list[TaskRecord]) -> list[bytes]:
        return self.tasks_pb.refresh(
            _tasks(records),
            lambda t: delimited(_STATE_TASKS, _task_entry(t).SerializeToString()),
        )

    def frameworks_json(
        self, core: MasterCore, completed: bool, classes: wire_json.Classes
    ) -> list[dict[str, Any]]:
        old = self.demands
        new: dict[tuple[str, str], tuple[tuple[object, ...], dict[str, Any]]] = {}
        table = (tuple(sorted(classes.values.items())), classes.default)
        out: list[dict[str, Any]] = []
        for f in core.frameworks.values():
            if not completed and f.state is FrameworkState.REMOVED:
                continue
            fentry = operator_pb2.FrameworkState()
            framework_to_pb(core, f, fentry, with_demands=False)
            fjson = wire_json.framework(fentry, classes)
            shown: list[dict[str, Any]] = []
            for d in f.demands.values():
                tasks, unmet = f.demand_tasks.get(d.name, 0), demands.unmet(f, d)
                key = (d, tasks, unmet, table)
                dkey = (f.framework_id, d.name)
                kept = old.get(dkey)
                if kept is None or kept[0] != key:
                    dentry = operator_pb2.DemandState(tasks=tasks, unmet=unmet)
                    convert.demand_to_pb(d, dentry.demand)
                    kept = (key, wire_json.demand(dentry, classes))
                new[dkey] = kept
                shown.append(kept[1])
            fjson["demands"] = shown
            if fjson["class_priority"] is not None:
                fjson["class_priority"] = wire_json.highest_class(
                    [d["priority"] for d in shown], classes
                )
            out.append(fjson)
        self.demands = new
        return out


_FRAGMENTS: weakref.WeakKeyDictionary[MasterCore, _Fragments] = weakref.WeakKeyDictionary()
_Id = TypeVar("_Id")
_Part = TypeVar("_Part")
_Source = TypeVar("_Source")
_STATE_AGENTS = b"\x12"  # State.agents = 2, length-delimited
_STATE_TASKS = b"\x22"  # State.tasks = 4, length-delimited


def _fragments(core: MasterCore) -> _Fragments:
    kept = _FRAGMENTS.get(core)
    if kept is None:
        kept = _FRAGMENTS[core] = _Fragments()
    return kept


class _Kept(Generic[_Id, _Part]):
    """Parts kept by what each was made from (its key): a part whose key is unchanged is the
    one made before, and a refresh keeps only the parts it returned."""

    def __init__(self) -> None:
        self.parts: dict[_Id, tuple[tuple[object, ...], _Part]] = {}

    def refresh(
        self,
        sources: Iterable[tuple[_Id, tuple[object, ...], _Source]],
        make: Callable[[_Source], _Part],
    ) -> list[_Part]:
        """Each source's part (``(id, key, source)``, in their order), made again only where
        its key changed."""
        old = self.parts
        new: dict[_Id, tuple[tuple[object, ...], _Part]] = {}
        out: list[_Part] = []
        for ident, key, source in sources:
            kept = old.get(ident)
            if kept is None or kept[0] != key:
                kept = (key, make(source))
            new[ident] = kept
            out.append(kept[1])
        self.parts = new
        return out


def _agents(core: MasterCore) -> Iterator[tuple[str, tuple[object, ...], AgentRecord]]:
    """Every agent with what its part is made from: the same key, the same part."""
    offered_on = core.book.agents_offered()
    for aid, a in core.agents.items():
        key = (
            a,
            a.spec,
            a.state,
            a.connection is None,
            a.registered_at,
            a.last_seen,
            a.heartbeat_interval,
            a.tasks_version,
            a.maintenance,
            a.usage,
            None if a.usage is None else revocable.held(a),
            _offered(core.book.of_agent(aid)) if aid in offered_on else None,
        )
        yield aid, key, a


def _tasks(records: list[TaskRecord]) -> Iterator[tuple[int, tuple[object, ...], TaskRecord]]:
    """Each task with what its part is made from (all replaced, never changed in place). The
    record is in its key: its id names no other record while it is kept."""
    for t in records:
        yield id(t), (t, t.spec, t.status, t.usage, t.launched_at), t


def _agent_entry(core: MasterCore, a: AgentRecord) -> operator_pb2.AgentState:
    entry = operator_pb2.AgentState()
    agent_to_pb(core, a, entry)
    return entry


def _task_entry(t: TaskRecord) -> operator_pb2.TaskEntry:
    entry = operator_pb2.TaskEntry()
    task_to_pb(t, entry)
    return entry


def state_wire(core: MasterCore) -> bytes:
    """GetState's whole answer, serialized: ``state_pb(core)``'s message (a parse of it equals
    that message), its agents' and tasks' parts kept between calls as ``state_json``'s are. At
    50,000 agents the message took the core ~1 s to make again at every call (~20 µs an
    agent); a repeated field may come in as many pieces as it likes, so the kept parts are
    joined after the rest (docs/performance.md, "The whole state streamed")."""
    head = state_pb(core, tasks=False, parts=False)
    for f in core.frameworks.values():
        framework_to_pb(core, f, head.frameworks.add())
    kept = _fragments(core)
    return b"".join(
        [
            head.SerializeToString(),
            *kept.agents_wire(core),
            *kept.tasks_wire(_all_tasks(core, None, True)),
        ]
    )


def agent_to_pb(core: MasterCore, a: AgentRecord, entry: operator_pb2.AgentState) -> None:
    """One agent as GetState and ListAgents carry it."""
    entry.active = a.state is AgentState.ACTIVE
    entry.registered_at = a.registered_at
    entry.state = a.state.value
    entry.connected = a.connection is not None
    entry.tasks = len(a.tasks)
    entry.last_seen = a.last_seen
    entry.heartbeat_interval = a.heartbeat_interval
    convert.agent_spec_to_pb(a.spec, entry.info)
    convert.resources_to_pb(a.used, entry.used)
    convert.resources_to_pb(_offered(core.book.of_agent(a.agent_id)), entry.offered)
    if a.maintenance is not None:
        maintenance_to_pb(a.maintenance, drained(a), entry.maintenance)
    if a.usage is not None:
        usage_wire.agent_usage_to_pb(a.usage, entry.usage)
        entry.revocable_used.cpus, entry.revocable_used.mem = revocable.held(a)


def framework_to_pb(
    core: MasterCore,
    f: FrameworkRecord,
    fentry: operator_pb2.FrameworkState,
    with_demands: bool = True,
) -> None:
    """One framework as GetState and ListFrameworks carry it (without its demands: the rest)."""
    fentry.connected = f.connection is not None
    fentry.suppressed = f.suppressed
    fentry.state = f.state.value
    fentry.tasks = len(f.tasks)
    fentry.offers = core.book.count_of(f.framework_id)
    fentry.pending_updates = len(f.pending)
    fentry.registered_at = f.registered_at
    fentry.wants_nothing = demands.wants_nothing(f)
    # Its whole FrameworkInfo, offer constraints and tolerations included.
    convert.framework_spec_to_pb(f.spec, fentry.info).id = f.framework_id
    convert.resources_to_pb(f.used, fentry.used)
    convert.resources_to_pb(_offered(core.book.of_framework(f.framework_id)), fentry.offered)
    if f.state is not FrameworkState.REMOVED:
        fentry.priority = demands.priority(f, core.priority)
    for d in f.demands.values() if with_demands else ():
        dentry = fentry.demands.add(tasks=f.demand_tasks.get(d.name, 0), unmet=demands.unmet(f, d))
        convert.demand_to_pb(d, dentry.demand)


def task_to_pb(t: TaskRecord, tentry: operator_pb2.TaskEntry) -> None:
    """One task as GetState and ListTasks carry it."""
    tentry.launched_at = t.launched_at
    ti = tentry.info
    ti.task_id, ti.name, ti.agent_id, ti.framework_id = (
        t.task_id,
        t.spec.name,
        t.agent_id,
        t.framework_id,
    )
    ti.priority_class = t.spec.priority_class
    ti.demand = t.spec.demand
    convert.resources_to_pb(t.spec.revocable or t.spec.resources, ti.resources)
    if t.spec.cpus_limit or t.spec.mem_limit:
        ti.limits.cpus, ti.limits.mem = t.spec.cpus_limit, t.spec.mem_limit
    ti.revocable = t.spec.revocable is not None
    ti.priority = t.spec.priority
    if t.spec.container is not None:
        container_to_pb(t.spec.container, ti.container)
    tentry.qos_class = t.spec.qos.value
    if t.usage is not None:
        tentry.usage.task_id, tentry.usage.framework_id = t.task_id, t.framework_id
        tentry.usage.cpus, tentry.usage.mem = t.usage.cpus, t.usage.mem
    convert.status_to_pb(t.status, tentry.status)
    tentry.status.uuid = b""


def state_pb(
    core: MasterCore,
    framework_id: str | None = None,
    completed: bool = True,
    tasks: bool = True,
    parts: bool = True,
) -> operator_pb2.State:
    """The whole state, or less: with ``framework_id`` only that framework, its tasks and its
    offers; without ``completed`` no ended tasks and no removed frameworks; without ``tasks``
    no task list at all (the page shows none); without ``parts`` no agents and no frameworks
    either (state_json makes those from kept fragments)."""
    state = operator_pb2.State(master_id=core.master_id)
    for a in core.agents.values() if parts else ():
        agent_to_pb(core, a, state.agents.add())
    for f in core.frameworks.values() if parts else ():
        if framework_id is not None and f.framework_id != framework_id:
            continue
        if not completed and f.state is FrameworkState.REMOVED:
            continue
        framework_to_pb(core, f, state.frameworks.add())
    for t in _all_tasks(core, framework_id, completed) if tasks else ():
        task_to_pb(t, state.tasks.add())
    for o in core.all_offers.values():
        if framework_id is None or o.framework_id == framework_id:
            convert.offer_to_pb(o, state.offers.add())
    for v in core.role_views():
        role_to_pb(v, state.roles.add())
    for c in core.priority.sorted():
        convert.priority_class_to_pb(c, state.priority_classes.add())
    acl = core.acl.describe()
    state.acls.source, state.acls.version, state.acls.digest = (
        acl["source"],
        acl["version"],
        acl["digest"],
    )
    state.acls.rules.extend(acl["rules"])
    return state


def attributes_text(attributes: dict[str, str]) -> str:
    """``zone=a, rack=r1``, sorted by name, as an operator writes them."""
    return ", ".join(f"{k}={v}" for k, v in sorted(attributes.items()))


def _shown_state(agent: dict[str, Any]) -> str:
    """``active``, or with its maintenance: ``active, cordoned``."""
    m = agent.get("maintenance")
    return agent["state"] if not m else f"{agent['state']}, {m['mode']}"


def index_html(state: dict[str, Any]) -> str:
    """A plain page for people: the summary, agents and frameworks, links to the JSON."""
    esc = html.escape
    summary = state["summary"]
    agents = "".join(
        f"<tr><td>{esc(a['id'])}</td><td>{esc(a['hostname'])}</td><td>{esc(_shown_state(a))}</td>"
        f"<td>{a['tasks']}</td><td>{esc(attributes_text(a['attributes']))}</td></tr>"
        for a in state["agents"]
    )
    frameworks = "".join(
        f"<tr><td>{esc(f['id'])}</td><td>{esc(f['name'])}</td><td>{esc(f['role'])}</td>"
        f"<td>{esc(f['state'])}</td><td>{f['tasks']}</td></tr>"
        for f in state["frameworks"]
    )
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>Corral master {esc(state["master_id"])}</title></head>
<body><h1>Corral master {esc(state["master_id"])}</h1>
<p>{summary["agents_active"]} active agents, {summary["frameworks_subscribed"]} subscribed
frameworks, {summary["tasks_active"]} active tasks, {summary["offers_outstanding"]} outstanding
offers.</p>
<p>ACLs: {esc(state["acls"]["source"])}, version {esc(str(state["acls"]["version"]))}.</p>
<p><a href="/api/v1/state">state (JSON)</a> · <a href="/api/v1/events">recent events</a> ·
<a href="/metrics">metrics</a> · <a href="/health">health</a></p>
<h2>Agents</h2><table border="1"><tr><th>id</th><th>hostname</th><th>state</th><th>tasks</th>
<th>attributes</th></tr>{agents}</table>
<h2>Frameworks</h2><table border="1"><tr><th>id</th><th>name</th><th>role</th><th>state</th>
<th>tasks</th></tr>{frameworks}</table>
</body></html>
"""
