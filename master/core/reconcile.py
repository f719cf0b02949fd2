"""Reconciliation: what the master holds of tasks made to agree with what an agent reports when
it registers, and answered to a framework that asks (the core's rules 4 and 8 in detail).

Rules:
1. A registering agent lists its tasks (``agent_tasks``). A task the master believed ran there
   that the agent does not list ended: DROPPED if it was STAGING, else GONE for a
   partition-aware framework and LOST for the others (reason AGENT_RESTARTED).
2. A listed task the master already declared ended (its framework is removed, it is among the
   ``completed``, or it was reported LOST while its agent was UNREACHABLE) is killed: a task
   ends once. So is a live task the master does not hold from an agent whose tasks it has
   held since the agent registered with it (``trusted`` False, membership.py rule 1): it was
   never launched there, and must not count toward any framework's demand. A listed task
   that ended is remembered as ended until the agent resends its status; any other the master
   does not hold is taken in as the agent reports it.
3. A held task in another live state moves to it if the transition is legal; one the master
   reported UNREACHABLE (its agent is back, as in Mesos) is told to its framework again,
   without a uuid. A task whose kill was asked for is killed again.
4. A framework asks about all its live tasks or names some (``answer_call``; a task named twice
   is answered once). A task the master knows, live or completed, is answered with its last
   status, without a uuid and with reason RECONCILIATION; an unknown one is UNREACHABLE (LOST
   for a framework not partition-aware) on an UNREACHABLE agent, else UNKNOWN (LOST). A LOST
   answer on an UNREACHABLE agent is remembered as ended, so the agent cannot bring it back.
5. After a restart (rule 8), a question about a task the master does not know, on an agent
   still RECOVERING (or naming no agent while any is), is held in ``core.held`` and answered
   (``answer_held``) when its agent re-registers or is declared UNREACHABLE, and those naming
   no agent once none is RECOVERING. A framework not SUBSCRIBED by then is not answered: it
   reconciles again when it re-subscribes.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import TYPE_CHECKING

from corral.limits import echo
from corral.master.core import commands as cmd
from corral.master.core import subscriptions
from corral.master.core.records import AgentRecord, FrameworkRecord, TaskRecord
from corral.master.core.states import (
    TASK_TRANSITIONS,
    AgentState,
    FrameworkState,
    IllegalTransition,
    check,
)
from corral.master.core.statuses import forward
from corral.master.core.types import Status, TaskReason, TaskSource, TaskSpec, TaskState
from corral.resources import Resources

if TYPE_CHECKING:
    from corral.master.core import events as ev
    from corral.master.core.state import CoreState

Commands = list[cmd.Command]


def agent_tasks(
    core: CoreState,
    agent: AgentRecord,
    e: ev.AgentRegister,
    was_unreachable: bool = False,
    trusted: bool = True,
) -> Commands:
    """Merge the tasks an agent reports with what the master believed ran there.

    An agent back from UNREACHABLE (as in Mesos): tasks of partition-aware frameworks were
    reported UNREACHABLE and go back to what the agent reports, and the framework is told;
    tasks of the others were reported LOST, so any it still runs are killed, whether or not
    the ended task is still among the ``completed`` the master keeps."""
    sid = e.stimulus_id
    out: Commands = []
    reported = {(t.framework_id, t.spec.task_id): t for t in e.tasks}
    for key, known in list(agent.tasks.items()):
        if key in reported:
            continue
        fw = core.frameworks.get(known.framework_id)
        aware = fw is not None and fw.spec.partition_aware
        if known.state is TaskState.STAGING:
            state = TaskState.DROPPED
        else:
            state = TaskState.GONE if aware else TaskState.LOST
        out += core.master_status(
            known, state, TaskReason.AGENT_RESTARTED, "the agent re-registered without it", e
        )
    for key, rt in reported.items():
        fw_id, task_id = key
        task = agent.tasks.get(key)
        if task is None and not trusted and not rt.status.state.terminal:
            if key not in core.completed:
                out.append(
                    core.cluster_event(
                        e,
                        "reported_task_refused",
                        task_id,
                        f"agent {agent.agent_id} reported a task of framework {fw_id} that "
                        "the master never launched there: killed",
                    )
                )
            out.append(
                cmd.SendKill(
                    stimulus_id=sid, agent_id=agent.agent_id, framework_id=fw_id, task_id=task_id
                )
            )
            continue
        fw = core.frameworks.get(fw_id)
        if fw is None:
            fw = subscriptions.placeholder(core, fw_id, e.now, rt.owner)
        else:
            subscriptions.reported_owner(core, fw, rt.owner)
        if rt.status.state.terminal and task is None:
            # Its terminal status is resent by the agent and handled as an update; until
            # then the master knows how it ended (a reconciliation may ask right now).
            if key not in core.completed:
                _remember_ended(core, rt.spec, fw_id, agent.agent_id, rt.status, e.now)
            continue
        declared_lost = task is None and (
            key in core.completed or (was_unreachable and not fw.spec.partition_aware)
        )
        if fw.state is FrameworkState.REMOVED or declared_lost:
            # The master already declared this task ended (its framework is gone, or it was
            # reported LOST while the agent was away): it must not keep running.
            out.append(
                cmd.SendKill(
                    stimulus_id=sid,
                    agent_id=agent.agent_id,
                    framework_id=fw_id,
                    task_id=task_id,
                )
            )
            continue
        if task is None:
            task = TaskRecord(
                spec=rt.spec,
                framework_id=fw_id,
                agent_id=agent.agent_id,
                state=rt.status.state,
                status=rt.status,
                launched_at=e.now,
            )
            core.tasks.add(fw, agent, task)
            core.pacer.launching(task)  # dropped at the next tick unless still launching
            if not core.priority.known(rt.spec.priority_class):
                out.append(_unknown_class(core, task, e))
        elif rt.status.state is not task.state and not rt.status.state.terminal:
            was = task.state
            try:
                task.state = check(TASK_TRANSITIONS, "task", task_id, task.state, rt.status.state)
                task.status = rt.status
                core.pacer.launching(task)
            except IllegalTransition:
                pass
            else:
                if was is TaskState.UNREACHABLE:
                    # The framework was told UNREACHABLE by the master; the agent's own
                    # status for the state it is back in was likely acknowledged long ago.
                    back = replace(
                        rt.status,
                        uuid=b"",
                        reason=TaskReason.RECONCILIATION,
                        message="its agent re-registered",
                        timestamp=e.now,
                    )
                    out += forward(core, fw, back, e)
        if task.kill_requested:
            out.append(
                cmd.SendKill(
                    stimulus_id=sid,
                    agent_id=agent.agent_id,
                    framework_id=fw_id,
                    task_id=task_id,
                )
            )
    return out


def answer_call(core: CoreState, e: ev.Reconcile) -> Commands:
    """A framework's RECONCILE (rules 4 and 5)."""
    fw = core.caller(e)
    statuses: list[Status] = []
    if not e.tasks:
        statuses = [_reconciled(t.status) for t in fw.tasks.values()]
    else:
        # A task named twice is answered once.
        for task_id, agent_id in dict.fromkeys(e.tasks):
            if core.recovering and _unknown_yet(core, fw, task_id, agent_id):
                core.held.setdefault(agent_id, {})[(fw.framework_id, task_id, agent_id)] = None
                continue
            statuses.append(_answer(core, fw, task_id, agent_id, e.now))
    if not statuses:
        return []
    return [
        cmd.SendUpdates(
            stimulus_id=e.stimulus_id, framework_id=fw.framework_id, statuses=tuple(statuses)
        )
    ]


def _reconciled(status: Status) -> Status:
    return replace(status, uuid=b"", reason=TaskReason.RECONCILIATION)


def _known_task(core: CoreState, fw: FrameworkRecord, task_id: str) -> TaskRecord | None:
    return fw.tasks.get(task_id) or core.completed.get((fw.framework_id, task_id))


def _unknown_yet(core: CoreState, fw: FrameworkRecord, task_id: str, agent_id: str) -> bool:
    """Rule 5: a task the master does not know, on an agent (or, naming none, on any agent)
    that may still re-register with it."""
    if _known_task(core, fw, task_id) is not None:
        return False
    if not agent_id:
        return True
    agent = core.agents.get(agent_id)
    return agent is not None and agent.state is AgentState.RECOVERING


def _answer(
    core: CoreState, fw: FrameworkRecord, task_id: str, agent_id: str, now: float
) -> Status:
    """What the master says of one task a framework asks about."""
    task = _known_task(core, fw, task_id)
    if task is not None:
        return _reconciled(task.status)
    agent = core.agents.get(agent_id) if agent_id else None
    aware = fw.spec.partition_aware
    if agent is not None and agent.state is AgentState.UNREACHABLE:
        state = TaskState.UNREACHABLE if aware else TaskState.LOST
        message = "the agent is unreachable"
    else:
        state = TaskState.UNKNOWN if aware else TaskState.LOST
        message = "the master does not know this task"
    answer = Status(
        task_id=task_id,
        framework_id=fw.framework_id,
        agent_id=agent_id,
        state=state,
        reason=TaskReason.RECONCILIATION,
        message=message,
        source=TaskSource.MASTER,
        timestamp=now,
    )
    if state is TaskState.LOST and agent is not None and agent.state is AgentState.UNREACHABLE:
        # The framework is told the task ended: it must stay ended (a task ends once), so
        # the master remembers it, and what its agent says of it later is not passed on.
        spec = TaskSpec(task_id=task_id, name="", resources=Resources())
        _remember_ended(core, spec, fw.framework_id, agent_id, answer, now)
    return answer


def _unknown_class(core: CoreState, task: TaskRecord, e: ev.AgentRegister) -> cmd.ClusterEvent:
    """Demands' rule 5: the task counts as the global default's class, said once, here."""
    default = core.priority.resolve("")
    return core.cluster_event(
        e,
        "priority_class_unknown",
        task.task_id,
        f"task of framework {task.framework_id} on agent {task.agent_id} names unknown "
        f"priority class {echo(task.spec.priority_class)}: it counts as the global default "
        f"{echo(default.name)} ({default.value})",
    )


def _remember_ended(
    core: CoreState,
    spec: TaskSpec,
    framework_id: str,
    agent_id: str,
    status: Status,
    now: float,
) -> None:
    """Record an ended task the master held no live record of (a task ends once)."""
    core.finish_task(
        TaskRecord(
            spec=spec,
            framework_id=framework_id,
            agent_id=agent_id,
            state=status.state,
            status=status,
            launched_at=now,
        )
    )


def answer_held(core: CoreState, agent_id: str, e: ev.Event) -> Commands:
    """Rule 5: the agent's recovery ended (it re-registered or is UNREACHABLE): answer the
    questions held for it, and those naming no agent once no agent is RECOVERING."""
    questions = list(core.held.pop(agent_id, {}))
    if not core.recovering:
        questions += core.held.pop("", {})
    per_fw: dict[str, list[Status]] = defaultdict(list)
    for fw_id, task_id, asked_agent in questions:
        fw = core.frameworks.get(fw_id)
        if fw is None or fw.state is not FrameworkState.SUBSCRIBED:
            continue  # it reconciles again when it re-subscribes
        per_fw[fw_id].append(_answer(core, fw, task_id, asked_agent, e.now))
    return [
        cmd.SendUpdates(stimulus_id=e.stimulus_id, framework_id=fw_id, statuses=tuple(sts))
        for fw_id, sts in per_fw.items()
    ]
