"""Agents' membership: an agent registers (checked, then admitted or taken back), is heard from,
loses its stream, is marked UNREACHABLE, and is attached to or detached from the allocator.
Transitions: ``ACTIVE ⇄ UNREACHABLE``, ``RECOVERING → ACTIVE | UNREACHABLE`` (states.py).

Rules:
1. A registration is checked before anything changes: an id the master knows must come from
   the principal that registered it and with its secret; an id it does not know (a restart
   that forgot it) with the secret the shell sealed for that id and the certificate (unless
   ``--adopt-unknown-agents``); either way the principal the agent says its id was issued to
   (its checkpoint's) must be the certificate's (authz.py rule 1). The ACLs must grant the
   agent, the attributes and reservations it claims and its resources (PERMISSION_DENIED);
   reservations are for valid role names (corral.roles) and fit in the agent's resources, and
   the tasks it reports are each named once, in states an agent can know, not running on
   another agent, and live ones within its resources (INVALID_ARGUMENT). An agent registering
   without an id (a new one) reports none. Only an agent whose tasks the master cannot know
   (its record read from the registry, or any after a master restart that forgot every agent)
   has the live tasks it reports that the master does not hold taken in; any other is killed
   (reconcile.py).
2. A new agent (or any after a master restart) keeps the secret it presents with its id, else
   gets a new one. A known agent re-registering is detached first (its old stream closed) and
   becomes ACTIVE again.
3. A registration is told its heartbeat interval (ticks.py rule 3's count, a new agent with
   the growth headroom, so a growing cluster's tick re-tells it later) and starts its
   deadline. Then its tasks are reconciled
   (reconcile.py), it is attached, its record is persisted if it changed (mirror.py), and the
   questions held while it was RECOVERING are answered.
4. Any message counts as a heartbeat; an UNREACHABLE agent heard from on the stream it kept is
   asked to re-register (the core's ``heard_from``, for heartbeats and statuses alike).
5. Detached (its stream closed, a re-registration, UNREACHABLE): its offers are rescinded, the
   nominations on it released, and it leaves the allocator with its tasks' charges (the core's
   rule 3). Attached: its resources and its tasks' charges go back in, and it is held if its
   launches are at the bound (admission.py) or it is cordoned (maintenance.py).
6. Marked UNREACHABLE (by the core's tick, rate-limited): detached, its tasks reported
   UNREACHABLE to partition-aware frameworks and LOST to the others, and the questions held
   while it was RECOVERING answered; the frameworks that had tasks on it are told the agent is
   lost (losses.py). It is forgotten after a while (pruning.py).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from corral.limits import echo
from corral.master.core import (
    authz,
    losses,
    maintenance,
    mirror,
    nominations,
    reconcile,
)
from corral.master.core import commands as cmd
from corral.master.core.clocks import GROWTH_HEADROOM, heartbeat_interval_for
from corral.master.core.records import AgentRecord
from corral.master.core.refusals import CallRejected, Refusal, invalid, no_repeats
from corral.master.core.states import AgentState
from corral.master.core.types import TaskReason, TaskState
from corral.resources import Resources
from corral.roles import RoleError, check_role
from corral.tasks import AGENT_REPORTED_STATES

if TYPE_CHECKING:
    from corral.master.core import events as ev
    from corral.master.core.state import CoreState

Commands = list[cmd.Command]


def _check(core: CoreState, e: ev.AgentRegister, agent_id: str) -> None:
    """Refuse (CallRejected) a registration the master cannot believe, before anything
    changes: the agent is told why and no record is made."""
    spec = e.spec
    known = core.agents.get(agent_id)
    if e.tasks and not spec.agent_id:
        raise invalid(
            f"a new agent (registering without an id) reported {len(e.tasks)} tasks; only an "
            "agent re-registering with its id recovers tasks"
        )
    authz.agent_owner(core.acl, e.principal, known, agent_id)
    if spec.agent_id:
        # The id as the agent holds it: issued to its certificate (rule 1).
        authz.agent_identity(core.acl, e, known is None and not core.config.adopt_unknown_agents)
    if known is not None and known.secret and e.secret != known.secret:
        raise CallRejected(
            Refusal.PERMISSION_DENIED,
            f"agent id {echo(agent_id)} is registered to another agent "
            "(the secret does not match); register without an id to join as a new agent",
        )
    authz.agent_gate(core.acl, e.principal, spec)
    reserved = Resources()
    for role, reservation in spec.reservations.items():
        try:
            check_role(role)
        except RoleError as exc:
            raise invalid(f"a reservation's role: {exc}") from None
        reserved = reserved + reservation
    short = spec.resources.exceeded_by(reserved)
    if short:
        raise invalid(
            f"reservations ({reserved}) exceed the agent's resources ({spec.resources}) "
            f"in {', '.join(short)}"
        )
    no_repeats([f"{t.framework_id}/{t.spec.task_id}" for t in e.tasks], "reported task")
    live = Resources()
    for t in e.tasks:
        state = t.status.state
        if state not in AGENT_REPORTED_STATES:
            raise invalid(
                f"reported task {echo(t.spec.task_id)} is {state.name}, "
                "a state only the master sets"
            )
        fw = core.frameworks.get(t.framework_id)
        other = fw.tasks.get(t.spec.task_id) if fw is not None else None
        if other is not None and other.agent_id != agent_id:
            raise invalid(f"reported task {echo(t.spec.task_id)} runs on agent {other.agent_id}")
        if not state.terminal:
            live = live + Resources.from_scalars(t.spec.resources.scalars())
    short = spec.resources.exceeded_by(live)
    if short:
        raise invalid(
            f"reported live tasks use {live}, more than the agent's {spec.resources}, "
            f"in {', '.join(short)}"
        )


def register(core: CoreState, e: ev.AgentRegister) -> Commands:
    """An agent's REGISTER (rules 1-3)."""
    sid, now = e.stimulus_id, e.now
    agent_id = e.spec.agent_id or e.new_agent_id
    _check(core, e, agent_id)
    # The principal is the certificate's, whatever the message said (authz.py rule 1).
    spec = replace(e.spec, agent_id=agent_id, principal=e.principal.name)
    out: Commands = []
    agent = core.agents.get(agent_id)
    was_unreachable = agent is not None and agent.state is AgentState.UNREACHABLE
    # Reported tasks the master does not hold are taken in only when it cannot know them:
    # the agent's record came from the registry, or the master forgot every agent (rule 1).
    trusted = not agent.tasks_known if agent is not None else not core.knows_every_agent
    if agent is None:
        agent = AgentRecord(
            spec=spec,
            state=AgentState.ACTIVE,
            connection=e.connection,
            registered_at=now,
            last_seen=now,
            free_ports=spec.resources.ports,
            heartbeat_interval=core.config.agent_heartbeat_interval,
            # An id the master does not know (a new agent, or any agent after a master
            # restart) keeps the secret it presents; without one it gets a new one.
            secret=e.secret if e.spec.agent_id and e.secret else e.new_secret,
        )
        core.agent_table.add(agent)
        kind = "agent_added"
        was = AgentState.ACTIVE
        headroom = GROWTH_HEADROOM  # a new agent is the cluster growing (ticks.py rule 3)
    else:
        if agent.connection is not None and agent.connection != e.connection:
            out.append(
                cmd.CloseAgentStream(
                    stimulus_id=sid, connection=agent.connection, reason="re-registered"
                )
            )
        out += detach(core, agent, e, "the agent re-registered")
        was = core.agent_table.move(agent, AgentState.ACTIVE, now)
        agent.spec = spec
        core.agent_table.resized(agent)
        core.agent_table.connect(agent, e.connection)
        agent.last_seen = now
        kind = "agent_reregistered"
        headroom = 1.0
    # The interval the tick keeps agents to (ticks.py rule 3), so the next tick re-tells none;
    # a new agent is told the tick's headroom for growth with it.
    agent.heartbeat_interval = heartbeat_interval_for(core.config, core.agent_table, headroom)
    agent.interval_set_at = now
    core.clocks.watch_deadline(core.config, agent)
    core.clocks.told(agent, core.agents)
    core.clocks.retell_intervals()
    out.append(
        cmd.SendRegistered(
            stimulus_id=sid,
            connection=e.connection,
            agent_id=agent_id,
            heartbeat_interval=agent.heartbeat_interval,
            secret=agent.secret,
            epoch=core.epoch,
            principal=agent.spec.principal,
        )
    )
    out += reconcile.agent_tasks(core, agent, e, was_unreachable, trusted)
    out += maintenance.reregistered(core, agent, e)  # a draining agent's tasks are killed
    agent.tasks_known = True
    agent.peer = e.principal
    agent.free_ports = core.book.free_ports(agent)
    _attach(core, agent)
    mirror.mark_agent(core, agent)
    out.append(core.cluster_event(e, kind, agent_id, f"{spec.hostname} {spec.resources}"))
    if was is AgentState.RECOVERING:
        out += reconcile.answer_held(core, agent_id, e)
    return out


def heartbeat(core: CoreState, e: ev.AgentHeartbeat) -> Commands:
    """Rule 4."""
    return core.heard_from(e)[1]


def stream_closed(core: CoreState, e: ev.AgentStreamClosed) -> Commands:
    """The agent's stream closed: detached until it registers again (rule 5)."""
    agent = core.agents.get(e.agent_id)
    if agent is None or agent.connection != e.connection:
        return []
    core.agent_table.disconnect(agent)  # still ACTIVE, still counted: no interval re-told
    out = detach(core, agent, e, "the agent disconnected")
    out.append(core.cluster_event(e, "agent_disconnected", agent.agent_id, "stream closed"))
    return out


def unreachable(core: CoreState, agent: AgentRecord, e: ev.Event, why: str) -> Commands:
    """Mark the agent UNREACHABLE (rule 6)."""
    was = core.agent_table.move(agent, AgentState.UNREACHABLE, e.now)
    mirror.mark_agent(core, agent)
    told = losses.concerned(core, agent)
    out = detach(core, agent, e, "the agent is unreachable")
    for task in list(agent.tasks.values()):
        if task.state is TaskState.UNREACHABLE:
            continue
        fw = core.frameworks.get(task.framework_id)
        aware = fw is not None and fw.spec.partition_aware
        state = TaskState.UNREACHABLE if aware else TaskState.LOST
        out += core.master_status(
            task, state, TaskReason.AGENT_UNREACHABLE, "the agent is unreachable", e
        )
    out += losses.agent_lost(told, agent, e, removed=False, message=f"unreachable: {why}")
    out.append(core.cluster_event(e, "agent_unreachable", agent.agent_id, why))
    core.clocks.retell_intervals()  # no longer expected back (ticks.py rule 3)
    if was is AgentState.RECOVERING:
        out += reconcile.answer_held(core, agent.agent_id, e)
    return out


def detach(core: CoreState, agent: AgentRecord, e: ev.Event, why: str) -> Commands:
    """Rule 5: rescind the agent's offers and take it out of the allocator."""
    out = core.book.rescind_agent(agent, e.stimulus_id)
    out += core.rescinded_events(out, e, f"of agent {agent.agent_id} rescinded: {why}")
    if agent.in_allocator:
        nominations.release_agent(core, agent.agent_id)
        for task in agent.tasks.values():
            core.allocator.recover(task.framework_id, agent.agent_id, task.spec.resources.scalars())
        core.allocator.remove_agent(agent.agent_id)
        agent.in_allocator = False
        core.largest.changed()
    return out


def _attach(core: CoreState, agent: AgentRecord) -> None:
    """Rule 5: the agent and its tasks' charges go (back) into the allocator."""
    spec = agent.spec
    core.allocator.add_agent(
        agent.agent_id,
        spec.resources.scalars(),
        spec.attributes,
        spec.taints,
        {role: r.scalars() for role, r in spec.reservations.items()} or None,
    )
    agent.in_allocator = True
    if agent.maintenance is not None:
        core.allocator.set_agent_draining(agent.agent_id, True)  # maintenance.py rule 1
    core.largest.changed()
    core.freed(agent)
    for task in agent.tasks.values():
        core.allocator.allocate(task.framework_id, agent.agent_id, task.spec.resources.scalars())
    # Back with launches still in flight (a reconnect, a re-registration): held as after an
    # accept if they are at the bound (admission.py).
    core.holds.launched(agent)
