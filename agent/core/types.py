"""Value types of the agent core: what events carry in and commands carry out.

Enum values equal the wire contract's numbers (corral.v1.common) so the shell converts with a
cast; ``tests/unit/test_agent_convert.py`` pins that equality. The core never sees protobuf:
``TaskSpec.wire`` carries the shell's task message through untouched, so the shell can list it
again at re-registration without the core knowing its shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum, IntEnum

from corral.containers import ContainerSpec
from corral.qos import QosClass, qos_class

# Re-exported: the cores' modules import task vocabulary from their own types module.
from corral.tasks import TERMINAL_STATES as TERMINAL_STATES
from corral.tasks import Status as Status
from corral.tasks import TaskReason as TaskReason
from corral.tasks import TaskSource as TaskSource
from corral.tasks import TaskState as TaskState


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
    # Secret values (CommandInfo.secret_environment): in the task's environment, never in a
    # repr, a log line or a report to the master.
    secret_environment: Mapping[str, str] = field(default_factory=dict, repr=False)


@dataclass(frozen=True, slots=True)
class SimulationSpec:
    duration_seconds: float = 0.0
    exit_code: int = 0


@dataclass(slots=True)  # immutable by convention, not frozen: made per task (task_from_pb)
class TaskSpec:
    """What the core needs of a task. ``kill_grace_period`` 0 means the agent's default.
    ``cpus`` and ``mem`` are its request, ``cpus_limit`` and ``mem_limit`` its limits (0:
    none); with ``priority`` (its class's value, filled in by the master) and ``revocable``
    they decide what is evicted or reclaimed first (``eviction.py``, ``revocable.py``)."""

    task_id: str
    framework_id: str
    name: str = ""
    command: CommandSpec | None = None
    simulation: SimulationSpec | None = None
    kill_grace_period: float = 0.0
    mem: float = 0.0
    priority_class: str = ""
    cpus: float = 0.0
    cpus_limit: float = 0.0
    mem_limit: float = 0.0
    priority: int = 0
    revocable: bool = False
    # The image it runs in (None: a process); the shell hands it to its containerizer.
    container: ContainerSpec | None = None
    gpus: float = 0.0
    # The agent's GPU devices it holds (agent/gpu_devices.py), filled in by the shell.
    gpu_devices: tuple[str, ...] = ()
    # Run by a custom executor of this id (Mesos' executor API, agent/mesos_executor/): the
    # process is the executor, and the executor reports the task's states (ExecutorUpdate).
    executor_id: str = ""
    wire: object = None

    @property
    def qos(self) -> QosClass:
        return qos_class(self.cpus, self.mem, self.cpus_limit, self.mem_limit)

    @property
    def enforced_mem_limit(self) -> float:
        """The memory limit the agent enforces, in MiB (0: none): the task's own, or for a
        revocable task without one, what it borrowed (usage.py, rule 2)."""
        if self.mem_limit > 0:
            return self.mem_limit
        return self.mem if self.revocable else 0.0


@dataclass(frozen=True, slots=True)
class TaskUsage:
    """What one task uses, as the shell measured it: cores and MiB."""

    task_id: str
    cpus: float = 0.0
    mem: float = 0.0
    framework_id: str = ""  # with task_id, the task's key on the agent


@dataclass(frozen=True, slots=True)
class UsageReport:
    """What the agent tells the master after each measurement (``SendUsage``): its tasks'
    usage, its memory, the pressure it is under and the revocable resources it estimates."""

    timestamp: float
    mem_total: float
    mem_used: float
    mem_available: float
    cpus_used: float
    pressure: str  # "", "soft" or "hard" (pressure.py)
    pressure_since: float
    pressure_message: str
    revocable_cpus: float
    revocable_mem: float
    source: str
    tasks: tuple[tuple[str, TaskUsage], ...]  # (framework id, usage)


class ProcessFate(Enum):
    """What the shell found of a checkpointed task's process when the agent started again."""

    ALIVE = "alive"  # still running: re-attached, watched until it exits
    EXITED = "exited"  # ended while the agent was down; its exit status was recorded
    UNKNOWN = "unknown"  # gone, and how it ended is not known
    NOT_STARTED = "not_started"  # the agent stopped before the process was started
    LAUNCH_FAILED = "launch_failed"  # the command could not be started (``message`` says why)


@dataclass(frozen=True, slots=True)
class RecoveredTask:
    """A task found in the checkpoint at start: as the core last saw it, and its process now.

    ``latest`` is the task's last status (its state is the task's state); ``pending`` are the
    statuses the master had not acknowledged, oldest first, with their original uuids."""

    spec: TaskSpec
    latest: Status
    pending: tuple[Status, ...] = ()
    process: ProcessFate = ProcessFate.UNKNOWN
    exit_code: int | None = None
    signal: int | None = None
    message: str = ""
    # A task handed to a running custom executor: the task whose process the executor is
    # (``process`` is then that process' fate).
    executor_task_id: str = ""
