"""Agents' usage reports: what their tasks use, their memory pressure, their revocable estimate.

Rules:
1. A report is a message of the agent like any other: on its current stream it counts as a
   heartbeat (membership.py rule 4), otherwise it is dropped.
2. The report is kept on the agent (``AgentRecord.usage``) and each task's part on the task
   (``TaskRecord.usage``); a task the agent does not hold is skipped. The views, metrics and
   ``corral get`` show them.
3. Memory pressure is a placement rule (rules/pressure.py): while the agent reports it, it is
   offered to no framework that wants only BestEffort work, accepts of BestEffort tasks there
   are refused (accepts.py), and explain names it for BestEffort demands. The allocator is
   told with every report of an agent it holds (it ignores a repeat), so an agent attached
   again after a blip is told again. A change is a ``MemoryPressure`` or
   ``MemoryPressureCleared`` event.
4. The revocable estimate is what the agent's revocable offers and tasks may hold
   (revocable.py); when it shrinks below what they already hold, the agent's outstanding
   revocable offers are rescinded (the agent's QoS controller takes back what its tasks
   hold).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from corral.master.core import commands as cmd
from corral.master.core import revocable

if TYPE_CHECKING:
    from corral.master.core import events as ev
    from corral.master.core.state import CoreState

Commands = list[cmd.Command]


def agent_usage(core: CoreState, e: ev.AgentUsageReport) -> Commands:
    agent, out = core.heard_from(e)
    if agent is None:
        return out
    before = agent.usage.pressure if agent.usage is not None else ""
    agent.usage = e.usage
    for u in e.tasks:
        task = agent.tasks.get((u.framework_id, u.task_id))
        if task is not None:
            task.usage = u
    now = e.usage.pressure
    if agent.in_allocator:
        core.allocator.set_agent_pressure(agent.agent_id, bool(now))
    if bool(now) != bool(before):
        if now:
            out.append(
                core.cluster_event(
                    e,
                    "agent_memory_pressure",
                    agent.agent_id,
                    f"{e.usage.pressure_message}: no BestEffort work is placed on it",
                )
            )
        else:
            out.append(
                core.cluster_event(
                    e,
                    "agent_memory_pressure_cleared",
                    agent.agent_id,
                    f"available {e.usage.mem_available:.0f} of {e.usage.mem_total:.0f} MiB",
                )
            )
    if e.usage.revocable_cpus > 0 or e.usage.revocable_mem > 0:
        core.revocable.lenders.add(agent.agent_id)
    else:
        core.revocable.lenders.discard(agent.agent_id)
    out += revocable.estimate_changed(core, agent, e)
    return out
