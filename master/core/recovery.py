"""The core rebuilt from the registry (durable.py) when a restarted master starts: the
``Recover`` event, its first.

Rules:
1. ``recover`` is refused (FAILED_PRECONDITION) once the core knows any agent or framework.
   Operators' weights, quotas and priority classes read from the registry win over the flags'
   (a class the flags have since made the global default stays).
2. Frameworks come back DISCONNECTED and suppressed; one connected when the master stopped
   counts its failover timeout from the restart (the restart is not its failure), capped at
   ``max_failover_timeout`` (subscriptions.py, rule 1). Removed ones come back REMOVED, oldest
   first, so the bound on those kept forgets the oldest.
3. Agents come back RECOVERING (UNREACHABLE if they were, oldest first in the order that
   forgets them: pruning.py), out of the allocator until they re-register: their tasks are
   learned from their registrations (reconcile.py). The core marks UNREACHABLE those that do
   not re-register within ``agent_reregister_timeout``.
4. The registry's mirror (mirror.py) starts as what was read.
5. The allocator makes room for every agent and live framework read, before adding any
   (``Allocator.reserve``): the agents re-register after the frameworks are in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from corral.master.core import commands as cmd
from corral.master.core import mirror, operator_settings, subscriptions
from corral.master.core.records import AgentRecord, FrameworkRecord
from corral.master.core.refusals import CallRejected, Refusal
from corral.master.core.states import AgentState, FrameworkState

if TYPE_CHECKING:
    from corral.master.core import events as ev
    from corral.master.core.state import CoreState

Commands = list[cmd.Command]


def recover(core: CoreState, e: ev.Recover) -> Commands:
    """Rebuild from the registry (rules 1-4). The core starts the re-registration timeout of
    the agents RECOVERING (rule 3)."""
    if core.agents or core.frameworks:
        raise CallRejected(
            Refusal.FAILED_PRECONDITION, "the registry is read before anything else happens"
        )
    state = e.state
    core.knows_every_agent = state.durable and not core.config.adopt_unknown_agents
    # The registry holds what operators set; it wins over the flags' values at start.
    for role, weight in state.weights:
        operator_settings.apply_weight(core, role, weight)
    for role, quota in state.quotas:
        operator_settings.apply_quota(core, role, quota)
    for name, pc in state.priority_classes:
        if pc is not None:
            core.priority.set(pc)
        elif name in core.priority.classes and name != core.priority.default:
            # (A class the flags have since made the global default stays.)
            core.priority.delete(name)
    # Every agent in the registry may come back, after the frameworks are in.
    core.allocator.reserve(
        len(state.agents), sum(1 for f in state.frameworks if f.removed_at is None)
    )
    # Removed ones oldest first, so the bound on those kept forgets the oldest.
    ordered = sorted(
        state.frameworks,
        key=lambda f: (f.removed_at is None, f.removed_at or 0.0, f.registered_at),
    )
    for fentry in ordered:
        fw_id = fentry.framework_id
        removed = fentry.removed_at is not None
        # A framework connected when the master stopped starts its failover timeout now:
        # the master's restart is not its failure.
        since = fentry.disconnected_at if fentry.disconnected_at is not None else e.now
        fw = FrameworkRecord(
            spec=fentry.spec if removed else subscriptions.capped(core, fentry.spec),
            state=FrameworkState.REMOVED if removed else FrameworkState.DISCONNECTED,
            stream_id="",
            connection=None,
            registered_at=fentry.registered_at,
            disconnected_at=None if removed else since,
            removed_at=fentry.removed_at,
        )
        core.frameworks[fw_id] = fw
        core.durable_frameworks[fw_id] = fentry
        if removed:
            subscriptions.keep_removed(core, fw_id)
            continue
        subscriptions.add_to_allocator(core, fw_id, fentry.spec)
        core.allocator.set_suppressed(fw_id, True)
        mirror.mark_framework(core, fw)
    agents: list[AgentRecord] = []
    for aentry in state.agents:
        unreachable = aentry.unreachable_at is not None
        agent = AgentRecord(
            spec=aentry.spec,
            state=AgentState.UNREACHABLE if unreachable else AgentState.RECOVERING,
            connection=None,
            registered_at=aentry.registered_at,
            last_seen=e.now,
            free_ports=aentry.spec.resources.ports,
            heartbeat_interval=core.config.agent_heartbeat_interval,
            secret=aentry.secret,
            unreachable_at=aentry.unreachable_at,
            maintenance=aentry.maintenance,
        )
        agents.append(agent)
        core.durable_agents[aentry.agent_id] = aentry
    core.agent_table.recovered(agents)
    return [
        core.cluster_event(
            e,
            "master_recovered",
            core.master_id,
            f"{len(state.agents)} agents ({core.recovering} to re-register within "
            f"{core.config.agent_reregister_timeout:g}s), {len(state.frameworks)} frameworks",
        )
    ]
