"""Wire messages ↔ core values. Decoding validates and raises ``WireError`` naming the field.

The checks every decoder shares are in convert_checks.py, placement and policy (taints,
tolerations, constraints, spread, demands, priority classes, quotas) in convert_placement.py;
both are re-exported here, so callers import one module."""

from __future__ import annotations

import math
from collections.abc import Callable

from corral import limits
from corral.master.core.records import OfferRecord
from corral.master.core.types import (
    AgentSpec,
    FrameworkOwner,
    FrameworkSpec,
    ReportedTask,
    Status,
    TaskReason,
    TaskSource,
    TaskSpec,
    TaskState,
)
from corral.master.wire.convert_checks import (
    WireError,
    _mapping,
    count,
    ident,
    idents,
    name,
    resources_from_pb,
    resources_to_pb,
    scalars_to_pb,
    task_resources_from_pb,
    task_what,
    text,
    uuid,
)
from corral.master.wire.convert_container import container_from_pb
from corral.master.wire.convert_placement import (
    _EFFECT_TO_PB,
    _OP_TO_PB,
    constraints_from_pb,
    demand_from_pb,
    demand_to_pb,
    priority_class_from_pb,
    priority_class_to_pb,
    quota_from_pb,
    quota_to_pb,
    spread_from_pb,
    taint_to_pb,
    taints_from_pb,
    tolerations_from_pb,
)
from corral.pbmaps import as_dict
from corral.qos import limits_problem
from corral.resources import Resources
from corral.v1 import agent_pb2, scheduler_pb2
from corral.v1 import common_pb2 as pb


def agent_spec_from_pb(info: pb.AgentInfo) -> AgentSpec:
    if not info.hostname:
        raise WireError("agent info: hostname is empty")
    name(info.hostname, "agent info: hostname")
    ident(info.id, "agent info: id")
    resources = resources_from_pb(info.resources, "agent resources")
    count(info.reservations, "agent info: reservations", limits.MAX_ROLES)
    reservations = {
        name(role, "agent info: a reservation's role"): resources_from_pb(
            r, f"reservation for role {limits.echo(role)}"
        )
        for role, r in info.reservations.items()
    }
    return AgentSpec(
        agent_id=info.id,
        hostname=info.hostname,
        resources=resources,
        attributes=_mapping(as_dict(info.attributes), "agent attributes", limits.MAX_ATTRIBUTES),
        taints=taints_from_pb(info.taints, "agent info"),
        reservations=reservations,
        name=name(info.name, "agent info: name") if info.name else "",
        # Read back from the registry; on a REGISTER the core sets it from the certificate.
        principal=info.principal,
    )


def framework_spec_from_pb(info: pb.FrameworkInfo) -> FrameworkSpec:
    if not info.name:
        raise WireError("framework info: name is empty")
    ident(info.id, "framework info: id")
    for field_name in ("name", "role", "principal", "hostname", "user"):
        name(getattr(info, field_name), f"framework info: {field_name}")
    tolerations = tolerations_from_pb(info.tolerations, "framework info")
    constraints = constraints_from_pb(info.offer_constraints, "framework info", "offer constraint")
    if not math.isfinite(info.failover_timeout) or info.failover_timeout < 0:
        raise WireError(
            f"framework info: failover_timeout must be finite and >= 0, got {info.failover_timeout}"
        )
    owner = info.on_behalf_of
    name(owner.name, "framework info: on_behalf_of.name")
    for role in owner.roles:
        name(role, "framework info: on_behalf_of.roles")
    if owner.roles and not owner.name:
        raise WireError("framework info: on_behalf_of has roles but no name")
    return FrameworkSpec(
        framework_id=info.id,
        name=info.name,
        role=info.role or "*",
        principal=info.principal,
        partition_aware=pb.FRAMEWORK_CAPABILITY_PARTITION_AWARE in info.capabilities,
        gpu_resources=pb.FRAMEWORK_CAPABILITY_GPU_RESOURCES in info.capabilities,
        revocable_resources=pb.FRAMEWORK_CAPABILITY_REVOCABLE_RESOURCES in info.capabilities,
        failover_timeout=info.failover_timeout,
        tolerations=tolerations,
        offer_constraints=tuple(constraints),
        hostname=info.hostname,
        user=info.user,
        owner=owner.name,
        owner_roles=tuple(sorted(set(owner.roles))),
    )


def task_spec_from_pb(t: pb.TaskInfo, within_size: bool = False) -> TaskSpec:
    """``within_size``: the caller knows the task is at most MAX_TASK_BYTES (its whole message
    is), so its size is not measured again.

    This runs for every task launched: each field is read once (a read of a message field is
    a call into upb), and the text naming the task is made only for an error."""
    task_id = t.task_id
    if not task_id:
        raise WireError("a task has an empty task_id")
    ident(task_id, "a task's task_id")
    if not within_size:
        size = t.ByteSize()
        if size > limits.MAX_TASK_BYTES:
            raise WireError(
                f"{task_what(task_id)} is {size} bytes on the wire, more than the limit of "
                f"{limits.MAX_TASK_BYTES}"
            )
    task_name, priority_class, demand = t.name, t.priority_class, t.demand
    if max(len(task_name), len(priority_class), len(demand)) > limits.MAX_NAME_LENGTH:
        what = task_what(task_id)
        name(task_name, f"{what}: name")
        name(priority_class, f"{what}: priority_class")
        name(demand, f"{what}: demand")
    has_container = t.HasField("container")
    if t.HasField("executor"):  # a custom executor (docs/mesos-compat.md): its command is ours
        what = task_what(task_id)
        if not t.executor.executor_id:
            raise WireError(f"{what}: executor.executor_id is empty")
        ident(t.executor.executor_id, f"{what}: executor.executor_id")
        name(t.executor.name, f"{what}: executor.name")
        if has_container:
            raise WireError(f"{what}: a custom executor runs as a process, not in a container")
    if t.labels:  # most tasks have none
        _mapping(t.labels, f"{task_what(task_id)}: labels", limits.MAX_LABELS)
    command = t.command
    secrets = command.secret_environment
    if secrets:
        what = task_what(task_id)
        both = sorted(set(secrets).intersection(command.environment))
        if both:
            raise WireError(
                f"{what}: environment variable {limits.echo(both[0])} is both in environment "
                "and in secret_environment"
            )
        _mapping(secrets, f"{what}: secret_environment", limits.MAX_LABELS)
    if t.HasField("simulation"):
        duration = t.simulation.duration_seconds
        if not math.isfinite(duration) or duration < 0:
            raise WireError(f"{task_what(task_id)}: simulation duration must be finite and >= 0")
    elif not has_container and not (command.value or command.arguments):
        # A container's command is optional: empty runs the image's own (Mesos' Docker rule).
        raise WireError(f"{task_what(task_id)}: command is empty")
    grace = t.kill_grace_period_seconds
    if grace and (not math.isfinite(grace) or grace < 0):
        raise WireError(f"{task_what(task_id)}: kill_grace_period_seconds must be finite and >= 0")
    resources = task_resources_from_pb(t.resources, task_id)
    container = container_from_pb(t, resources, task_what(task_id)) if has_container else None
    cpus_limit = mem_limit = 0.0
    if t.HasField("limits"):
        what = task_what(task_id)
        lim = resources_from_pb(t.limits, f"{what}: limits")
        if lim.disk or lim.gpus or lim.ports:
            raise WireError(f"{what}: limits are for cpus and mem only")
        problem = limits_problem(resources.cpus, resources.mem, lim.cpus, lim.mem)
        if problem:
            raise WireError(f"{what}: {problem}")
        cpus_limit, mem_limit = lim.cpus, lim.mem
    revocable = None
    if t.revocable:
        if resources.disk or resources.gpus or resources.ports:
            raise WireError(f"{task_what(task_id)}: a revocable task takes cpus and mem only")
        revocable, resources = resources, Resources()
    agent_id = t.agent_id
    if len(agent_id) > limits.MAX_ID_LENGTH:
        ident(agent_id, f"{task_what(task_id)}: agent_id")
    return TaskSpec(
        task_id=task_id,
        name=task_name or task_id,
        resources=resources,
        priority_class=priority_class,
        demand=demand,
        agent_id=agent_id,
        wire=t,
        cpus_limit=cpus_limit,
        mem_limit=mem_limit,
        revocable=revocable,
        container=container,
    )


_STATE_OF = {int(v): v for v in TaskState}
_REASON_OF = {int(v): v for v in TaskReason}
_SOURCE_OF = {int(v): v for v in TaskSource}


def status_from_pb(s: pb.TaskStatus) -> Status:
    # Dict lookups instead of Enum(...) calls: this runs for every status of every agent.
    state = _STATE_OF.get(s.state)
    if state is None:
        raise WireError(f"status of task {limits.echo(s.task_id)} has no valid state")
    # Most statuses carry no container: reading the field would build its message object.
    container_id = s.container_status.container_id if s.HasField("container_status") else ""
    if (
        len(s.task_id) > limits.MAX_ID_LENGTH
        or len(s.framework_id) > limits.MAX_ID_LENGTH
        or len(s.agent_id) > limits.MAX_ID_LENGTH
        or len(container_id) > limits.MAX_ID_LENGTH
    ):
        raise WireError(f"status of task {limits.echo(s.task_id)}: an id is too long")
    if len(s.uuid) > limits.MAX_UUID_BYTES:  # the message is made only when it is needed
        uuid(s.uuid, f"status of task {limits.echo(s.task_id)}: uuid")
    return Status(
        s.task_id,
        s.framework_id,
        s.agent_id,
        state,
        _REASON_OF.get(s.reason, TaskReason.UNSPECIFIED),
        s.message,
        _SOURCE_OF.get(s.source, TaskSource.UNSPECIFIED),
        s.timestamp,
        s.uuid,
        s.exit_code if s.HasField("exit_code") else None,
        container_id,
    )


def agent_statuses(
    msg: agent_pb2.StatusUpdates, bad: Callable[[WireError], None]
) -> tuple[Status, ...]:
    """An agent's STATUS_UPDATES: each status that decodes, carrying its wire form (forwarded
    to its framework as received, not re-encoded); ``bad`` is told of each that does not."""
    statuses = []
    for s in msg.statuses:
        try:
            status = status_from_pb(s)
        except WireError as exc:
            bad(exc)
            continue
        status.wire = s
        statuses.append(status)
    return tuple(statuses)


def executor_terminated(msg: pb.ExecutorTerminated) -> tuple[str, str, int, str]:
    """An agent's EXECUTOR_TERMINATED: (framework id, executor id, wait status, message); the
    agent id is the stream's, not the message's."""
    if not msg.framework_id or not msg.executor_id:
        raise WireError("executor_terminated needs a framework_id and an executor_id")
    return (
        ident(msg.framework_id, "executor_terminated.framework_id"),
        ident(msg.executor_id, "executor_terminated.executor_id"),
        msg.status,
        text(msg.message, "executor_terminated.message", limits.MAX_VALUE_LENGTH),
    )


def accept_tasks(request: scheduler_pb2.AcceptRequest) -> tuple[TaskSpec, ...]:
    """The tasks an ACCEPT launches, over all its operations."""
    launches = []
    for operation in request.operations:
        if not operation.HasField("launch"):
            raise WireError("operation has no known type (expected launch)")
        launches.append(operation.launch.tasks)
    if sum(map(len, launches)) > limits.MAX_TASKS_PER_ACCEPT:
        count(
            [t for ts in launches for t in ts], "tasks in one accept", limits.MAX_TASKS_PER_ACCEPT
        )
    # One size for the whole call: a call within the task limit holds no task past it (a
    # ByteSize per task was a tenth of decoding one).
    within = request.ByteSize() <= limits.MAX_TASK_BYTES
    return tuple(task_spec_from_pb(t, within) for ts in launches for t in ts)


def acknowledgements(
    request: scheduler_pb2.AcknowledgeRequest,
) -> tuple[tuple[str, str, bytes], ...]:
    """An ACKNOWLEDGE's (agent id, task id, uuid) triples."""
    acks = request.acknowledgements
    count(acks, "acknowledgements", limits.MAX_IDS_PER_CALL)
    return tuple(
        (
            ident(a.agent_id, "an acknowledgement's agent_id"),
            ident(a.task_id, "an acknowledgement's task_id"),
            uuid(a.uuid, "an acknowledgement's uuid"),
        )
        for a in acks
    )


def status_to_pb(s: Status, out: pb.TaskStatus) -> pb.TaskStatus:
    out.task_id = s.task_id
    out.framework_id = s.framework_id
    out.agent_id = s.agent_id
    out.state = int(s.state)  # type: ignore[assignment]
    out.reason = int(s.reason)  # type: ignore[assignment]
    out.message = s.message
    out.source = int(s.source)  # type: ignore[assignment]
    out.timestamp = s.timestamp
    out.uuid = s.uuid
    if s.exit_code is not None:
        out.exit_code = s.exit_code
    if s.container_id:
        out.container_status.container_id = s.container_id
    return out


def offer_to_pb(o: OfferRecord, out: pb.Offer) -> pb.Offer:
    out.id = o.offer_id
    out.framework_id = o.framework_id
    out.agent_id = o.agent_id
    out.hostname = o.hostname
    scalars_to_pb(o.scalars, o.ports, out.resources)
    if o.attributes:  # update() walks even an empty mapping in Python
        out.attributes.update(o.attributes)
    for t in o.taints:
        taint_to_pb(t, out.taints.add())
    if o.gang_id:
        out.gang_id = o.gang_id
    if o.revocable:
        out.revocable = True
    return out


def status_retry(seconds: float) -> float:
    """A REGISTER's ``status_retry_seconds``: the agent's first resend of a status (0: the
    default), which bounds how long the master holds its acknowledgements."""
    if not math.isfinite(seconds) or seconds < 0:
        raise WireError(
            "register.status_retry_seconds must be a finite number of seconds >= 0, got "
            f"{seconds!r}"
        )
    return seconds


def reported_task_from_pb(t: pb.TaskInfo, s: pb.TaskStatus | None) -> ReportedTask:
    # The master never needs a reported task's secrets (it does not launch it again), and
    # does not keep what it does not need (agents leave them out too).
    t.command.secret_environment.clear()
    spec = task_spec_from_pb(t)
    if s is not None:
        status = status_from_pb(s)
    else:
        status = Status(
            task_id=t.task_id,
            framework_id=t.framework_id,
            agent_id=t.agent_id,
            state=TaskState.STAGING,
        )
    if not t.framework_id:
        raise WireError(f"reported task {t.task_id!r} has no framework_id")
    what = f"reported task {t.task_id!r}"
    name(t.framework_principal, f"{what}: framework_principal")
    name(t.framework_role, f"{what}: framework_role")
    # As the agent says; the shell keeps it only if its seal checks (master/security/seals.py).
    owner = FrameworkOwner(t.framework_principal, t.framework_role) if t.framework_role else None
    return ReportedTask(framework_id=t.framework_id, spec=spec, status=status, owner=owner)


# --- core values -> wire messages, for the registry (read back with the *_from_pb above) ------


def agent_spec_to_pb(spec: AgentSpec, out: pb.AgentInfo) -> pb.AgentInfo:
    out.id, out.hostname, out.name = spec.agent_id, spec.hostname, spec.name
    resources_to_pb(spec.resources, out.resources)
    for key, value in spec.attributes.items():
        out.attributes[key] = value
    for t in spec.taints:
        taint_to_pb(t, out.taints.add())
    for role, reserved in spec.reservations.items():
        resources_to_pb(reserved, out.reservations[role])
    out.principal = spec.principal
    return out


def framework_spec_to_pb(spec: FrameworkSpec, out: pb.FrameworkInfo) -> pb.FrameworkInfo:
    out.id, out.name, out.role, out.principal = (
        spec.framework_id,
        spec.name,
        spec.role,
        spec.principal,
    )
    if spec.partition_aware:
        out.capabilities.append(pb.FRAMEWORK_CAPABILITY_PARTITION_AWARE)
    if spec.gpu_resources:
        out.capabilities.append(pb.FRAMEWORK_CAPABILITY_GPU_RESOURCES)
    if spec.revocable_resources:
        out.capabilities.append(pb.FRAMEWORK_CAPABILITY_REVOCABLE_RESOURCES)
    out.failover_timeout = spec.failover_timeout
    for t in spec.tolerations:
        out.tolerations.add(
            key=t.key,
            value=t.value,
            operator=(pb.TOLERATION_OPERATOR_EXISTS if t.exists else pb.TOLERATION_OPERATOR_EQUAL),
            effect=_EFFECT_TO_PB[t.effect] if t.effect is not None else 0,
        )
    for c in spec.offer_constraints:
        out.offer_constraints.add(attribute=c.attribute, operator=_OP_TO_PB[c.op], values=c.values)
    out.hostname, out.user = spec.hostname, spec.user
    if spec.owner:
        out.on_behalf_of.name = spec.owner
        out.on_behalf_of.roles.extend(spec.owner_roles)
    return out


# Re-exported: callers import every converter from this module.
__all__ = [
    "WireError",
    "constraints_from_pb",
    "count",
    "demand_from_pb",
    "demand_to_pb",
    "ident",
    "idents",
    "name",
    "priority_class_from_pb",
    "priority_class_to_pb",
    "quota_from_pb",
    "quota_to_pb",
    "resources_from_pb",
    "resources_to_pb",
    "scalars_to_pb",
    "spread_from_pb",
    "taint_to_pb",
    "taints_from_pb",
    "task_resources_from_pb",
    "text",
    "tolerations_from_pb",
    "uuid",
]
