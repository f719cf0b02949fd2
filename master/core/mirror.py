"""The core's mirror of what the registry holds (the core's rule 7; durable.py says what is
durable), kept up as the records change.

Rules:
1. ``core.durable_agents`` and ``core.durable_frameworks`` hold what the registry holds (as
   read by recovery.py, then as changed). Whatever changes a durable field of a record calls
   ``mark_agent`` or ``mark_framework``; when the record no longer matches its mirror, the
   mirror takes it and a change goes to ``core.changes``, persisted last in the event's
   commands. validate() holds every record to its mirror, so a forgotten mark fails the core's
   tests.
2. Placeholder frameworks (known only from agents' tasks) are not durable.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from corral.master.core.durable import PutAgent, PutFramework, agent_entry, framework_entry
from corral.master.core.records import AgentRecord, FrameworkRecord

if TYPE_CHECKING:
    from corral.master.core.state import CoreState


def mark_agent(core: CoreState, agent: AgentRecord) -> None:
    """Persist the agent's record if it changed since last persisted."""
    entry = agent_entry(agent)
    if core.durable_agents.get(agent.agent_id) != entry:
        core.durable_agents[agent.agent_id] = entry
        core.changes.append(PutAgent(entry))


def mark_framework(core: CoreState, fw: FrameworkRecord) -> None:
    """The same for a framework (rule 2: placeholders are not durable)."""
    if fw.placeholder:
        return
    entry = framework_entry(fw)
    if core.durable_frameworks.get(fw.framework_id) != entry:
        core.durable_frameworks[fw.framework_id] = entry
        core.changes.append(PutFramework(entry))
