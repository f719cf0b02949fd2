"""Agents' usage reports on the wire (agent.proto's ``UsageReport``, common.proto's
``AgentUsage``) <-> the master core's values: decoding checks what an agent may send."""

from __future__ import annotations

import math

from corral import limits
from corral.master.core.types import AgentUsage, TaskUsage
from corral.master.wire.convert import WireError, count, ident, name, resources_from_pb, text
from corral.v1 import agent_pb2
from corral.v1 import common_pb2 as pb

_PRESSURES = ("", "soft", "hard")


def _finite(value: float, what: str) -> float:
    if not math.isfinite(value):
        raise WireError(f"{what} is not a finite number")
    return value


def agent_usage_from_pb(msg: agent_pb2.UsageReport) -> tuple[AgentUsage, tuple[TaskUsage, ...]]:
    """An agent's usage report (agent/core/usage.py makes it), checked: finite figures, a
    known pressure level, at most MAX_TASKS_PER_AGENT tasks with ids of bounded length."""
    a = msg.agent
    if a.memory_pressure not in _PRESSURES:
        raise WireError(f"usage report: unknown memory pressure {limits.echo(a.memory_pressure)}")
    for field_name in ("timestamp", "mem_total", "mem_used", "mem_available", "cpus_used"):
        _finite(getattr(a, field_name), f"usage report: {field_name}")
    revocable = resources_from_pb(a.revocable, "usage report: revocable")
    count(msg.tasks, "usage report: tasks", limits.MAX_TASKS_PER_AGENT)
    usage = AgentUsage(
        timestamp=a.timestamp,
        mem_total=a.mem_total,
        mem_used=a.mem_used,
        mem_available=a.mem_available,
        cpus_used=a.cpus_used,
        pressure=a.memory_pressure,
        pressure_since=_finite(a.pressure_since, "usage report: pressure_since"),
        pressure_message=text(a.pressure_message, "usage report: message", limits.MAX_VALUE_LENGTH),
        revocable_cpus=revocable.cpus,
        revocable_mem=revocable.mem,
        source=name(a.source, "usage report: source"),
    )
    tasks = tuple(
        TaskUsage(
            framework_id=ident(t.framework_id, "usage report: a task's framework_id"),
            task_id=ident(t.task_id, "usage report: a task's task_id"),
            cpus=_finite(t.cpus, "usage report: a task's cpus"),
            mem=_finite(t.mem, "usage report: a task's mem"),
        )
        for t in msg.tasks
    )
    return usage, tasks


def agent_usage_to_pb(u: AgentUsage, out: pb.AgentUsage) -> pb.AgentUsage:
    out.timestamp, out.mem_total, out.mem_used = u.timestamp, u.mem_total, u.mem_used
    out.mem_available, out.cpus_used = u.mem_available, u.cpus_used
    out.memory_pressure, out.pressure_since = u.pressure, u.pressure_since
    out.pressure_message, out.source = u.pressure_message, u.source
    out.revocable.cpus, out.revocable.mem = u.revocable_cpus, u.revocable_mem
    return out
