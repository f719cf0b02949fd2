"""Task states, reasons and sources: one vocabulary for the master's and the agent's cores.

Values equal the wire contract's numbers (corral.v1.common), so the shells convert with a cast;
``tests/unit/test_core_types.py`` pins that equality.
"""

from __future__ import annotations

from enum import IntEnum


class TaskState(IntEnum):
    STAGING = 1
    STARTING = 2
    RUNNING = 3
    KILLING = 4
    FINISHED = 5
    FAILED = 6
    KILLED = 7
    ERROR = 8
    LOST = 9
    DROPPED = 10
    UNREACHABLE = 11
    GONE = 12
    UNKNOWN = 13

    @property
    def terminal(self) -> bool:
        return self in TERMINAL_STATES


TERMINAL_STATES = frozenset(
    {
        TaskState.FINISHED,
        TaskState.FAILED,
        TaskState.KILLED,
        TaskState.ERROR,
        TaskState.LOST,
        TaskState.DROPPED,
        TaskState.GONE,
    }
)


# The states an agent may report. The rest (LOST, UNREACHABLE, GONE, UNKNOWN) are the master's
# to make up: they describe what only the master can see (an agent's loss, a task nobody knows).
# The agent core's transition table uses exactly these (tests/unit/test_agent_states.py).
AGENT_REPORTED_STATES = frozenset(
    {
        TaskState.STAGING,
        TaskState.STARTING,
        TaskState.RUNNING,
        TaskState.KILLING,
        TaskState.FINISHED,
        TaskState.FAILED,
        TaskState.KILLED,
        TaskState.ERROR,
        TaskState.DROPPED,
    }
)


class TaskReason(IntEnum):
    UNSPECIFIED = 0
    COMMAND_EXITED = 1
    COMMAND_LAUNCH_FAILED = 2
    KILLED_BY_FRAMEWORK = 3
    AGENT_UNREACHABLE = 4
    AGENT_REMOVED = 5
    AGENT_RESTARTED = 6
    AGENT_SHUTDOWN = 7
    RECONCILIATION = 8
    FRAMEWORK_REMOVED = 9
    INVALID = 10
    PREEMPTED = 11
    EVICTED = 12  # by its agent, under memory pressure (never PREEMPTED: that is the master)
    KILLED_DURING_LAUNCH = 13
    MEMORY_LIMIT = 14
    REVOCABLE_RESOURCES_RECLAIMED = 15


class TaskSource(IntEnum):
    UNSPECIFIED = 0
    MASTER = 1
    AGENT = 2
    EXECUTOR = 3
