"""Wire messages ↔ core values. Decoding validates and raises ``WireError`` naming the field."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence, Sized

from corral import limits
from corral.master.core.records import OfferRecord
from corral.master.core.types import (
    AgentSpec,
    Demand,
    FrameworkSpec,
    ReportedTask,
    Status,
    TaskReason,
    TaskSource,
    TaskSpec,
    TaskState,
)
from corral.pbmaps import as_dict
from corral.placement import (
    AttributeConstraint,
    ConstraintOp,
    Taint,
    TaintEffect,
    Toleration,
    TopologySpread,
)
from corral.priority import PriorityClass, PriorityClassError, check_class
from corral.qos import limits_problem
from corral.resources import SCALARS, ResourceError, Resources
from corral.roles import Quota
from corral.v1 import agent_pb2, scheduler_pb2
from corral.v1 import common_pb2 as pb
from corral.v1 import operator_pb2 as op


class WireError(ValueError):
    """A message that cannot become a core value; the text names the problem."""


# --- limits (corral.limits): checked where a message becomes core values ---------------------


def text(value: str, what: str, limit: int) -> str:
    """``value`` if it is at most ``limit`` characters; the error repeats only its start."""
    if len(value) > limit:
        raise WireError(f"{what} is {len(value)} characters, more than the limit of {limit}")
    return value


def ident(value: str, what: str) -> str:
    return text(value, what, limits.MAX_ID_LENGTH)


def name(value: str, what: str) -> str:
    return text(value, what, limits.MAX_NAME_LENGTH)


def count(items: Sized, what: str, limit: int) -> None:
    if len(items) > limit:
        raise WireError(f"{what}: {len(items)} given, more than the limit of {limit}")


def idents(values: Sequence[str], what: str, limit: int) -> tuple[str, ...]:
    """A list of ids of one call: at most ``limit``, each at most MAX_ID_LENGTH characters."""
    count(values, what, limit)
    longest = max(values, key=len, default="")
    ident(longest, f"an entry of {what}")
    return tuple(values)


def uuid(value: bytes, what: str) -> bytes:
    if len(value) > limits.MAX_UUID_BYTES:
        raise WireError(
            f"{what} is {len(value)} bytes, more than the limit of {limits.MAX_UUID_BYTES}"
        )
    return value


def _mapping(values: Mapping[str, str], what: str, limit: int) -> dict[str, str]:
    if not values:
        # Most tasks carry no labels, and a protobuf map's items() walks through the abstract
        # ItemsView even when empty: 2 % of the master's time in the 1k x 50 load test.
        return {}
    count(values, what, limit)
    for key, value in values.items():
        name(key, f"{what} key {limits.echo(key)}")
        text(value, f"{what} {limits.echo(key)}", limits.MAX_VALUE_LENGTH)
    return dict(values)


_EFFECT_FROM_PB = {
    pb.TAINT_EFFECT_NO_SCHEDULE: TaintEffect.NO_SCHEDULE,
    pb.TAINT_EFFECT_PREFER_NO_SCHEDULE: TaintEffect.PREFER_NO_SCHEDULE,
    pb.TAINT_EFFECT_NO_EXECUTE: TaintEffect.NO_EXECUTE,
}
_EFFECT_TO_PB = {v: k for k, v in _EFFECT_FROM_PB.items()}
_OP_FROM_PB = {
    pb.CONSTRAINT_OPERATOR_EQUALS: ConstraintOp.EQUALS,
    pb.CONSTRAINT_OPERATOR_IN: ConstraintOp.IN,
    pb.CONSTRAINT_OPERATOR_EXISTS: ConstraintOp.EXISTS,
}
_OP_TO_PB = {v: k for k, v in _OP_FROM_PB.items()}


def resources_from_pb(r: pb.Resources, what: str) -> Resources:
    try:
        return Resources(
            cpus=r.cpus,
            mem=r.mem,
            disk=r.disk,
            gpus=r.gpus,
            ports=tuple((p.begin, p.end) for p in r.ports),
        )
    except ResourceError as exc:
        raise WireError(f"{what}: {exc}") from None


# Validated task resources by value. A framework launches many tasks of few shapes, and building
# a validated ``Resources`` was most of decoding a task in the load-test profile; a cached value
# is the same immutable object the constructor would have made. Bounded: cleared when full.
_TASK_RESOURCES: dict[
    tuple[float, float, float, float, tuple[tuple[int, int], ...]], Resources
] = {}
_TASK_RESOURCES_MAX = 4096


def task_resources_from_pb(r: pb.Resources, what: str) -> Resources:
    ports = r.ports  # usually empty: a generator per task was 3 % of the master
    key = (r.cpus, r.mem, r.disk, r.gpus, tuple((p.begin, p.end) for p in ports) if ports else ())
    known = _TASK_RESOURCES.get(key)  # NaN never equals itself, so it never hits: it is refused
    if known is not None:
        return known
    resources = resources_from_pb(r, what)
    if len(_TASK_RESOURCES) >= _TASK_RESOURCES_MAX:
        _TASK_RESOURCES.clear()
    _TASK_RESOURCES[key] = resources
    return resources


def resources_to_pb(r: Resources, out: pb.Resources) -> pb.Resources:
    return scalars_to_pb(r.scalars(), r.ports, out)


def scalars_to_pb(
    s: Sequence[float], ports: Iterable[tuple[int, int]], out: pb.Resources
) -> pb.Resources:
    """Resources given as (cpus, mem, disk, gpus) and port ranges (an offer keeps them so)."""
    out.cpus, out.mem, out.disk, out.gpus = s[0], s[1], s[2], s[3]
    for begin, end in ports:
        out.ports.add(begin=begin, end=end)
    return out


def taints_from_pb(taints: Sequence[pb.Taint], what: str) -> tuple[Taint, ...]:
    count(taints, f"{what}: taints", limits.MAX_TAINTS)
    out: list[Taint] = []
    for t in taints:
        name(t.key, f"{what}: a taint's key")
        text(t.value, f"{what}: taint {limits.echo(t.key)}'s value", limits.MAX_VALUE_LENGTH)
        effect = _EFFECT_FROM_PB.get(t.effect)
        if effect is None:
            raise WireError(f"{what}: taint {t.key!r} has no effect")
        out.append(Taint(t.key, t.value, effect))
    return tuple(out)


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
    )


def tolerations_from_pb(tolerations: Sequence[pb.Toleration], where: str) -> tuple[Toleration, ...]:
    count(tolerations, f"{where}: tolerations", limits.MAX_TOLERATIONS)
    for t in tolerations:
        name(t.key, f"{where}: a toleration's key")
        text(t.value, f"{where}: a toleration's value", limits.MAX_VALUE_LENGTH)
    return tuple(
        Toleration(
            key=t.key,
            value=t.value,
            exists=t.operator == pb.TOLERATION_OPERATOR_EXISTS,
            effect=_EFFECT_FROM_PB.get(t.effect),
        )
        for t in tolerations
    )


def constraints_from_pb(
    constraints: Sequence[pb.AttributeConstraint], where: str, kind: str
) -> tuple[AttributeConstraint, ...]:
    count(constraints, f"{where}: {kind}s", limits.MAX_CONSTRAINTS)
    out: list[AttributeConstraint] = []
    for c in constraints:
        name(c.attribute, f"{where}: an {kind}'s attribute")
        count(c.values, f"{kind} on {limits.echo(c.attribute)}", limits.MAX_ATTRIBUTES)
        for v in c.values:
            text(v, f"an {kind}'s value", limits.MAX_VALUE_LENGTH)
        op = _OP_FROM_PB.get(c.operator)
        if op is None or not c.attribute:
            raise WireError(f"{where}: {kind} on {c.attribute!r} has no operator")
        out.append(AttributeConstraint(c.attribute, op, tuple(c.values)))
    return tuple(out)


def spread_from_pb(s: pb.TopologySpread, where: str) -> TopologySpread | None:
    """None when unset (no topology key); a key without a max_skew of at least 1 is an error."""
    if not s.topology_key:
        if s.max_skew or s.when_unsatisfiable:
            raise WireError(
                f"{where}: spread has a max_skew or when_unsatisfiable but no topology_key"
            )
        return None
    name(s.topology_key, f"{where}: spread's topology_key")
    if s.max_skew < 1:
        raise WireError(f"{where}: spread over {limits.echo(s.topology_key)} needs max_skew >= 1")
    if s.when_unsatisfiable not in _WHEN_UNSATISFIABLE:
        raise WireError(f"{where}: spread has an unknown when_unsatisfiable {s.when_unsatisfiable}")
    return TopologySpread(
        s.topology_key, s.max_skew, s.when_unsatisfiable == pb.WHEN_UNSATISFIABLE_SCHEDULE_ANYWAY
    )


_WHEN_UNSATISFIABLE = frozenset(pb.WhenUnsatisfiable.values())


def demand_from_pb(d: pb.Demand) -> Demand:
    """The wire's checks (sizes, quantities); the core checks the rest (counts, classes)."""
    name(d.name, "a demand's name")
    what = f"demand {limits.echo(d.name)}"
    name(d.priority_class, f"{what}: priority_class")
    resources = resources_from_pb(d.resources, what)
    return Demand(
        name=d.name,
        resources=resources,
        count=d.count,
        priority_class=d.priority_class,
        min_member=d.min_member,
        constraints=constraints_from_pb(d.constraints, what, "attribute constraint"),
        tolerations=tolerations_from_pb(d.tolerations, what),
        spread=spread_from_pb(d.spread, what),
    )


def demand_to_pb(d: Demand, out: pb.Demand) -> pb.Demand:
    out.name, out.count, out.priority_class, out.min_member = (
        d.name,
        d.count,
        d.priority_class,
        d.min_member,
    )
    resources_to_pb(d.resources, out.resources)
    for c in d.constraints:
        out.constraints.add(attribute=c.attribute, operator=_OP_TO_PB[c.op], values=list(c.values))
    for t in d.tolerations:
        out.tolerations.add(
            key=t.key,
            value=t.value,
            operator=pb.TOLERATION_OPERATOR_EXISTS if t.exists else pb.TOLERATION_OPERATOR_EQUAL,
            effect=pb.TAINT_EFFECT_UNSPECIFIED if t.effect is None else _EFFECT_TO_PB[t.effect],
        )
    if d.spread is not None:
        out.spread.topology_key, out.spread.max_skew = d.spread.topology_key, d.spread.max_skew
        out.spread.when_unsatisfiable = (
            pb.WHEN_UNSATISFIABLE_SCHEDULE_ANYWAY
            if d.spread.schedule_anyway
            else pb.WHEN_UNSATISFIABLE_DO_NOT_SCHEDULE
        )
    return out


def priority_class_from_pb(c: pb.PriorityClass) -> PriorityClass:
    try:
        return check_class(
            c.name, c.value, c.preemption_policy or None, c.description, c.global_default
        )
    except PriorityClassError as exc:
        raise WireError(str(exc)) from None


def priority_class_to_pb(c: PriorityClass, out: pb.PriorityClass) -> pb.PriorityClass:
    out.name, out.value, out.preemption_policy = c.name, c.value, c.preemption_policy.value
    out.description, out.global_default = c.description, c.global_default
    return out


def task_spec_from_pb(t: pb.TaskInfo) -> TaskSpec:
    if not t.task_id:
        raise WireError("a task has an empty task_id")
    ident(t.task_id, "a task's task_id")
    what = f"task {t.task_id!r}"
    size = t.ByteSize()
    if size > limits.MAX_TASK_BYTES:
        raise WireError(
            f"{what} is {size} bytes on the wire, more than the limit of {limits.MAX_TASK_BYTES}"
        )
    name(t.name, f"{what}: name")
    name(t.priority_class, f"{what}: priority_class")
    name(t.demand, f"{what}: demand")
    _mapping(t.labels, f"{what}: labels", limits.MAX_LABELS)
    secret_names = set(t.command.secret_environment)
    if secret_names:
        both = sorted(secret_names.intersection(t.command.environment))
        if both:
            raise WireError(
                f"{what}: environment variable {limits.echo(both[0])} is both in environment "
                "and in secret_environment"
            )
        _mapping(t.command.secret_environment, f"{what}: secret_environment", limits.MAX_LABELS)
    simulated = t.HasField("simulation")
    if not simulated and not (t.command.value or t.command.arguments):
        raise WireError(f"{what}: command is empty")
    if simulated and (
        not math.isfinite(t.simulation.duration_seconds) or t.simulation.duration_seconds < 0
    ):
        raise WireError(f"{what}: simulation duration must be finite and >= 0")
    if not math.isfinite(t.kill_grace_period_seconds) or t.kill_grace_period_seconds < 0:
        raise WireError(f"{what}: kill_grace_period_seconds must be finite and >= 0")
    resources = task_resources_from_pb(t.resources, what)
    cpus_limit = mem_limit = 0.0
    if t.HasField("limits"):
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
            raise WireError(f"{what}: a revocable task takes cpus and mem only")
        revocable, resources = resources, Resources()
    return TaskSpec(
        task_id=t.task_id,
        name=t.name or t.task_id,
        resources=resources,
        priority_class=t.priority_class,
        demand=t.demand,
        agent_id=ident(t.agent_id, f"{what}: agent_id") if t.agent_id else "",
        wire=t,
        cpus_limit=cpus_limit,
        mem_limit=mem_limit,
        revocable=revocable,
    )


_STATE_OF = {int(v): v for v in TaskState}
_REASON_OF = {int(v): v for v in TaskReason}
_SOURCE_OF = {int(v): v for v in TaskSource}


def status_from_pb(s: pb.TaskStatus) -> Status:
    # Dict lookups instead of Enum(...) calls: this runs for every status of every agent.
    state = _STATE_OF.get(s.state)
    if state is None:
        raise WireError(f"status of task {limits.echo(s.task_id)} has no valid state")
    if (
        len(s.task_id) > limits.MAX_ID_LENGTH
        or len(s.framework_id) > limits.MAX_ID_LENGTH
        or len(s.agent_id) > limits.MAX_ID_LENGTH
    ):
        raise WireError(f"status of task {limits.echo(s.task_id)}: an id is too long")
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
    return tuple(task_spec_from_pb(t) for ts in launches for t in ts)


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
    return out


def offer_to_pb(o: OfferRecord, out: pb.Offer) -> pb.Offer:
    out.id = o.offer_id
    out.framework_id = o.framework_id
    out.agent_id = o.agent_id
    out.hostname = o.hostname
    scalars_to_pb(o.scalars, o.ports, out.resources)
    if o.attributes:  # update() walks even an empty mapping in Python
        out.attributes.update(o.attributes)
    if o.gang_id:
        out.gang_id = o.gang_id
    if o.revocable:
        out.revocable = True
    return out


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
    return ReportedTask(framework_id=t.framework_id, spec=spec, status=status)


def taint_to_pb(t: Taint, out: pb.Taint) -> pb.Taint:
    out.key, out.value, out.effect = t.key, t.value, _EFFECT_TO_PB[t.effect]
    return out


# --- roles' quotas (checked by the core: corral.roles) ----------------------------------------


def quota_from_pb(q: op.Quota) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(guarantee, limit) as the core's SetQuota takes them: an unset limit is ``inf``."""
    if q.guarantee.ports:
        raise WireError("quota: ports are not part of a quota (cpus, mem, disk, gpus)")
    guarantee = tuple(getattr(q.guarantee, n) for n in SCALARS)
    limit = tuple(getattr(q.limit, n) if q.limit.HasField(n) else math.inf for n in SCALARS)
    return guarantee, limit


def quota_to_pb(quota: Quota, out: op.Quota) -> op.Quota:
    scalars_to_pb(quota.guarantee, (), out.guarantee)
    for name, value in zip(SCALARS, quota.limit, strict=True):
        if value != math.inf:
            setattr(out.limit, name, value)
    return out


# --- core values -> wire messages, for the registry (read back with the *_from_pb above) ------

_OP_TO_PB = {v: k for k, v in _OP_FROM_PB.items()}


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
    return out
