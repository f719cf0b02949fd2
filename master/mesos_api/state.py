"""``GET /master/state`` (and ``/master/state.json``, ``/state.json``) in Mesos' field names for
the parts tools read: frameworks (with their tasks), agents as ``slaves``, resources as Mesos
writes them in state (``{"cpus": 1.0, ..., "ports": "[31000-32000]"}``). Made from the
Operator API's ``State`` message (master/views.py), the one source of Corral's own state."""

from __future__ import annotations

from typing import Any

from corral.master.mesos_api import wire
from corral.v1 import common_pb2 as pb
from corral.v1 import operator_pb2 as op

_TERMINAL = frozenset(
    {
        pb.TASK_STATE_FINISHED,
        pb.TASK_STATE_FAILED,
        pb.TASK_STATE_KILLED,
        pb.TASK_STATE_ERROR,
        pb.TASK_STATE_LOST,
        pb.TASK_STATE_DROPPED,
        pb.TASK_STATE_GONE,
    }
)


def resources(r: pb.Resources) -> dict[str, Any]:
    out: dict[str, Any] = {"cpus": r.cpus, "mem": r.mem, "disk": r.disk, "gpus": r.gpus}
    if r.ports:
        out["ports"] = "[" + ", ".join(f"{p.begin}-{p.end}" for p in r.ports) + "]"
    return out


def task(t: op.TaskEntry) -> dict[str, Any]:
    info, status = t.info, t.status
    state = wire.task_state_name(status.state)
    return {
        "id": info.task_id,
        "name": info.name,
        "framework_id": info.framework_id,
        "executor_id": "",
        "slave_id": info.agent_id,
        "agent_id": info.agent_id,
        "state": state,
        "resources": resources(info.resources),
        "statuses": [{"state": state, "timestamp": status.timestamp}],
        "labels": [{"key": k, "value": v} for k, v in sorted(info.labels.items())],
    }


def framework(
    f: op.FrameworkState, tasks: list[dict[str, Any]], ended: list[dict[str, Any]]
) -> dict[str, Any]:
    info = f.info
    capabilities = [
        pb.FrameworkCapability.Name(c).removeprefix("FRAMEWORK_CAPABILITY_")
        for c in info.capabilities
    ]
    return {
        "id": info.id,
        "name": info.name,
        "user": info.user,
        "hostname": info.hostname,
        "principal": info.principal,
        "role": info.role,
        "roles": [info.role],
        "active": f.state == "subscribed" and not f.suppressed,
        "connected": f.connected,
        "recovered": False,
        "failover_timeout": info.failover_timeout,
        "capabilities": capabilities,
        "registered_time": f.registered_at,
        "resources": resources(f.used),
        "used_resources": resources(f.used),
        "offered_resources": resources(f.offered),
        "tasks": tasks,
        "completed_tasks": ended,
        "offers": [],
        "executors": [],
    }


def agent(a: op.AgentState) -> dict[str, Any]:
    info = a.info
    return {
        "id": info.id,
        "hostname": info.hostname,
        "pid": f"slave(1)@{info.hostname}",
        "registered_time": a.registered_at,
        "active": a.active,
        "resources": resources(info.resources),
        "used_resources": resources(a.used),
        "offered_resources": resources(a.offered),
        "reserved_resources": {role: resources(r) for role, r in info.reservations.items()},
        "attributes": dict(info.attributes),
        "version": wire.MESOS_VERSION,
    }


def state(s: op.State, hostname: str, address: str) -> dict[str, Any]:
    by_framework: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
    for t in s.tasks:
        live, ended = by_framework.setdefault(t.info.framework_id, ([], []))
        (ended if t.status.state in _TERMINAL else live).append(task(t))
    frameworks: list[dict[str, Any]] = []
    completed: list[dict[str, Any]] = []
    for f in s.frameworks:
        live, ended = by_framework.get(f.info.id, ([], []))
        entry = framework(f, live, ended)
        (completed if f.state == "removed" else frameworks).append(entry)
    pid = f"master@{address}"
    return {
        "version": wire.MESOS_VERSION,
        "id": s.master_id,
        "pid": pid,
        "leader": pid,
        "hostname": hostname,
        "activated_slaves": sum(1 for a in s.agents if a.active),
        "deactivated_slaves": sum(1 for a in s.agents if not a.active),
        "frameworks": frameworks,
        "completed_frameworks": completed,
        "unregistered_frameworks": [],
        "slaves": [agent(a) for a in s.agents],
    }
