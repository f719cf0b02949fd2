"""The cluster's state as JSON, made from the Operator API's ``State`` message: the one shape of
``/api/v1/state`` and of `corral get ... -o json` (issue #32: ids and port ranges differed).

The master's HTTP state is this function of its own ``GetState`` message, and the CLI applies
it to the message it received, so an object has the same shape in both by construction. It
imports only the wire contract and the kernel (``corral.master.wire.convert`` for placement rules'
text): the CLI uses it on a base install.

Shapes (docs/operations.md, "HTTP endpoints"): resources are ``{"cpus", "mem", "disk",
"gpus"}`` plus ``"ports": [[begin, end], ...]`` when there are any; taints, tolerations and
constraints are their command-line text (``spot=true:NoSchedule``, ``zone in (a,b)``).
"""

from __future__ import annotations

from typing import Any

from google.protobuf.json_format import MessageToDict

from corral.master.wire import convert
from corral.v1 import common_pb2 as pb
from corral.v1 import operator_pb2 as op

_C, _OC = "constraint", "offer constraint"  # as convert names them in errors


def resources(r: pb.Resources) -> dict[str, Any]:
    out: dict[str, Any] = {"cpus": r.cpus, "mem": r.mem, "disk": r.disk, "gpus": r.gpus}
    if r.ports:
        out["ports"] = [[p.begin, p.end] for p in r.ports]
    return out


def task_state_name(value: int) -> str:
    return pb.TaskState.Name(value).removeprefix("TASK_STATE_")


def task_reason_name(value: int) -> str:
    return pb.TaskReason.Name(value).removeprefix("TASK_REASON_")


def maintenance(m: op.Maintenance | None) -> dict[str, Any] | None:
    if m is None or not m.mode:
        return None
    return {
        "mode": m.mode,
        "since": m.since,
        "requested_by": m.requested_by,
        "grace_seconds": m.grace_seconds if m.HasField("grace_seconds") else None,
        "drained": m.drained,
    }


def agent(a: op.AgentState) -> dict[str, Any]:
    info = a.info
    return {
        "id": info.id,
        "name": info.name,
        "hostname": info.hostname,
        "principal": info.principal,
        "state": a.state,
        "maintenance": maintenance(a.maintenance if a.HasField("maintenance") else None),
        "connected": a.connected,
        "resources": resources(info.resources),
        "used": resources(a.used),
        "offered": resources(a.offered),
        "attributes": dict(sorted(info.attributes.items())),
        "taints": [str(t) for t in convert.taints_from_pb(info.taints, "agent")],
        "reservations": {role: resources(r) for role, r in sorted(info.reservations.items())},
        "tasks": a.tasks,
        "registered_at": a.registered_at,
        "last_seen": a.last_seen,
        "heartbeat_interval": a.heartbeat_interval,
        # Measured by the agent (issue #36): its tasks' use, memory pressure, revocable estimate.
        "usage": MessageToDict(a.usage, preserving_proto_field_name=True)
        if a.HasField("usage")
        else None,
        "revocable_used": resources(a.revocable_used),
    }


class Classes:
    """The state's priority classes: a demand's class name and value as the master resolves
    them (an empty or unknown name is the global default)."""

    def __init__(self, classes: Any) -> None:
        self.values = {c.name: c.value for c in classes}
        self.default = next((c.name for c in classes if c.global_default), "")

    def name(self, name: str) -> str:
        return name or self.default

    def value(self, name: str) -> int:
        return int(self.values.get(name, self.values.get(self.default, 0)))


def classes_of(s: op.State | op.FrameworkList) -> Classes:
    return Classes(s.priority_classes)


def demand(d: op.DemandState, classes: Classes) -> dict[str, Any]:
    spec = d.demand
    where = f"demand {spec.name[:64]}"
    spread = convert.spread_from_pb(spec.spread, where) if spec.HasField("spread") else None
    return {
        "name": spec.name,
        "resources": {n: getattr(spec.resources, n) for n in ("cpus", "mem", "disk", "gpus")},
        "count": spec.count,
        "priority_class": classes.name(spec.priority_class),
        "priority": classes.value(spec.priority_class),
        "min_member": spec.min_member,
        "constraints": [
            str(c) for c in convert.constraints_from_pb(spec.constraints, where, "constraint")
        ],
        "tolerations": [str(t) for t in convert.tolerations_from_pb(spec.tolerations, where)],
        "spread": None if spread is None else str(spread),
        "tasks": d.tasks,
        "unmet": d.unmet,
    }


def framework(f: op.FrameworkState, classes: Classes) -> dict[str, Any]:
    info = f.info
    where = f"framework {info.id}"
    removed = f.state == "removed"
    return {
        "id": info.id,
        "name": info.name,
        "role": info.role,
        "principal": info.principal,
        "state": f.state,
        "offer_constraints": [
            str(c)
            for c in convert.constraints_from_pb(info.offer_constraints, where, "offer constraint")
        ],
        "tolerations": [str(t) for t in convert.tolerations_from_pb(info.tolerations, where)],
        "suppressed": f.suppressed,
        "tasks": f.tasks,
        "offers": f.offers,
        "pending_updates": f.pending_updates,
        "used": resources(f.used),
        "registered_at": f.registered_at,
        "priority": None if removed else f.priority,  # a removed framework is in no level
        # What `corral get frameworks` shows as PRIORITY: its demands' highest class value, met
        # or not (master/core/demands.py, rule 2), where ``priority`` is its level in the DRF
        # order now, the default's once it wants nothing.
        "class_priority": None if removed else class_priority(f, classes),
        "wants_nothing": f.wants_nothing,
        "demands": [demand(d, classes) for d in f.demands],
    }


def class_priority(f: op.FrameworkState, classes: Classes) -> int:
    """The highest class value among the framework's demands; with none, the default's."""
    return highest_class([classes.value(d.demand.priority_class) for d in f.demands], classes)


def highest_class(values: list[int], classes: Classes) -> int:
    """``class_priority`` of demands of these class values."""
    return max(values) if values else classes.value("")


def task(t: op.TaskEntry) -> dict[str, Any]:
    info, s = t.info, t.status
    return {
        "id": info.task_id,
        "name": info.name,
        "framework_id": info.framework_id,
        "agent_id": info.agent_id,
        "state": task_state_name(s.state),
        "reason": task_reason_name(s.reason),
        "message": s.message,
        "exit_code": s.exit_code if s.HasField("exit_code") else None,
        "healthy": s.healthy if s.HasField("healthy") else None,
        "resources": resources(info.resources),
        "priority_class": info.priority_class,
        "demand": info.demand,
        "launched_at": t.launched_at,
        "updated_at": s.timestamp,
        "limits": resources(info.limits) if info.HasField("limits") else None,
        "qos_class": t.qos_class,
        "revocable": info.revocable,
        "usage": {"cpus": t.usage.cpus, "mem": t.usage.mem} if t.HasField("usage") else None,
        "image": info.container.docker.image if info.HasField("container") else None,
        "container_id": s.container_status.container_id or None,
    }


def offer(o: pb.Offer) -> dict[str, Any]:
    return {
        "id": o.id,
        "framework_id": o.framework_id,
        "agent_id": o.agent_id,
        "hostname": o.hostname,
        "resources": resources(o.resources),
        "gang_id": o.gang_id,
    }


def role(r: op.RoleState) -> dict[str, Any]:
    names = ("cpus", "mem", "disk", "gpus")
    return {
        "role": r.role,
        "weight": r.weight,
        "quota": {
            "guarantee": {
                n: getattr(r.quota.guarantee, n) for n in names if getattr(r.quota.guarantee, n)
            },
            "limit": {n: getattr(r.quota.limit, n) for n in names if r.quota.limit.HasField(n)},
        },
        "allocated": resources(r.allocated),
        "offered": resources(r.offered),
        "share": r.share,
        "frameworks": list(r.framework_ids),
    }


def priority_class(c: pb.PriorityClass) -> dict[str, Any]:
    return {
        "name": c.name,
        "value": c.value,
        "preemption_policy": c.preemption_policy,
        "description": c.description,
        "global_default": c.global_default,
    }


def state(s: op.State) -> dict[str, Any]:
    """The whole state (each list as the message holds it)."""
    classes = Classes(s.priority_classes)
    return {
        "master_id": s.master_id,
        "agents": [agent(a) for a in s.agents],
        "frameworks": [framework(f, classes) for f in s.frameworks],
        "tasks": [task(t) for t in s.tasks],
        "offers": [offer(o) for o in s.offers],
        "roles": [role(r) for r in s.roles],
        "priority_classes": [priority_class(c) for c in s.priority_classes],
        # The ACLs the master decides with (docs/security.md): their source, version, digest.
        "acls": {
            "source": s.acls.source,
            "version": s.acls.version,
            "digest": s.acls.digest,
            "rules": list(s.acls.rules),
        },
    }
