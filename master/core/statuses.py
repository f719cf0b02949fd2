"""Task statuses from agents: checked, applied to the tasks, forwarded to their frameworks, and
kept until acknowledged (the core's rules 4 and 5 in detail).

Rules:
1. An agent speaks only for its own tasks, in states it can know (AGENT_REPORTED_STATES). A
   status in a state only the master sets, of a task launched on another agent, of a live task
   it was never given, or of a task that already ended in another state is not believed; nor is
   an illegal transition. The agent is sent the acknowledgement (so it stops resending it) and
   a ``status_ignored`` event says why. A status of an unknown or removed framework is
   acknowledged to the agent and dropped.
2. An UNREACHABLE agent is not believed either: its stream is closed so that it re-registers
   (the core's ``ask_to_reregister``) and resends what it has not had acknowledged.
3. A preempted task's KILLED reaches its framework with reason PREEMPTED and its preemptor's
   message (the core's rule 9), re-encoded rather than the agent's message passed on, unless
   its agent had already ended it for a cause of its own (rule 6): the first cause is the
   cause, and preemption is never blamed for an eviction, nor eviction for a preemption; a
   task an operator killed or drained, with reason KILLED_BY_OPERATOR or AGENT_DRAINING and
   who asked (operator_actions.py, maintenance.py).
4. A status with a uuid is kept in its framework's ``pending`` until acknowledged (resent by
   the core's ticks); when they reach ``max_framework_pending_statuses`` the framework is
   offered nothing (admission.py). ``forward`` sends one status the same way. The framework's
   acknowledgements (``acknowledge``) each name a uuid, at most once per call; each goes to
   the agent the status came from (so it stops resending it), and one that takes the framework
   back under the bound lets it be offered again.
5. The work is batched per event, since it runs for every status of every agent: one UPDATE
   per framework, one acknowledgement command per agent, and one allocator call for the tasks
   that ended with one entry per (framework, agent); their live-task tallies move once per
   kind of task (task_table.py rule 1), both before the event's end.
6. A task its agent ended on its own (reason EVICTED, REVOCABLE_RESOURCES_RECLAIMED or
   MEMORY_LIMIT) also makes an ``Evicted``, ``Reclaimed`` or ``OOMKilled`` event with the
   agent's message (the pressure and its figures), beside the ``TaskKilled``/``TaskFailed``.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from corral.limits import echo
from corral.master.allocator.interface import Scalars
from corral.master.core import admission
from corral.master.core import commands as cmd
from corral.master.core.records import AgentRecord, FrameworkRecord, PendingStatus
from corral.master.core.refusals import invalid, no_repeats
from corral.master.core.states import (
    TASK_TRANSITIONS,
    FrameworkState,
    IllegalTransition,
)
from corral.master.core.task_table import EndedBatch
from corral.master.core.types import Status, TaskReason, TaskState
from corral.tasks import AGENT_REPORTED_STATES

if TYPE_CHECKING:
    from corral.master.core import events as ev
    from corral.master.core.state import CoreState

Commands = list[cmd.Command]

# Pending statuses resent to a framework at once (one UPDATE message's worth, see outbox.py).
RESEND_BATCH = 5000


# Rule 6: a task its agent ended on its own, and the event that says so.
_AGENT_CAUSES = {
    TaskReason.EVICTED: "task_evicted",
    TaskReason.REVOCABLE_RESOURCES_RECLAIMED: "task_reclaimed",
    TaskReason.MEMORY_LIMIT: "task_memory_limit",
}

# The cluster event kind of a task that ended in each terminal state ("task_finished", ...).
ENDED_KIND = {state: "task_" + state.name.lower() for state in TaskState if state.terminal}


def ended_message(status: Status) -> str:
    """What a task's ``TaskKilled``/``TaskFinished``/... event says: whose task, where, why
    (the status's reason and message: who killed it, the pressure that evicted it, ...) and its
    exit code. ``framework fw on agent a: KILLED_BY_OPERATOR: killed by operator ops at ...``."""
    text = f"framework {status.framework_id} on agent {status.agent_id}"
    if status.reason is not TaskReason.UNSPECIFIED:
        text += f": {status.reason.name}"
    if status.message:  # an agent's free text: an event keeps at most its first 1000 chars
        text += f": {status.message[:1000]}"
    if status.exit_code is not None:
        text += f" (exit code {status.exit_code})"
    return text


def _summed(returns: list[tuple[str, str, Scalars]]) -> list[tuple[str, str, Scalars]]:
    """One entry per (framework, agent), in first-seen order. The tasks a status batch ends
    mostly share both (one offer's tasks), and the allocator's cost is per entry: recover_many
    was the largest item of a status batch with an entry per task (load-test core profile)."""
    sums: dict[tuple[str, str], Scalars] = {}
    for fw_id, agent_id, (cpus, mem, disk, gpus) in returns:
        key = (fw_id, agent_id)
        had = sums.get(key)
        if had is None:
            sums[key] = (cpus, mem, disk, gpus)
        else:
            sums[key] = (had[0] + cpus, had[1] + mem, had[2] + disk, had[3] + gpus)
    return [(fw_id, agent_id, scalars) for (fw_id, agent_id), scalars in sums.items()]


def agent_updates(core: CoreState, e: ev.AgentStatusUpdates) -> Commands:
    """An agent's statuses (rules 1-5); first, they are a heartbeat (membership.py, rule 4)."""
    agent, out = core.heard_from(e)
    if agent is None:
        return out
    orphan_acks: list[tuple[str, str, bytes]] = []
    # This runs for every status of every agent, so the work is batched per event: one
    # UPDATE command per framework and one allocator call for the tasks that ended (one
    # command and one ``recover`` per status were ~15 % of the master in the load test).
    forwards: dict[str, list[Status]] = {}
    ended = EndedBatch()
    frameworks, tasks, agent_id = core.frameworks, agent.tasks, agent.agent_id
    for status in e.statuses:
        fw = frameworks.get(status.framework_id)
        if fw is None or fw.state is FrameworkState.REMOVED:
            if status.uuid:
                orphan_acks.append((status.framework_id, status.task_id, status.uuid))
            continue
        task = tasks.get((status.framework_id, status.task_id))
        if task is None or status.state not in AGENT_REPORTED_STATES:
            # Rare paths: a task this agent does not hold, or a state only the master may
            # set. An agent speaks only for its own tasks, in states it can know.
            problem = _foreign(core, fw, agent, status)
            if problem:
                if status.uuid:
                    orphan_acks.append((status.framework_id, status.task_id, status.uuid))
                out.append(core.cluster_event(e, "status_ignored", status.task_id, problem))
                continue
        if status.agent_id != agent_id:
            status.agent_id = agent_id  # the stream says which agent speaks
        if task is not None:
            state = status.state
            if state is not task.state:
                if state not in TASK_TRANSITIONS[task.state]:
                    exc = IllegalTransition("task", task.task_id, task.state, state)
                    if status.uuid:
                        orphan_acks.append((status.framework_id, status.task_id, status.uuid))
                    out.append(core.cluster_event(e, "status_ignored", task.task_id, str(exc)))
                    continue
                if (
                    task.preempted_by
                    and state is TaskState.KILLED
                    and status.reason not in _AGENT_CAUSES
                ):
                    # Rule 3: the framework learns why (the agent only knows it was
                    # killed); re-encoded, not the agent's message forwarded as is.
                    status.reason = TaskReason.PREEMPTED
                    status.message = task.preempted_by
                    status.wire = None
                elif (
                    task.killed_for is not None
                    and state is TaskState.KILLED
                    and status.reason not in _AGENT_CAUSES
                ):
                    # An operator's kill or a drain (operator_actions.py, maintenance.py).
                    status.reason, status.message = task.killed_for
                    status.wire = None
                core.set_task_state(task, status, e, ended)
                if state.terminal:
                    said = ended_message(status)
                    out.append(core.cluster_event(e, ENDED_KIND[state], task.task_id, said))
                    kind = _AGENT_CAUSES.get(status.reason)
                    if kind is not None:  # rule 6
                        what = f"framework {task.framework_id} on agent {agent_id}: "
                        out.append(core.cluster_event(e, kind, task.task_id, what + status.message))
            else:
                task.status = status
        _keep_pending(core, fw, status, e.now)
        if fw.connection is not None:
            batch = forwards.get(fw.framework_id)
            if batch is None:
                forwards[fw.framework_id] = [status]
            else:
                batch.append(status)
    if ended.uncounted:
        core.tasks.count_removed(ended)
    if ended.returns:
        core.allocator.recover_many(_summed(ended.returns))
    sid = e.stimulus_id
    for fw_id, statuses in forwards.items():
        out.append(cmd.SendUpdates(stimulus_id=sid, framework_id=fw_id, statuses=tuple(statuses)))
    if orphan_acks:
        out.append(
            cmd.SendAgentAcks(
                stimulus_id=e.stimulus_id,
                agent_id=agent.agent_id,
                acknowledgements=tuple(orphan_acks),
            )
        )
    return out


def _foreign(core: CoreState, fw: FrameworkRecord, agent: AgentRecord, status: Status) -> str:
    """Why ``agent`` may not report ``status`` (empty if it may)."""
    if status.state not in AGENT_REPORTED_STATES:
        return (
            f"agent {agent.agent_id} reported state {status.state.name}, which only the master sets"
        )
    known = fw.tasks.get(status.task_id) or core.completed.get((fw.framework_id, status.task_id))
    if known is not None and known.agent_id != agent.agent_id:
        return (
            f"agent {agent.agent_id} reported task {echo(status.task_id)}, "
            f"which was launched on agent {known.agent_id}"
        )
    if known is not None and known.state.terminal and status.state is not known.state:
        # The framework was told how it ended (LOST, while the agent was away): a task
        # ends once, so what the agent says now is not passed on.
        return (
            f"task {echo(status.task_id)} already ended {known.state.name}; "
            f"agent {agent.agent_id}'s {status.state.name} came too late"
        )
    if not status.state.terminal:
        # A live task the master never launched here: the agent learns of its fate when it
        # re-registers (reported tasks are reconciled there), not by being believed now.
        return (
            f"agent {agent.agent_id} reported live task {echo(status.task_id)}, "
            "which it was never given"
        )
    return ""


def _keep_pending(core: CoreState, fw: FrameworkRecord, status: Status, now: float) -> None:
    """Until the framework acknowledges it, a status is resent (at-least-once)."""
    if status.uuid:
        fw.pending[(status.task_id, status.uuid)] = PendingStatus(status, now)
        if len(fw.pending) == core.config.max_framework_pending_statuses:
            core.demands_moved.add(fw.framework_id)  # held: offered nothing (admission.py)


def forward(core: CoreState, fw: FrameworkRecord, status: Status, e: ev.Event) -> Commands:
    """Send one status to its framework, kept until acknowledged (rule 4)."""
    _keep_pending(core, fw, status, e.now)
    if fw.connection is None:
        return []
    return [
        cmd.SendUpdates(stimulus_id=e.stimulus_id, framework_id=fw.framework_id, statuses=(status,))
    ]


def acknowledge(core: CoreState, e: ev.Acknowledge) -> Commands:
    """A framework's acknowledgements (rule 4): forgotten as pending, passed to their agents."""
    fw = core.caller(e)
    for _agent_id, task_id, uuid in e.acknowledgements:
        if not uuid:
            raise invalid(f"acknowledgement of task {echo(task_id)} has no uuid")
    pairs = [(task_id, uuid) for _, task_id, uuid in e.acknowledgements]
    if len(set(pairs)) != len(pairs):  # the text only when one repeats
        no_repeats([f"{t!r}/{u.hex()}" for t, u in pairs], "acknowledgement (task/uuid)")
    per_agent: dict[str, list[tuple[str, str, bytes]]] = defaultdict(list)
    bound = core.config.max_framework_pending_statuses
    if admission.statuses_held(fw, bound) and len(fw.pending) - len(e.acknowledgements) < bound:
        core.demands_moved.add(fw.framework_id)  # may drop below the bound: offered again
    for agent_id, task_id, uuid in e.acknowledgements:
        pending = fw.pending.pop((task_id, uuid), None)
        target = pending.status.agent_id if pending is not None else agent_id
        per_agent[target].append((fw.framework_id, task_id, uuid))
    out: Commands = []
    for agent_id, acks in per_agent.items():
        agent = core.agents.get(agent_id)
        if agent is not None and agent.connection is not None:
            out.append(
                cmd.SendAgentAcks(
                    stimulus_id=e.stimulus_id, agent_id=agent_id, acknowledgements=tuple(acks)
                )
            )
    return out


def resend(fw: FrameworkRecord, pending: list[PendingStatus], e: ev.Event) -> list[cmd.Command]:
    """Send pending statuses again, oldest first, at most RESEND_BATCH (one UPDATE): the
    rest go at later ticks once the stream has drained (Tick.backlogged), so a framework
    with many unacknowledged statuses is never handed them all at once, past its stream's
    bound."""
    batch = pending[:RESEND_BATCH]
    if not batch:
        return []
    for p in batch:
        p.last_sent = e.now
    return [
        cmd.SendUpdates(
            stimulus_id=e.stimulus_id,
            framework_id=fw.framework_id,
            statuses=tuple(p.status for p in batch),
        )
    ]
