"""Mesos' v1 JSON shapes to and from Corral's wire contract (corral.v1): a Mesos call's body to
the Scheduler service's request messages, which the master then decodes exactly as it decodes
a gRPC call (master/wire/call_events.py); the Scheduler stream's events to Mesos events.

Field names, enum names and shapes follow include/mesos/v1/scheduler/scheduler.proto and
include/mesos/v1/mesos.proto as protobuf's JSON mapping writes them (the proto wins where the
HTTP API doc's examples differ): ids are ``{"value": ...}``, enums their names, ``bytes``
base64. What Corral cannot do is refused naming it: ``BadCall`` (HTTP 400) for the call's
shape, ``TaskInvalid`` (a TASK_ERROR update, as Mesos' own task validation answers) for a task.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from corral.v1 import common_pb2 as pb
from corral.v1 import scheduler_pb2 as spb

# The Mesos release whose v1 scheduler API this speaks (GET /version). pymesos reads it: from
# 1.0 on it expects no inverse offers mixed into OFFERS and asks for GPU_RESOURCES.
MESOS_VERSION = "1.11.0"

SCALARS = ("cpus", "mem", "disk", "gpus")


class BadCall(ValueError):
    """The call's body is not a call Corral can take: HTTP 400 with this reason."""


class TaskInvalid(ValueError):
    """One task of an ACCEPT cannot run on Corral: its TASK_ERROR's message."""


# --- small readers ----------------------------------------------------------------------------


def obj(data: Any, what: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise BadCall(f"{what} must be an object")
    return data


def field(data: Mapping[str, Any], key: str, what: str) -> dict[str, Any]:
    if key not in data:
        raise BadCall(f"{what}.{key} is missing")
    return obj(data[key], f"{what}.{key}")


def value_of(data: Mapping[str, Any], key: str, what: str, required: bool = True) -> str:
    """An id message's value (``{"value": "..."}``), "" when absent and not ``required``."""
    if key not in data:
        if required:
            raise BadCall(f"{what}.{key} is missing")
        return ""
    v = obj(data[key], f"{what}.{key}").get("value")
    if not isinstance(v, str) or (required and not v):
        raise BadCall(f"{what}.{key}.value must be a non-empty string")
    return v


def items(data: Mapping[str, Any], key: str, what: str) -> list[Any]:
    v = data.get(key, [])
    if not isinstance(v, list):
        raise BadCall(f"{what}.{key} must be a list")
    return v


def number(v: Any, what: str) -> float:
    if isinstance(v, str) and _INTEGER.fullmatch(v):
        v = int(v)  # a 64-bit integer as protobuf's JSON mapping writes it (a protobuf call)
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise BadCall(f"{what} must be a finite number")
    return float(v)


_INTEGER = re.compile(r"-?\d{1,20}")


def text(v: Any, what: str) -> str:
    if not isinstance(v, str):
        raise BadCall(f"{what} must be a string")
    return v


def decode_bytes(v: Any, what: str) -> bytes:
    if not isinstance(v, str):
        raise BadCall(f"{what} must be base64 text")
    try:
        return base64.b64decode(v, validate=True)
    except binascii.Error:
        raise BadCall(f"{what} is not base64") from None


def ident(v: str) -> dict[str, str]:
    return {"value": v}


# --- framework info ---------------------------------------------------------------------------

_CAPABILITIES = {
    "PARTITION_AWARE": pb.FRAMEWORK_CAPABILITY_PARTITION_AWARE,
    "GPU_RESOURCES": pb.FRAMEWORK_CAPABILITY_GPU_RESOURCES,
    "REVOCABLE_RESOURCES": pb.FRAMEWORK_CAPABILITY_REVOCABLE_RESOURCES,
}
# Capabilities that change nothing on Corral: what they ask for is how it works anyway
# (MULTI_ROLE with one role, TASK_KILLING_STATE: KILLING is always sent) or concerns what
# Corral does not offer (reservations, shared resources, regions, operation feedback).
_HARMLESS = frozenset(
    {
        "MULTI_ROLE",
        "TASK_KILLING_STATE",
        "RESERVATION_REFINEMENT",
        "SHARED_RESOURCES",
        "REGION_AWARE",
        "AGENT_OPERATION_FEEDBACK",
        "PARTITION_AWARE",
    }
)


def framework_info(data: Mapping[str, Any], principal: str) -> pb.FrameworkInfo:
    """Mesos' FrameworkInfo as Corral's. ``principal`` is the authenticated one: Mesos requires
    the info's ``principal`` to be it, and fills it in when left out."""
    what = "subscribe.framework_info"
    info = pb.FrameworkInfo(
        name=text(data.get("name", ""), f"{what}.name"),
        user=text(data.get("user", ""), f"{what}.user"),
        hostname=text(data.get("hostname", ""), f"{what}.hostname"),
    )
    info.id = value_of(data, "id", what, required=False)
    if "failover_timeout" in data:
        info.failover_timeout = number(data["failover_timeout"], f"{what}.failover_timeout")
    given = text(data.get("principal", ""), f"{what}.principal")
    info.principal = given or principal
    roles = [text(r, f"{what}.roles[]") for r in items(data, "roles", what)]
    role = text(data.get("role", ""), f"{what}.role")
    if roles and role:
        raise BadCall(f"{what}: give role or roles, not both")
    if len(roles) > 1:
        raise BadCall(
            f"{what}.roles names {len(roles)} roles; a Corral framework has one role "
            "(subscribe one framework per role)"
        )
    info.role = roles[0] if roles else role
    for n, cap in enumerate(items(data, "capabilities", what)):
        kind = text(obj(cap, f"{what}.capabilities[{n}]").get("type", ""), "capability type")
        if kind in _CAPABILITIES:
            info.capabilities.append(_CAPABILITIES[kind])
        elif kind not in _HARMLESS:
            raise BadCall(f"{what}.capabilities: {kind!r} is not supported by Corral")
    # checkpoint: Corral's agents always keep their tasks across a restart; webui_url, labels
    # and offer_filters are informational or Mesos allocator hints, read and not used.
    return info


# --- resources --------------------------------------------------------------------------------


def resources(entries: Iterable[Any], what: str) -> tuple[pb.Resources, bool]:
    """Mesos resources (a list of Resource) as Corral's; and whether any is revocable."""
    out = pb.Resources()
    revocable = False
    for n, raw in enumerate(entries):
        r = obj(raw, f"{what}[{n}]")
        name = r.get("name")
        kind = r.get("type", "SCALAR")
        if name in SCALARS:
            if kind != "SCALAR":
                raise TaskInvalid(f"resource {name} must be SCALAR, got {kind}")
            scalar = obj(r.get("scalar"), f"{what}[{n}].scalar")
            amount = number(scalar.get("value"), f"{what}[{n}].scalar.value")
            setattr(out, name, getattr(out, name) + amount)
        elif name == "ports":
            if kind != "RANGES":
                raise TaskInvalid(f"resource ports must be RANGES, got {kind}")
            ranges = obj(r.get("ranges"), f"{what}[{n}].ranges")
            for m, span in enumerate(items(ranges, "range", f"{what}[{n}].ranges")):
                span = obj(span, f"{what}[{n}].ranges.range[{m}]")
                begin = number(span.get("begin"), "range begin")
                end = number(span.get("end"), "range end")
                out.ports.add(begin=int(begin), end=int(end))
        else:
            raise TaskInvalid(
                f"resource {name!r}: Corral has cpus, mem, disk, gpus (SCALAR) and ports (RANGES)"
            )
        if "disk" in r or "shared" in r or r.get("reservations") or r.get("reservation"):
            raise TaskInvalid(
                f"resource {name}: persistent volumes, shared resources and reservations are "
                "not supported by Corral"
            )
        if "revocable" in r:
            revocable = True
    return out, revocable


def _scalar(name: str, amount: float, role: str, revocable: bool) -> dict[str, Any]:
    r: dict[str, Any] = {
        "name": name,
        "type": "SCALAR",
        # Mesos keeps scalars to three decimals (fixed point); so do offers here.
        "scalar": {"value": round(amount, 3)},
        "role": "*",
        "allocation_info": {"role": role},
    }
    if revocable:
        r["revocable"] = {}
    return r


def resources_json(r: pb.Resources, role: str, revocable: bool = False) -> list[dict[str, Any]]:
    out = [
        _scalar(name, getattr(r, name), role, revocable and name in ("cpus", "mem"))
        for name in SCALARS
        if getattr(r, name) > 0
    ]
    if r.ports:
        out.append(
            {
                "name": "ports",
                "type": "RANGES",
                "ranges": {"range": [{"begin": p.begin, "end": p.end} for p in r.ports]},
                "role": "*",
                "allocation_info": {"role": role},
            }
        )
    return out


_NUMBER = re.compile(r"-?\d+(\.\d+)?")
_RANGES = re.compile(r"\[\d+-\d+(,\s*\d+-\d+)*\]")


def attributes_json(attributes: Mapping[str, str]) -> list[dict[str, Any]]:
    """Corral's text attributes as Mesos types them when it parses ``--attributes``: a number
    is SCALAR, ``[a-b,c-d]`` is RANGES, anything else TEXT."""
    out: list[dict[str, Any]] = []
    for name, v in sorted(attributes.items()):
        if _NUMBER.fullmatch(v):
            out.append({"name": name, "type": "SCALAR", "scalar": {"value": float(v)}})
        elif _RANGES.fullmatch(v):
            spans = [s.strip().split("-") for s in v[1:-1].split(",")]
            out.append(
                {
                    "name": name,
                    "type": "RANGES",
                    "ranges": {"range": [{"begin": int(b), "end": int(e)} for b, e in spans]},
                }
            )
        else:
            out.append({"name": name, "type": "TEXT", "text": {"value": v}})
    return out


# --- tasks ------------------------------------------------------------------------------------

# TaskInfo fields Corral cannot honour: a task naming one is refused (TASK_ERROR), not run
# without it.
_UNSUPPORTED_TASK_FIELDS = {
    "health_check": "health checks are not run by Corral's agents",
    "check": "checks are not run by Corral's agents",
    "max_completion_time": "max_completion_time is not supported by Corral",
}


def task_info(raw: Any, n: int) -> pb.TaskInfo:
    """One TaskInfo of a LAUNCH; BadCall when it has no task_id (nothing to answer about),
    TaskInvalid when Corral cannot run it."""
    what = f"accept.operations.launch.task_infos[{n}]"
    t = obj(raw, what)
    task_id = value_of(t, "task_id", what)
    out = pb.TaskInfo(task_id=task_id)
    for key, why in _UNSUPPORTED_TASK_FIELDS.items():
        if key in t:
            raise TaskInvalid(f"{key}: {why}")
    try:
        out.name = text(t.get("name", ""), f"{what}.name")
        out.agent_id = value_of(t, "agent_id", what, required=False)
        res, revocable = resources(items(t, "resources", what), f"{what}.resources")
        out.resources.CopyFrom(res)
        out.revocable = revocable
        if ("command" in t) == ("executor" in t):
            raise TaskInvalid("a task needs a command or an executor, and not both (as on Mesos)")
        if "executor" in t:
            _executor(obj(t["executor"], f"{what}.executor"), out)
        else:
            _command(obj(t["command"], f"{what}.command"), out.command)
        if "data" in t:
            out.data = decode_bytes(t["data"], f"{what}.data")
        if "container" in t:
            container = obj(t["container"], f"{what}.container")
            if (
                container.get("type", "MESOS") != "MESOS"
                or "docker" in container
                or ("mesos" in container and "image" in obj(container["mesos"], "container.mesos"))
            ):
                raise TaskInvalid(
                    "container: Corral runs command tasks as processes; container images are "
                    "not supported through the Mesos API"
                )
        if "kill_policy" in t:
            policy = obj(t["kill_policy"], f"{what}.kill_policy")
            if "grace_period" in policy:
                nanos = obj(policy["grace_period"], "kill_policy.grace_period").get("nanoseconds")
                out.kill_grace_period_seconds = number(nanos, "grace_period.nanoseconds") / 1e9
        if "labels" in t:
            for m, label in enumerate(items(obj(t["labels"], "labels"), "labels", "labels")):
                label = obj(label, f"{what}.labels.labels[{m}]")
                out.labels[text(label.get("key"), "label key")] = text(
                    label.get("value", ""), "label value"
                )
        if "limits" in t:
            for name, scalar in obj(t["limits"], f"{what}.limits").items():
                if name not in ("cpus", "mem"):
                    raise TaskInvalid(f"limits: only cpus and mem may have limits, not {name!r}")
                amount = obj(scalar, f"limits.{name}").get("value")
                setattr(out.limits, name, number(amount, f"limits.{name}.value"))
    except BadCall as exc:
        raise TaskInvalid(str(exc)) from None
    return out


def _executor(x: Mapping[str, Any], out: pb.TaskInfo) -> None:
    """A custom executor (ExecutorInfo): its command becomes the task's, which the agent starts
    as Mesos starts an executor; its resources are the task's too (the process is the
    executor), as Mesos charges an executor's resources beside its task's; the ACCEPT takes
    them back out of a task whose executor runs already (``uncharge_executor``)."""
    what = "executor"
    out.executor.executor_id = value_of(x, "executor_id", what)
    out.executor.name = text(x.get("name", ""), f"{what}.name")
    if "data" in x:
        out.executor.data = decode_bytes(x["data"], f"{what}.data")
    for key in ("container", "discovery", "shutdown_grace_period"):
        if key in x:
            raise TaskInvalid(f"executor.{key} is not supported by Corral")
    if x.get("type", "CUSTOM") != "CUSTOM":
        raise TaskInvalid("executor.type: only CUSTOM executors (a command) are supported")
    if "command" not in x:
        raise TaskInvalid("executor.command is required")
    _command(obj(x["command"], f"{what}.command"), out.command)
    extra, _ = resources(items(x, "resources", what), f"{what}.resources")
    if extra.ports:
        raise TaskInvalid("executor.resources: ports go in the task's resources")
    for name in SCALARS:
        setattr(out.resources, name, getattr(out.resources, name) + getattr(extra, name))


def uncharge_executor(raw: Any, out: pb.TaskInfo) -> None:
    """Take the executor's own resources back out of ``out`` (a task ``task_info`` made from
    ``raw``): its executor already runs, or is started by an earlier task of the same ACCEPT,
    and is charged once, as Mesos charges an executor."""
    x = obj(obj(raw, "task")["executor"], "executor")
    extra, _ = resources(items(x, "resources", "executor"), "executor.resources")
    for name in SCALARS:
        setattr(out.resources, name, max(0.0, getattr(out.resources, name) - getattr(extra, name)))


def _command(c: Mapping[str, Any], out: pb.CommandInfo) -> None:
    if c.get("uris"):
        raise TaskInvalid("command.uris: Corral's agents do not fetch URIs")
    shell = c.get("shell", True)
    if not isinstance(shell, bool):
        raise BadCall("command.shell must be true or false")
    out.shell = shell
    out.value = text(c.get("value", ""), "command.value")
    args = [text(a, "command.arguments[]") for a in items(c, "arguments", "command")]
    if shell:
        if not out.value:
            raise TaskInvalid("command.value is empty")
    else:
        # Mesos: value is the executable, arguments its whole argv (argv[0] included).
        out.arguments.extend(args or [out.value])
    if "environment" in c:
        env = obj(c["environment"], "command.environment")
        for m, var in enumerate(items(env, "variables", "command.environment")):
            var = obj(var, f"command.environment.variables[{m}]")
            name = text(var.get("name"), "environment variable name")
            kind = var.get("type", "VALUE")
            if kind == "SECRET":
                secret = obj(var.get("secret"), "environment variable secret")
                if secret.get("type") != "VALUE" or "value" not in secret:
                    raise TaskInvalid("secrets by reference are not supported; give a VALUE")
                data = decode_bytes(obj(secret["value"], "secret.value").get("data"), "data")
                out.secret_environment[name] = data.decode("utf-8", "replace")
            else:
                out.environment[name] = text(var.get("value", ""), "environment variable value")


def offer_json(o: pb.Offer, role: str) -> dict[str, Any]:
    return {
        "id": ident(o.id),
        "framework_id": ident(o.framework_id),
        "agent_id": ident(o.agent_id),
        "hostname": o.hostname,
        "resources": resources_json(o.resources, role, o.revocable),
        "attributes": attributes_json(o.attributes),
        "allocation_info": {"role": role},
    }


# --- statuses ---------------------------------------------------------------------------------

# Corral's task reasons by Mesos' names (mesos.proto TaskStatus.Reason). Left out where Mesos
# sends none (a command that exited, a kill the framework or an operator asked for).
_REASONS = {
    pb.TASK_REASON_COMMAND_LAUNCH_FAILED: "REASON_CONTAINER_LAUNCH_FAILED",
    pb.TASK_REASON_AGENT_UNREACHABLE: "REASON_AGENT_REMOVED",
    pb.TASK_REASON_AGENT_REMOVED: "REASON_AGENT_REMOVED_BY_OPERATOR",
    pb.TASK_REASON_AGENT_RESTARTED: "REASON_AGENT_RESTARTED",
    pb.TASK_REASON_AGENT_SHUTDOWN: "REASON_EXECUTOR_TERMINATED",
    pb.TASK_REASON_RECONCILIATION: "REASON_RECONCILIATION",
    pb.TASK_REASON_FRAMEWORK_REMOVED: "REASON_FRAMEWORK_REMOVED",
    pb.TASK_REASON_INVALID: "REASON_TASK_INVALID",
    pb.TASK_REASON_PREEMPTED: "REASON_CONTAINER_PREEMPTED",
    pb.TASK_REASON_EVICTED: "REASON_CONTAINER_PREEMPTED",
    pb.TASK_REASON_KILLED_DURING_LAUNCH: "REASON_TASK_KILLED_DURING_LAUNCH",
    pb.TASK_REASON_AGENT_DRAINING: "REASON_AGENT_DRAINING",
    pb.TASK_REASON_MEMORY_LIMIT: "REASON_CONTAINER_LIMITATION_MEMORY",
    pb.TASK_REASON_REVOCABLE_RESOURCES_RECLAIMED: "REASON_CONTAINER_PREEMPTED",
    pb.TASK_REASON_EXECUTOR_TERMINATED: "REASON_EXECUTOR_TERMINATED",
}
_SOURCES = {
    pb.TASK_SOURCE_MASTER: "SOURCE_MASTER",
    pb.TASK_SOURCE_AGENT: "SOURCE_AGENT",
    pb.TASK_SOURCE_EXECUTOR: "SOURCE_EXECUTOR",
}


def task_state_name(state: int) -> str:
    """TASK_STATE_RUNNING -> TASK_RUNNING: Mesos has every state Corral has, by that name."""
    return "TASK_" + pb.TaskState.Name(state).removeprefix("TASK_STATE_")


def status_json(s: pb.TaskStatus) -> dict[str, Any]:
    reconciled = s.reason == pb.TASK_REASON_RECONCILIATION
    out: dict[str, Any] = {
        "task_id": ident(s.task_id),
        "state": task_state_name(s.state),
        # Mesos' master answers reconciliation itself: SOURCE_MASTER.
        "source": "SOURCE_MASTER" if reconciled else _SOURCES.get(s.source, "SOURCE_MASTER"),
        "timestamp": s.timestamp,
    }
    if s.agent_id:
        out["agent_id"] = ident(s.agent_id)
    reason = _REASONS.get(s.reason)
    if reason is not None:
        out["reason"] = reason
    if s.message:
        out["message"] = s.message
    if s.uuid:
        out["uuid"] = base64.b64encode(s.uuid).decode("ascii")
    if s.HasField("healthy"):
        out["healthy"] = s.healthy
    return out


def master_status(
    task_id: str, agent_id: str, state: str, reason: str, message: str, now: float
) -> dict[str, Any]:
    """An UPDATE the adapter makes itself (a launch the master refused), as Mesos' master
    sends for a task it drops: no uuid, nothing to acknowledge."""
    status: dict[str, Any] = {
        "task_id": ident(task_id),
        "state": state,
        "source": "SOURCE_MASTER",
        "reason": reason,
        "message": message,
        "timestamp": now,
    }
    if agent_id:
        status["agent_id"] = ident(agent_id)
    return {"type": "UPDATE", "update": {"status": status}}


# --- events -----------------------------------------------------------------------------------


def events_json(e: spb.Event, role: str, master_info: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A Corral Scheduler event as Mesos events: one OFFERS for a batch of offers, an UPDATE
    per status, a RESCIND per offer, a FAILURE per agent lost or executor ended."""
    kind = e.WhichOneof("event")
    if kind == "subscribed":
        return [
            {
                "type": "SUBSCRIBED",
                "subscribed": {
                    "framework_id": ident(e.subscribed.framework_id),
                    "heartbeat_interval_seconds": e.subscribed.heartbeat_interval_seconds,
                    "master_info": dict(master_info),
                },
            }
        ]
    if kind == "offers":
        return [
            {"type": "OFFERS", "offers": {"offers": [offer_json(o, role) for o in e.offers.offers]}}
        ]
    if kind == "rescind":
        return [{"type": "RESCIND", "rescind": {"offer_id": ident(i)}} for i in e.rescind.offer_ids]
    if kind == "update":
        return [{"type": "UPDATE", "update": {"status": status_json(s)}} for s in e.update.statuses]
    if kind == "heartbeat":
        return [{"type": "HEARTBEAT"}]
    if kind == "message":
        m = e.message
        body = {
            "agent_id": ident(m.agent_id),
            "executor_id": ident(m.executor_id),
            "data": base64.b64encode(m.data).decode("ascii"),
        }
        return [{"type": "MESSAGE", "message": body}]
    if kind == "agents_lost":  # Mesos' FAILURE with an agent id (pymesos' slaveLost)
        return [
            {"type": "FAILURE", "failure": {"agent_id": ident(a.agent_id)}}
            for a in e.agents_lost.agents
        ]
    if kind == "executor_terminated":  # FAILURE with an executor id (pymesos' executorLost)
        t = e.executor_terminated
        failure = {
            "agent_id": ident(t.agent_id),
            "executor_id": ident(t.executor_id),
            "status": t.status,
        }
        return [{"type": "FAILURE", "failure": failure}]
    if kind == "error":
        return [{"type": "ERROR", "error": {"message": e.error.message}}]
    return []


# --- calls ------------------------------------------------------------------------------------


def filters(data: Mapping[str, Any], what: str) -> spb.Filters:
    out = spb.Filters()
    if "filters" in data:
        f = obj(data["filters"], f"{what}.filters")
        if "refuse_seconds" in f:
            out.refuse_seconds = number(f["refuse_seconds"], f"{what}.filters.refuse_seconds")
    return out


def offer_ids(data: Mapping[str, Any], what: str) -> list[str]:
    out = []
    for n, raw in enumerate(items(data, "offer_ids", what)):
        v = obj(raw, f"{what}.offer_ids[{n}]").get("value")
        if not isinstance(v, str) or not v:
            raise BadCall(f"{what}.offer_ids[{n}].value must be a non-empty string")
        out.append(v)
    return out
