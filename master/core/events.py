"""Events: everything that can happen to the master, as data.

Each event carries ``stimulus_id`` (repeated by the commands, logs and cluster events it causes)
and ``now`` (seconds; the only clock the core sees). Ids the core cannot make deterministically
from its own state (stream ids, new framework and agent ids) are made by the shell and passed in.
"""

from __future__ import annotations

from dataclasses import dataclass

from corral.acl import ANONYMOUS, Acl, Principal
from corral.master.core.durable import RegistryState
from corral.master.core.types import (
    AgentSpec,
    AgentUsage,
    Demand,
    FrameworkSpec,
    ReportedTask,
    Requester,
    Status,
    TaskReason,
    TaskSpec,
    TaskUsage,
)
from corral.priority import PriorityClass


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    stimulus_id: str
    now: float


# --- agents -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentRegister(Event):
    connection: int  # the shell's handle for the stream
    spec: AgentSpec
    new_agent_id: str  # used when spec.agent_id is empty
    tasks: tuple[ReportedTask, ...] = ()
    secret: str = ""  # what the agent presents with spec.agent_id
    new_secret: str = ""  # unguessable, made by the shell: handed out with a new identity
    # The shell checked ``secret`` as its seal of (spec.agent_id, principal)
    # (master/security/seals.py):
    # the id was issued to this certificate, whether or not the master still knows it.
    secret_sealed: bool = False
    # From the agent's verified certificate (the shell's TLS peer), never from a message.
    principal: Principal = ANONYMOUS


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentHeartbeat(Event):
    agent_id: str
    connection: int


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentStatusUpdates(Event):
    agent_id: str
    connection: int
    statuses: tuple[Status, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentUsageReport(Event):
    """An agent's measurement (every --usage-interval): its usage, pressure and revocable
    estimate, and what each of its tasks uses (master/core/usage.py)."""

    agent_id: str
    connection: int
    usage: AgentUsage
    tasks: tuple[TaskUsage, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentExecutorTerminated(Event):
    """A custom executor's process ended on the agent, whether or not its tasks had (Mesos'
    ExitedExecutorMessage): told to the executor's framework (losses.py)."""

    agent_id: str
    connection: int
    framework_id: str
    executor_id: str
    status: int  # the process' wait status, as Mesos reports it
    message: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentStreamClosed(Event):
    agent_id: str
    connection: int


# --- frameworks ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class FrameworkSubscribe(Event):
    connection: int
    spec: FrameworkSpec
    new_framework_id: str  # used when spec.framework_id is empty
    stream_id: str
    # From the framework's verified certificate (the shell's TLS peer), never from a message.
    principal: Principal = ANONYMOUS


@dataclass(frozen=True, slots=True, kw_only=True)
class FrameworkStreamClosed(Event):
    framework_id: str
    stream_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Call(Event):
    """A framework's unary call; ``stream_id`` must be the framework's current stream."""

    framework_id: str
    stream_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Accept(Call):
    offer_ids: tuple[str, ...]
    tasks: tuple[TaskSpec, ...]
    refuse_seconds: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Decline(Call):
    offer_ids: tuple[str, ...]
    refuse_seconds: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Suppress(Call):
    pass


@dataclass(frozen=True, slots=True, kw_only=True)
class Revive(Call):
    pass


@dataclass(frozen=True, slots=True, kw_only=True)
class Kill(Call):
    task_id: str
    agent_id: str = ""
    grace_seconds: float = 0.0
    # Why (framework_calls.py rule 4): None, or PREEMPTED with a message saying for whom.
    reason: TaskReason | None = None
    message: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Acknowledge(Call):
    acknowledgements: tuple[tuple[str, str, bytes], ...]  # (agent_id, task_id, uuid)


@dataclass(frozen=True, slots=True, kw_only=True)
class Reconcile(Call):
    tasks: tuple[tuple[str, str], ...] = ()  # (task_id, agent_id); empty = every task


@dataclass(frozen=True, slots=True, kw_only=True)
class Teardown(Call):
    pass


@dataclass(frozen=True, slots=True, kw_only=True)
class SetDemands(Call):
    """Replace all of the framework's demands; an empty tuple withdraws them."""

    demands: tuple[Demand, ...]


# --- operators ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class SetWeight(Event):
    """An operator sets a role's weight (checked by the core: finite, > 0)."""

    role: str
    weight: float


@dataclass(frozen=True, slots=True, kw_only=True)
class SetQuota(Event):
    """An operator sets a role's quota: four guaranteed quantities (0: none) and four limits
    (``inf``: unlimited), in SCALARS order. No guarantee and no limit clears the quota."""

    role: str
    guarantee: tuple[float, ...]
    limit: tuple[float, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class SetPriorityClass(Event):
    """An operator sets (adds or replaces, by name) a priority class, checked by
    ``corral.priority`` before it reaches the core."""

    priority_class: PriorityClass


@dataclass(frozen=True, slots=True, kw_only=True)
class DeletePriorityClass(Event):
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class OperatorAction(Event):
    """An operator's action on tasks, frameworks or agents (operator_actions.py,
    maintenance.py): answered with an ``Answer``, recorded as a cluster event naming
    ``requester``."""

    requester: Requester


@dataclass(frozen=True, slots=True, kw_only=True)
class KillTasks(OperatorAction):
    """Kill tasks: (framework id, empty for any, task id) each."""

    tasks: tuple[tuple[str, str], ...]
    grace_seconds: float | None = None  # None: each task's own kill grace period


@dataclass(frozen=True, slots=True, kw_only=True)
class TeardownFramework(OperatorAction):
    framework_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Cordon(OperatorAction):
    agent_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Uncordon(OperatorAction):
    agent_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Drain(OperatorAction):
    agent_id: str
    grace_seconds: float | None = None  # None: each task's own kill grace period


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteAgent(OperatorAction):
    agent_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SetAcls(Event):
    """The ACLs the core decides with from now on (the shell loaded the file, or reloaded it
    when it changed; master/core/authz.py)."""

    acl: Acl


# --- the master's own life ----------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Recover(Event):
    """What the registry held when this master started: the first event, before any other.
    Agents in it are RECOVERING until they re-register or ``agent_reregister_timeout`` runs out;
    frameworks in it are DISCONNECTED until they re-subscribe or their failover timeout runs
    out."""

    state: RegistryState
    # The leadership epoch this master acts in (0: a single master, no ZooKeeper). It only
    # grows from one leader to the next; agents and frameworks refuse a lower one (fencing).
    epoch: int = 0


# --- clocks -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Tick(Event):
    """Housekeeping: heartbeat and failover timeouts, status update retries, offer expiry.

    ``backlogged``: frameworks whose streams still hold unsent messages (the shell knows);
    their pending statuses are not resent until those have gone out."""

    backlogged: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True, kw_only=True)
class AllocationTick(Event):
    """An allocation cycle. ``hold``: why the shell's own backlog is at a bound (accepts
    waiting for the core), "" if it is not; a held cycle offers nothing, so the backlog drains
    instead of growing (issue #18)."""

    seed: int
    hold: str = ""
