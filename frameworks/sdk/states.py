"""Classifying task states and reasons, with the Mesos meaning of each."""

from __future__ import annotations

from corral.v1.common_pb2 import TaskReason, TaskState, TaskStatus

# A task in one of these states will never run again; its resources are free. UNREACHABLE and
# UNKNOWN are not terminal: the task may still be running where the master cannot see it.
TERMINAL_STATES: frozenset[int] = frozenset(
    {
        TaskState.TASK_STATE_FINISHED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_KILLED,
        TaskState.TASK_STATE_ERROR,
        TaskState.TASK_STATE_LOST,
        TaskState.TASK_STATE_DROPPED,
        TaskState.TASK_STATE_GONE,
    }
)

_PREFIX = "TASK_STATE_"


def is_terminal(state: int) -> bool:
    return state in TERMINAL_STATES


def state_name(state: int) -> str:
    """``TASK_STATE_FINISHED`` → ``FINISHED``; an unknown number prints as itself."""
    try:
        name = TaskState.Name(state)
    except ValueError:
        return str(int(state))
    return name.removeprefix(_PREFIX)


# Reasons a task ends for that are the cluster's doing, not the task's (Kubernetes' pod
# DisruptionTarget condition): the master preempted it for a higher priority class, its agent
# evicted it under memory pressure or took back the revocable resources it ran on, an operator
# drained its agent for maintenance or shut the agent down. A framework that retries failed
# tasks relaunches these without spending a retry: the task did nothing wrong, and another run
# of it may well succeed. Not here: the task's own ends (COMMAND_EXITED, MEMORY_LIMIT: it used
# more than its limit), an operator's `corral kill` (KILLED_BY_OPERATOR: meant for this task,
# as a deleted pod counts against a Kubernetes Job), and a lost agent (AGENT_UNREACHABLE,
# AGENT_RESTARTED, ...), which a task that takes its machine down would otherwise repeat forever.
DISRUPTIONS: frozenset[int] = frozenset(
    {
        TaskReason.TASK_REASON_PREEMPTED,
        TaskReason.TASK_REASON_EVICTED,
        TaskReason.TASK_REASON_REVOCABLE_RESOURCES_RECLAIMED,
        TaskReason.TASK_REASON_AGENT_DRAINING,
        TaskReason.TASK_REASON_AGENT_SHUTDOWN,
    }
)


def is_disruption(status: TaskStatus) -> bool:
    """The task ended (a terminal state) for a reason in ``DISRUPTIONS``: not its failure, so
    not a retry spent. The one rule every shipped framework retries by."""
    return status.state in TERMINAL_STATES and status.reason in DISRUPTIONS
