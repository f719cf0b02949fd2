"""Conversions between the wire contract (corral.v1) and the agent core's own types.

Enum numbers are equal on both sides (pinned by tests/unit/test_agent_convert.py), so states,
reasons and sources convert with a cast.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from corral.agent.core import events as e
from corral.agent.core.commands import SendRegister
from corral.agent.core.types import (
    CommandSpec,
    SimulationSpec,
    Status,
    TaskReason,
    TaskSource,
    TaskSpec,
    TaskState,
    UsageReport,
)
from corral.containers import ContainerSpec, Network, PortMapping, Volume
from corral.pbmaps import as_dict
from corral.placement import Taint, TaintEffect
from corral.resources import Resources
from corral.v1 import agent_pb2, common_pb2

_TAINT_EFFECTS: Mapping[TaintEffect, int] = {
    TaintEffect.NO_SCHEDULE: common_pb2.TAINT_EFFECT_NO_SCHEDULE,
    TaintEffect.PREFER_NO_SCHEDULE: common_pb2.TAINT_EFFECT_PREFER_NO_SCHEDULE,
    TaintEffect.NO_EXECUTE: common_pb2.TAINT_EFFECT_NO_EXECUTE,
}


def resources_to_pb(resources: Resources) -> common_pb2.Resources:
    return common_pb2.Resources(
        cpus=resources.cpus,
        mem=resources.mem,
        disk=resources.disk,
        gpus=resources.gpus,
        ports=[common_pb2.Range(begin=b, end=e) for b, e in resources.ports],
    )


def agent_info(
    hostname: str,
    resources: Resources,
    attributes: Mapping[str, str],
    taints: Iterable[Taint],
    agent_id: str = "",
    name: str = "",
) -> common_pb2.AgentInfo:
    return common_pb2.AgentInfo(
        id=agent_id,
        name=name,
        hostname=hostname,
        resources=resources_to_pb(resources),
        attributes=dict(attributes),
        taints=[
            common_pb2.Taint(key=t.key, value=t.value, effect=_TAINT_EFFECTS[t.effect])  # type: ignore[arg-type]
            for t in taints
        ],
    )


def container_from_pb(info: common_pb2.TaskInfo) -> ContainerSpec | None:
    """The task's container as the master checked it (master/wire/convert_container.py)."""
    if not info.HasField("container"):
        return None
    c = info.container
    return ContainerSpec(
        image=c.docker.image,
        network=Network.BRIDGE
        if c.docker.network == common_pb2.CONTAINER_NETWORK_BRIDGE
        else Network.HOST,
        port_mappings=tuple(
            PortMapping(m.host_port, m.container_port, m.protocol or "tcp")
            for m in c.docker.port_mappings
        ),
        volumes=tuple(
            Volume(v.host_path, v.container_path, v.mode != common_pb2.VOLUME_MODE_RW)
            for v in c.volumes
        ),
        force_pull_image=c.docker.force_pull_image,
    )


def task_from_pb(info: common_pb2.TaskInfo, framework_id: str) -> TaskSpec:
    command = None
    if info.HasField("command"):
        cmd = info.command
        command = CommandSpec(
            value=cmd.value,
            arguments=tuple(cmd.arguments),
            shell=cmd.shell,
            environment=as_dict(cmd.environment),
            secret_environment=as_dict(cmd.secret_environment),
        )
    simulation = None
    if info.HasField("simulation"):
        simulation = SimulationSpec(
            duration_seconds=info.simulation.duration_seconds,
            exit_code=info.simulation.exit_code,
        )
    # Each field read once, and limits only when set: reading an unset message field builds
    # an empty one (this runs for every task an agent is sent).
    resources = info.resources
    cpus_limit = mem_limit = 0.0
    if info.HasField("limits"):
        limits = info.limits
        cpus_limit, mem_limit = limits.cpus, limits.mem
    return TaskSpec(
        task_id=info.task_id,
        framework_id=info.framework_id or framework_id,
        name=info.name,
        command=command,
        simulation=simulation,
        kill_grace_period=info.kill_grace_period_seconds,
        mem=resources.mem,
        priority_class=info.priority_class,
        cpus=resources.cpus,
        cpus_limit=cpus_limit,
        mem_limit=mem_limit,
        priority=info.priority,
        revocable=info.revocable,
        container=container_from_pb(info),
        gpus=resources.gpus,
        executor_id=info.executor.executor_id if info.HasField("executor") else "",
        wire=info,
    )


def task_to_pb(spec: TaskSpec) -> common_pb2.TaskInfo:
    """The task as the master sent it, its secret values left out (the master never needs
    them back); a minimal one for tasks the agent only heard of."""
    if isinstance(spec.wire, common_pb2.TaskInfo):
        if not spec.wire.command.secret_environment:
            return spec.wire
        reported = common_pb2.TaskInfo()
        reported.CopyFrom(spec.wire)
        reported.command.secret_environment.clear()
        return reported
    return common_pb2.TaskInfo(task_id=spec.task_id, name=spec.name, framework_id=spec.framework_id)


def status_to_pb(status: Status) -> common_pb2.TaskStatus:
    return status_into_pb(status, common_pb2.TaskStatus())


def status_into_pb(status: Status, out: common_pb2.TaskStatus) -> common_pb2.TaskStatus:
    out.task_id = status.task_id
    # IntEnums are ints to protobuf; .value or int() would cost three times as much.
    out.state = status.state  # type: ignore[assignment]
    out.reason = status.reason  # type: ignore[assignment]
    if status.message:
        out.message = status.message
    out.source = status.source  # type: ignore[assignment]
    out.agent_id = status.agent_id
    out.framework_id = status.framework_id
    out.timestamp = status.timestamp
    out.uuid = status.uuid
    if status.exit_code is not None:
        out.exit_code = status.exit_code
    return out


def status_from_pb(pb: common_pb2.TaskStatus) -> Status:
    """A status the agent made, read back from its checkpoint."""
    return Status(
        task_id=pb.task_id,
        framework_id=pb.framework_id,
        agent_id=pb.agent_id,
        state=TaskState(pb.state),
        reason=TaskReason(pb.reason),
        message=pb.message,
        source=TaskSource(pb.source),
        timestamp=pb.timestamp,
        uuid=pb.uuid,
        exit_code=pb.exit_code if pb.HasField("exit_code") else None,
    )


def usage_to_pb(report: UsageReport) -> agent_pb2.AgentMessage:
    msg = agent_pb2.AgentMessage(usage=agent_pb2.UsageReport())
    a = msg.usage.agent
    a.timestamp, a.mem_total, a.mem_used = report.timestamp, report.mem_total, report.mem_used
    a.mem_available, a.cpus_used = report.mem_available, report.cpus_used
    a.memory_pressure, a.pressure_since = report.pressure, report.pressure_since
    a.pressure_message, a.source = report.pressure_message, report.source
    a.revocable.cpus, a.revocable.mem = report.revocable_cpus, report.revocable_mem
    for framework_id, u in report.tasks:
        msg.usage.tasks.add(task_id=u.task_id, framework_id=framework_id, cpus=u.cpus, mem=u.mem)
    return msg


def register_to_pb(cmd: SendRegister, info: common_pb2.AgentInfo) -> agent_pb2.AgentMessage:
    registered_info = common_pb2.AgentInfo()
    registered_info.CopyFrom(info)
    registered_info.id = cmd.agent_id
    registered_info.principal = cmd.principal
    return agent_pb2.AgentMessage(
        register=agent_pb2.Register(
            info=registered_info,
            tasks=[task_to_pb(spec) for spec, _ in cmd.tasks],
            task_statuses=[status_to_pb(status) for _, status in cmd.tasks],
            secret=cmd.secret,
            status_retry_seconds=cmd.status_retry,
        )
    )


def events_from_pb(msg: agent_pb2.MasterMessage, now: float, stimulus_id: str) -> list[e.Event]:
    """The core events a master message stands for (SHUTDOWN included; REGISTERED too)."""
    kind = msg.WhichOneof("message")
    if kind == "registered":
        reg = msg.registered
        return [
            e.Registered(
                now=now,
                stimulus_id=stimulus_id,
                agent_id=reg.agent_id,
                heartbeat_interval=reg.heartbeat_interval_seconds,
                secret=reg.secret,
                principal=reg.principal,
            )
        ]
    if kind == "heartbeat_interval":
        return [
            e.HeartbeatIntervalChanged(
                now=now, stimulus_id=stimulus_id, heartbeat_interval=msg.heartbeat_interval.seconds
            )
        ]
    if kind == "launch_tasks":
        launch = msg.launch_tasks
        tasks = tuple(task_from_pb(t, launch.framework_id) for t in launch.tasks)
        return [
            e.LaunchTasks(
                now=now, stimulus_id=stimulus_id, framework_id=launch.framework_id, tasks=tasks
            )
        ]
    if kind == "kill_tasks":
        return [
            e.KillTask(
                now=now,
                stimulus_id=stimulus_id,
                task_id=k.task_id,
                framework_id=k.framework_id,
                grace_period=k.kill_grace_period_seconds,
                reason=TaskReason.KILLED_BY_FRAMEWORK,
            )
            for k in msg.kill_tasks.kills
        ]
    if kind == "acknowledgements":
        acks = tuple(
            (a.framework_id, a.task_id, a.uuid) for a in msg.acknowledgements.acknowledgements
        )
        return [e.Acknowledged(now=now, stimulus_id=stimulus_id, acknowledgements=acks)]
    if kind == "shutdown":
        reason = msg.shutdown.reason or "requested by the master"
        return [e.Shutdown(now=now, stimulus_id=stimulus_id, reason=reason)]
    return []
