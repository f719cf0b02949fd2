"""Classifying task states, with the Mesos meaning of each."""

from __future__ import annotations

from corral.v1.common_pb2 import TaskState

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
