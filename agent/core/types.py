"""Value types of the agent core: what events carry in and commands carry out.

Enum values equal the wire contract's numbers (corral.v1.common) so the shell converts with a
cast; ``tests/unit/test_agent_convert.py`` pins that equality. The core never sees protobuf:
``TaskSpec.wire`` carries the shell's task message through untouched, so the shell can list it
again at re-registration without the core knowing its shape.
"""

from __future__ import annotations

from collections.abc import Mapping
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
    EVICTED_MEMORY_PRESSURE = 12
    KILLED_DURING_LAUNCH = 13


class TaskSource(IntEnum):
    UNSPECIFIED = 0
    MASTER = 1
    AGENT = 2
    EXECUTOR = 3


class Signal(IntEnum):
    """The two signals the core asks for; the shell maps them to the platform's numbers."""

    TERM = 15
    KILL = 9


@dataclass(frozen=True, slots=True)
class CommandSpec:
    value: str = ""
    arguments: tuple[str, ...] = ()
    shell: bool = False
    environment: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SimulationSpec:
    duration_seconds: float = 0.0
    exit_code: int = 0


@dataclass(frozen=True, slots=True)
class TaskSpec:
    """What the core needs of a task. ``kill_grace_period`` 0 means the agent's default;
    ``mem`` and ``priority_class`` are there for eviction decisions (see ``eviction.py``)."""

    task_id: str
    framework_id: str
    name: str = ""
    command: CommandSpec | None = None
    simulation: SimulationSpec | None = None
    kill_grace_period: float = 0.0
    mem: float = 0.0
    priority_class: str = ""
    wire: object = None


@dataclass(frozen=True, slots=True)
class Status:
    """A task status update. Every status the agent makes carries a fresh ``uuid`` and is kept
    until the master acknowledges it."""

    task_id: str
    framework_id: str
    agent_id: str
    state: TaskState
    reason: TaskReason = TaskReason.UNSPECIFIED
    message: str = ""
    source: TaskSource = TaskSource.EXECUTOR
    timestamp: float = 0.0
    uuid: bytes = b""
    exit_code: int | None = None
