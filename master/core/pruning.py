"""Unreachable agents forgotten: after ``registry_max_agent_age``, and the oldest first past
``registry_max_agent_count`` (Mesos' ``registry_max_agent_age`` and
``registry_max_agent_count``). Without it every agent that ever went away would stay in memory,
in every ``corral get agents`` and in the registry a restart reads, forever (issue #30).

Rules:
1. ``core.agent_table.unreachable`` holds every UNREACHABLE agent's id with when it became so,
   oldest first (agent_table.py keeps it as agents move, and fills it from the registry oldest
   first).
2. At each tick (ticks.py), an agent UNREACHABLE for longer than the age is forgotten, then the
   oldest while more than the count are left. Only the front of the order is looked at, so a
   tick with nothing due costs nothing.
3. Forgotten: the agent's record leaves the core and the registry (``RemoveAgent``), and so do
   the tasks the master kept UNREACHABLE on it (partition-aware frameworks' tasks; the others'
   were reported LOST and ended). As in Mesos, nothing is sent: the master no longer knows those
   tasks, and a framework that asks about one is answered UNKNOWN (reconcile.py). A cluster
   event ``agent_pruned`` says why, and how many tasks went with it.
4. A forgotten agent that comes back registers as an agent with an id the master does not
   know, keeping its secret. With a registry (``core.knows_every_agent``) the live tasks it
   reports were never launched there as far as the master knows: they are killed, with a
   ``reported_task_refused`` event (membership.py rule 1, reconcile.py rule 2). A master
   without a registry cannot tell and takes them in, as after its own restart.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from corral.master.core import commands as cmd
from corral.master.core.durable import RemoveAgent
from corral.master.core.records import AgentRecord

if TYPE_CHECKING:
    from corral.master.core import events as ev
    from corral.master.core.state import CoreState

Commands = list[cmd.Command]


def prune(core: CoreState, e: ev.Tick) -> Commands:
    """Rule 2: forget the agents past the age, then the oldest past the count."""
    order = core.agent_table.unreachable
    cfg = core.config
    out: Commands = []
    while order:
        agent_id, since = next(iter(order.items()))
        if e.now - since > cfg.registry_max_agent_age:
            why = (
                f"unreachable for more than {cfg.registry_max_agent_age:g}s "
                "(--registry-max-agent-age)"
            )
        elif len(order) > cfg.registry_max_agent_count:
            why = (
                f"the oldest of {len(order)} unreachable agents, more than "
                f"{cfg.registry_max_agent_count} (--registry-max-agent-count)"
            )
        else:
            break
        del order[agent_id]
        agent = core.agents.get(agent_id)
        if agent is not None:
            out.append(_forget(core, agent, e, why))
    return out


def _forget(core: CoreState, agent: AgentRecord, e: ev.Tick, why: str) -> cmd.ClusterEvent:
    """Rule 3."""
    for key in agent.tasks:
        core.victim_of.pop(key, None)
    tasks = core.tasks.forget_agent(agent, core.frameworks)
    core.agent_table.remove(agent.agent_id)
    core.durable_agents.pop(agent.agent_id, None)
    core.changes.append(RemoveAgent(agent.agent_id))
    forgotten = f"; {tasks} unreachable tasks forgotten with it" if tasks else ""
    return core.cluster_event(
        e, "agent_pruned", agent.agent_id, f"{agent.spec.hostname} forgotten: {why}{forgotten}"
    )
