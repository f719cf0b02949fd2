"""Task states, reasons, sources and statuses: one vocabulary for the master's and the agent's
cores.

Values equal the wire contract's numbers (corral.v1.common), so the shells convert with a cast;
``tests/unit/test_core_types.py`` pins that equality.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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

# An agent first resends a status not acknowledged within this long (the default of
# `corral agent --status-retry`; agent/core/status_updates.py's Backoff), doubling after; it
# says its own in REGISTER. The master holds an agent's acknowledgements for at most half of
# the agent's (master/core/config.py's MAX_AGENT_ACK_HOLD), so nothing merely held is resent.
STATUS_RETRY_SECONDS = 10.0


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
    KILLED_BY_OPERATOR = 14
    AGENT_DRAINING = 15
    MEMORY_LIMIT = 16
    REVOCABLE_RESOURCES_RECLAIMED = 17
    EXECUTOR_TERMINATED = 18  # its custom executor (Mesos' executor API) ended first


class TaskSource(IntEnum):
    UNSPECIFIED = 0
    MASTER = 1
    AGENT = 2
    EXECUTOR = 3


# Made once per status update in the master and the agent: a plain slotted dataclass, treated as
# immutable by convention (a frozen one sets every field through object.__setattr__, which
# doubled its construction time in the master's load-test profile).
@dataclass(slots=True)
class Status:
    """A task status update, the master's and the agent's alike. ``uuid`` is empty for
    statuses that need no acknowledgement (the master's own); every status an agent makes
    carries a fresh one, kept until the master acknowledges it. ``source`` defaults to the
    master: an agent always says whose it is."""

    task_id: str
    framework_id: str
    agent_id: str
    state: TaskState
    reason: TaskReason = TaskReason.UNSPECIFIED
    message: str = ""
    source: TaskSource = TaskSource.MASTER
    timestamp: float = 0.0
    uuid: bytes = b""
    exit_code: int | None = None
    # The engine's id of the task's container (TaskStatus.container_status), for a task in an
    # image; set by its agent's shell.
    container_id: str = ""
    # The wire message an agent's status arrived in, while the shell forwards it (it clears
    # the field once the status's event is handled). Not an argument: ``replace`` (master-made
    # reconciliation statuses) never inherits a message that no longer matches.
    wire: object = field(default=None, init=False, repr=False, compare=False)
