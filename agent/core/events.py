"""Events: everything that can happen to an agent, as data.

Each event carries ``now`` (seconds since the epoch; the only clock the core sees) and
``stimulus_id`` (repeated by the commands it causes and by the shell's log lines, so a status can
be traced back to the message or process exit that caused it).
"""

from __future__ import annotations

from dataclasses import dataclass

from corral.agent.core.types import RecoveredTask, TaskReason, TaskSpec, TaskState, TaskUsage


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    now: float
    stimulus_id: str = ""


# --- the checkpoint -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Recovered(Event):
    """What the checkpoint held at start (before the first ``StreamOpened``): the tasks of the
    agent's previous run, each with what became of its process."""

    tasks: tuple[RecoveredTask, ...]


# --- the stream to the master -----------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamOpened(Event):
    """A new stream to the master is up; the core answers with the REGISTER message."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Registered(Event):
    agent_id: str
    heartbeat_interval: float
    secret: str = ""
    principal: str = ""  # the certificate's the master bound agent_id to


@dataclass(frozen=True, slots=True, kw_only=True)
class HeartbeatIntervalChanged(Event):
    """The master asks for heartbeats at another interval (it scales them with cluster size)."""

    heartbeat_interval: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Disconnected(Event):
    """The stream broke; nothing is sent until the next ``Registered``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LaunchTasks(Event):
    framework_id: str
    tasks: tuple[TaskSpec, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class KillTask(Event):
    task_id: str
    framework_id: str = ""
    grace_period: float = 0.0  # 0: the task's own, else the agent's default
    reason: TaskReason = TaskReason.KILLED_BY_FRAMEWORK


@dataclass(frozen=True, slots=True, kw_only=True)
class Acknowledged(Event):
    # (framework_id, task_id, uuid); a framework id left empty (a master from before tasks
    # were keyed by framework) names the one task of that id, if only one has it.
    acknowledgements: tuple[tuple[str, str, bytes], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Shutdown(Event):
    """From the master (SHUTDOWN) or the host (SIGTERM): kill every task, then stop."""

    reason: str


# --- executors --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessStarted(Event):
    task_id: str
    pid: int | None = None  # None for simulated tasks
    framework_id: str = ""  # with task_id, the task's key ("": the one task of that id)


@dataclass(frozen=True, slots=True, kw_only=True)
class LaunchFailed(Event):
    task_id: str
    message: str
    framework_id: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessExited(Event):
    """Exactly one of ``exit_code`` (normal exit) and ``signal`` (killed by it) is set.
    ``memory_limit``: the kernel killed it at its cgroup's memory limit (the shell read the
    cgroup's OOM-kill count)."""

    task_id: str
    exit_code: int | None = None
    signal: int | None = None
    memory_limit: bool = False
    framework_id: str = ""
    # Why, when the shell knows more than the code (e.g. the container engine went away).
    message: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutorUpdate(Event):
    """A custom executor (``TaskSpec.executor_id``) reports its task's state, as Mesos' executors
    do (an UPDATE call on the agent's executor API)."""

    task_id: str
    framework_id: str
    state: TaskState
    message: str = ""


# --- timers and the host ----------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Tick(Event):
    """The wake-up asked for by the last ``ScheduleTick``: heartbeats and status retries."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GraceExpired(Event):
    task_id: str
    framework_id: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageMeasured(Event):
    """The shell measured its running tasks (every ``--usage-interval``): what each uses now.
    The core enforces memory limits, evicts under pressure, reclaims revocable resources and
    reports to the master from these alone (usage.py), so a recorded run replays."""

    tasks: tuple[TaskUsage, ...]
    source: str = ""  # how it was measured: cgroup-v2, cgroup-v1, psutil
