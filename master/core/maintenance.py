"""Agents' maintenance (kubectl's cordon, uncordon and drain; Mesos' maintenance primitives) and
forgetting an agent that is gone (kubectl delete node): the Operator API's Cordon, Uncordon,
Drain and DeleteAgent.

Rules:
1. A cordoned agent is offered to nobody: its outstanding offers are rescinded (a gang's
   bundle whole), the preemption holds on it go back, and the allocator holds it out through
   its draining mask (as admission.py holds an agent at its launch bound; the two never undo
   each other: ``held_out``). Preemption picks no victim on it. Its tasks run on.
2. A drain cordons, then kills every live task on the agent, with the grace period given (0:
   at once) or each task's own; each KILLED status reaches its framework with reason
   AGENT_DRAINING and who asked, so a framework re-places the task (its demand is unmet again,
   and the agent is offered to nobody). When its last task has ended the agent is *drained*:
   one cluster event says so. An agent that re-registers while draining has the tasks it
   brings killed (reconcile.py sends the kills of tasks marked ``kill_requested``).
3. Uncordon ends either: the agent is offered again (a drain's kills already sent go on).
4. Maintenance is durable (the agent's registry record): a restarted master keeps the agent
   cordoned or draining.
5. Delete forgets an agent that is not connected: the tasks the master still keeps on it are
   reported GONE (reason AGENT_REMOVED) to their frameworks, which are then told the agent is
   lost (losses.py), questions held for it are answered, and its record leaves the master and
   the registry. If it comes back it registers as an agent the master does not know
   (membership.py rule 1). A connected agent is refused (FAILED_PRECONDITION): drain it and
   stop it first.
6. Each action is checked before anything changes (an unknown agent: NOT_FOUND; a bad grace:
   INVALID_ARGUMENT), answered with the agent's maintenance after it, and recorded as a cluster
   event naming the requester.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from corral.limits import echo
from corral.master.core import commands as cmd
from corral.master.core import losses, mirror, nominations, reconcile, simulation
from corral.master.core.durable import RemoveAgent
from corral.master.core.kills import grace_of, kill_one
from corral.master.core.records import AgentRecord
from corral.master.core.refusals import CallRejected, Refusal
from corral.master.core.states import agent_shown
from corral.master.core.types import CORDONED, DRAINING, Maintenance, TaskReason, TaskState

if TYPE_CHECKING:
    from corral.master.core import events as ev
    from corral.master.core.state import CoreState

Commands = list[cmd.Command]


def _agent(core: CoreState, agent_id: str) -> AgentRecord:
    agent = core.agents.get(agent_id)
    if agent is None:
        raise CallRejected(Refusal.NOT_FOUND, f"unknown agent {echo(agent_id)}")
    return agent


def held_out(core: CoreState, agent: AgentRecord) -> bool:
    """Whether the allocator must hold the agent out: cordoned, or at its launch bound."""
    return agent.maintenance is not None or agent.agent_id in core.holds.held


def drained(agent: AgentRecord) -> bool:
    m = agent.maintenance
    return m is not None and m.mode == DRAINING and not agent.tasks


def _answer(e: ev.Event, agent: AgentRecord, killed: tuple[str, ...] = ()) -> cmd.Answer:
    return cmd.Answer(stimulus_id=e.stimulus_id, value=(agent.maintenance, killed))


def _cordon(core: CoreState, agent: AgentRecord, e: ev.Event) -> Commands:
    """Rule 1: out of offers from now."""
    out = core.book.rescind_agent(agent, e.stimulus_id)
    out += core.rescinded_events(out, e, f"of agent {agent.agent_id} rescinded: it is cordoned")
    if agent.in_allocator:
        nominations.release_agent(core, agent.agent_id)
        core.allocator.set_agent_draining(agent.agent_id, True)
    return out


def cordon(core: CoreState, e: ev.Cordon) -> Commands:
    agent = _agent(core, e.agent_id)
    if agent.maintenance is not None:  # already cordoned or draining: nothing changes
        return [_answer(e, agent)]
    agent.maintenance = Maintenance(CORDONED, e.now, str(e.requester))
    mirror.mark_agent(core, agent)
    out = _cordon(core, agent, e)
    out.append(
        core.cluster_event(
            e,
            "agent_cordoned",
            agent.agent_id,
            f"{agent.spec.hostname}: cordoned by {e.requester}; {len(agent.tasks)} tasks run on",
        )
    )
    out.append(_answer(e, agent))
    return out


def uncordon(core: CoreState, e: ev.Uncordon) -> Commands:
    """Rule 3."""
    agent = _agent(core, e.agent_id)
    if agent.maintenance is None:
        return [_answer(e, agent)]
    was = agent.maintenance.mode
    agent.maintenance = None
    mirror.mark_agent(core, agent)
    if agent.in_allocator and not held_out(core, agent):
        core.allocator.set_agent_draining(agent.agent_id, False)
        core.freed(agent)
    return [
        core.cluster_event(
            e,
            "agent_uncordoned",
            agent.agent_id,
            f"{agent.spec.hostname}: {was}, uncordoned by {e.requester}",
        ),
        _answer(e, agent),
    ]


def drain(core: CoreState, e: ev.Drain) -> Commands:
    """Rule 2, within the disruption budgets (simulation.py rule 6)."""
    agent = _agent(core, e.agent_id)
    if agent.maintenance is None or agent.maintenance.mode != DRAINING:
        denial = simulation.budget_denial(core, {agent.agent_id})
        if denial:
            raise CallRejected(Refusal.FAILED_PRECONDITION, denial)
    grace = grace_of(e.grace_seconds)
    out: Commands = []
    if agent.maintenance is None:
        out += _cordon(core, agent, e)
    agent.maintenance = Maintenance(DRAINING, e.now, str(e.requester), e.grace_seconds)
    mirror.mark_agent(core, agent)
    why = (
        TaskReason.AGENT_DRAINING,
        f"agent {agent.agent_id} ({agent.spec.hostname}) is drained for maintenance by "
        f"{e.requester}",
    )
    killed = []
    for task in list(agent.tasks.values()):
        if task.state.terminal:
            continue
        kill_one(core, task, grace, why, e, out)
        killed.append(task.task_id)
    how = "their own grace periods" if not grace else f"a grace period of {e.grace_seconds:g}s"
    out.append(
        core.cluster_event(
            e,
            "agent_draining",
            agent.agent_id,
            f"{agent.spec.hostname}: drain requested by {e.requester}; {len(killed)} tasks "
            f"killed with {how}",
        )
    )
    if not agent.tasks:
        out.append(_drained_event(core, agent, e))
    out.append(_answer(e, agent, tuple(killed)))
    return out


def reregistered(core: CoreState, agent: AgentRecord, e: ev.Event) -> Commands:
    """Rule 2 for an agent that re-registers while draining (after a master restart its tasks
    are new records): the live tasks it brings that no kill is under way for are killed."""
    m = agent.maintenance
    if m is None or m.mode != DRAINING or agent.connection is None:
        return []
    why = (
        TaskReason.AGENT_DRAINING,
        f"agent {agent.agent_id} ({agent.spec.hostname}) is drained for maintenance by "
        f"{m.requested_by}",
    )
    out: Commands = []
    grace = grace_of(m.grace_seconds)
    for task in list(agent.tasks.values()):
        if not task.state.terminal and not task.kill_requested:
            kill_one(core, task, grace, why, e, out)
    return out


def _drained_event(core: CoreState, agent: AgentRecord, e: ev.Event) -> cmd.ClusterEvent:
    return core.cluster_event(
        e, "agent_drained", agent.agent_id, f"{agent.spec.hostname}: no task left"
    )


def task_ended(core: CoreState, agent: AgentRecord) -> None:
    """A task on ``agent`` ended (CoreState.finish_task): a draining agent may be drained."""
    if drained(agent):
        core.maybe_drained.add(agent.agent_id)


def settle(core: CoreState, e: ev.Event) -> Commands:
    """After an event: the drained event of each agent whose last task ended in it."""
    ids, core.maybe_drained = core.maybe_drained, set()
    return [
        _drained_event(core, agent, e)
        for agent_id in sorted(ids)
        if (agent := core.agents.get(agent_id)) is not None and drained(agent)
    ]


def delete_agent(core: CoreState, e: ev.DeleteAgent) -> Commands:
    """Rule 5."""
    agent = _agent(core, e.agent_id)
    if agent.connection is not None:
        raise CallRejected(
            Refusal.FAILED_PRECONDITION,
            f"agent {agent.agent_id} ({agent.spec.hostname}) is connected: drain it "
            "(corral drain) and stop it before deleting it",
        )
    who = e.requester
    shown = agent_shown(
        agent.state.value,
        agent.connection is not None,
        agent.maintenance.mode if agent.maintenance is not None else "",
        drained(agent),
    )
    told = losses.concerned(core, agent)
    out: Commands = []
    gone = 0
    for task in list(agent.tasks.values()):
        gone += 1
        out += core.master_status(
            task, TaskState.GONE, TaskReason.AGENT_REMOVED, f"its agent was deleted by {who}", e
        )
    agent_id = agent.agent_id
    core.agent_table.remove(agent_id)
    core.durable_agents.pop(agent_id, None)
    core.changes.append(RemoveAgent(agent_id))
    core.holds.held.discard(agent_id)
    core.maybe_drained.discard(agent_id)
    core.clocks.retell_intervals()
    out += reconcile.answer_held(core, agent_id, e)
    out += losses.agent_lost(told, agent, e, removed=True, message=f"deleted by {who}")
    out.append(
        core.cluster_event(
            e,
            "agent_deleted",
            agent_id,
            f"{agent.spec.hostname} ({shown}): deleted by {who}; {gone} tasks reported GONE",
        )
    )
    out.append(cmd.Answer(stimulus_id=e.stimulus_id, value=gone))
    return out
