"""Pieces the UI's views share: resources as JSON, an event as JSON, the events about one
object, and the agent's status as the page shows it (one word and the conditions behind it)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from corral.events import record
from corral.master.core.commands import ClusterEvent
from corral.master.core.master import MasterCore
from corral.master.core.records import AgentRecord
from corral.master.core.states import AgentState
from corral.master.core.types import DRAINING
from corral.resources import SCALARS, Resources

# The statuses the cluster page shows, worst first; "active" is an agent with no condition.
STATUSES = (
    "unreachable",
    "recovering",
    "disconnected",
    "draining",
    "drained",
    "cordoned",
    "under pressure",
    "active",
)


def resources_json(r: Resources) -> dict[str, Any]:
    out: dict[str, Any] = {name: getattr(r, name) for name in SCALARS}
    if r.ports:
        out["ports"] = [[b, e] for b, e in r.ports]
    return out


def scalars_json(values: Iterable[float]) -> dict[str, float]:
    return dict(zip(SCALARS, values, strict=True))


def event_json(e: ClusterEvent) -> dict[str, Any]:
    return record(e)  # one shape with the master's HTTP and `corral events -o json`


def events_about(
    events: Iterable[ClusterEvent], subject: str, *, prefix: str = "", limit: int = 200
) -> list[dict[str, Any]]:
    """The newest ``limit`` events whose subject is ``subject`` (or starts with ``prefix``, a
    framework's demands' events being ``FRAMEWORK/DEMAND``), oldest first."""
    found = [e for e in events if e.subject == subject or (prefix and e.subject.startswith(prefix))]
    return [event_json(e) for e in found[-limit:]]


def agent_conditions(core: MasterCore, agent: AgentRecord) -> list[str]:
    """What is wrong with an agent beyond its state, each a short phrase the page shows as
    text (never as a colour alone): maintenance (cordoned, draining), memory pressure its agent
    reports, and admission control holding it out of offers at its launch bound."""
    out: list[str] = []
    if agent.state is AgentState.ACTIVE and agent.connection is None:
        out.append("disconnected")
    m = agent.maintenance
    if m is not None:
        out.append(f"{m.mode} by {m.requested_by}")
    if agent.under_pressure and agent.usage is not None:
        out.append(f"memory pressure ({agent.usage.pressure}): {agent.usage.pressure_message}")
    if agent.agent_id in core.holds.held:
        out.append("held: launches in flight at their bound")
    return out


def agent_status(core: MasterCore, agent: AgentRecord) -> str:
    """One of STATUSES."""
    if agent.state is not AgentState.ACTIVE:
        return str(agent.state.value)
    if agent.connection is None:
        return "disconnected"
    m = agent.maintenance
    if m is not None:
        if m.mode == DRAINING:
            return "drained" if not agent.tasks else "draining"
        return "cordoned"
    if agent.under_pressure or agent.agent_id in core.holds.held:
        return "under pressure"
    return "active"


def used_scalars(agent: AgentRecord) -> list[float]:
    """The agent's tasks' cpus, mem, disk and gpus: summed here rather than with
    ``AgentRecord.used``, which builds a Resources (ports included) per call."""
    cpus = mem = disk = gpus = 0.0
    for t in agent.tasks.values():
        r = t.spec.resources
        cpus += r.cpus
        mem += r.mem
        disk += r.disk
        gpus += r.gpus
    return [cpus, mem, disk, gpus]
