"""Agents and custom executors lost: who is told (Mesos' FAILURE event, pymesos' ``slaveLost``
and ``executorLost``). The tasks' own statuses (LOST, UNREACHABLE, GONE, FAILED) are sent as
ever; these say that the agent or the executor itself is gone.

Rules:
1. An agent marked UNREACHABLE (membership.py rule 6, a RECOVERING agent that never came back
   included) or deleted by an operator (maintenance.py rule 5) is told to every connected
   framework that had a task on it when it was lost, one ``SendAgentLost`` each, in framework
   id order. Mesos tells every connected framework; Corral tells those it concerns, so a loss
   wave on a large cluster costs one message per framework that had work there, not one per
   framework in the cluster. An agent forgotten later (pruning.py) is not told again, as Mesos
   says nothing when its registry forgets an unreachable agent.
2. A custom executor that ended (``AgentExecutorTerminated``, from its agent's current stream)
   is told to its framework if connected, as a ``SendExecutorTerminated`` with the agent id of
   the stream it came on. Like a framework message (master/framework_messages.py) it is best
   effort and changes no state: the master keeps no record of executors, so it does not check
   that the framework had one there (agents are authenticated).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from corral.master.core import commands as cmd
from corral.master.core.records import AgentRecord

if TYPE_CHECKING:
    from corral.master.core import events as ev
    from corral.master.core.state import CoreState

Commands = list[cmd.Command]


def concerned(core: CoreState, agent: AgentRecord) -> list[str]:
    """Rule 1: the connected frameworks with a task on the agent, by id. Asked before the
    tasks' statuses end them."""
    ids = {framework_id for framework_id, _ in agent.tasks}
    return sorted(
        i for i in ids if (fw := core.frameworks.get(i)) is not None and fw.connection is not None
    )


def agent_lost(
    framework_ids: list[str], agent: AgentRecord, e: ev.Event, removed: bool, message: str
) -> Commands:
    """Rule 1: tell ``framework_ids`` (``concerned``'s answer) that the agent is gone."""
    return [
        cmd.SendAgentLost(
            stimulus_id=e.stimulus_id,
            framework_id=framework_id,
            agent_id=agent.agent_id,
            hostname=agent.spec.hostname,
            removed=removed,
            message=message,
        )
        for framework_id in framework_ids
    ]


def executor_terminated(core: CoreState, e: ev.AgentExecutorTerminated) -> Commands:
    """Rule 2."""
    agent, out = core.heard_from(e)
    if agent is None:
        return out
    fw = core.frameworks.get(e.framework_id)
    if fw is None or fw.connection is None:
        return out
    out.append(
        cmd.SendExecutorTerminated(
            stimulus_id=e.stimulus_id,
            framework_id=e.framework_id,
            agent_id=agent.agent_id,
            executor_id=e.executor_id,
            status=e.status,
            message=e.message,
        )
    )
    return out
