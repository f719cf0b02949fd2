"""Commands: what the core asks its shell to do, as data, in the order to do it."""

from __future__ import annotations

from dataclasses import dataclass

from corral.agent.core.types import Signal, Status, TaskSpec, UsageReport


@dataclass(frozen=True, slots=True, kw_only=True)
class Command:
    stimulus_id: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class SendRegister(Command):
    """REGISTER (``agent_id`` empty) or re-register, with every task the agent still knows."""

    agent_id: str
    secret: str
    tasks: tuple[tuple[TaskSpec, Status], ...]
    principal: str = ""  # the principal agent_id was issued to (the master checks it)
    # Its first resend of an unacknowledged status (Backoff.initial): the master holds this
    # agent's acknowledgements for at most half of it.
    status_retry: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointAgentId(Command):
    agent_id: str
    secret: str
    principal: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointTask(Command):
    """Write what the agent must remember of a task across a restart (replacing what was
    written before): the task, its latest status and its unacknowledged statuses. Comes before
    any command that sends those statuses or starts the task's process."""

    task: TaskSpec
    latest: Status
    pending: tuple[Status, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ForgetTask(Command):
    """The task's terminal status was acknowledged: remove its checkpoint."""

    task_id: str
    framework_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SendHeartbeat(Command):
    timestamp: float


@dataclass(frozen=True, slots=True, kw_only=True)
class SendStatusUpdates(Command):
    statuses: tuple[Status, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class SendExecutorTerminated(Command):
    """A custom executor's process ended (Mesos' ExitedExecutorMessage): best effort, to the
    master, which tells the executor's framework."""

    framework_id: str
    executor_id: str
    status: int  # the wait status, as Mesos reports it: exit code * 256, or the signal
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SendUsage(Command):
    """Tell the master what the tasks use, the pressure and the revocable estimate."""

    report: UsageReport


@dataclass(frozen=True, slots=True, kw_only=True)
class StartProcess(Command):
    task: TaskSpec


@dataclass(frozen=True, slots=True, kw_only=True)
class AttachToExecutor(Command):
    """Hand ``task`` to the running custom executor of its framework and executor id, whose
    process is ``executor_task_id``'s (Mesos' LAUNCH to a running executor); the executor's
    limits become its tasks' together (``mem_limit`` 0: none)."""

    task: TaskSpec
    executor_task_id: str
    cpus: float
    cpus_limit: float
    mem_limit: float


@dataclass(frozen=True, slots=True, kw_only=True)
class SignalGroup(Command):
    """Signal the task's whole process group."""

    task_id: str
    signal: Signal
    framework_id: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ScheduleGraceExpiry(Command):
    """Deliver ``GraceExpired(task_id, framework_id)`` at ``at``."""

    task_id: str
    at: float
    framework_id: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ScheduleTick(Command):
    """Deliver one ``Tick`` at ``at``, replacing any earlier request."""

    at: float


@dataclass(frozen=True, slots=True, kw_only=True)
class LogWarning(Command):
    """Something the master or an executor did that the core ignored, worth a log line."""

    message: str
    task_id: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Stop(Command):
    """Every task has ended after a shutdown: send what is queued, close the stream, exit."""
