"""The master core's mutable bookkeeping of agents, frameworks, tasks and offers."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from corral.acl import ANONYMOUS, Principal
from corral.master.core.states import AgentState, FrameworkState
from corral.master.core.types import (
    AgentSpec,
    AgentUsage,
    Demand,
    FrameworkSpec,
    Maintenance,
    Status,
    TaskReason,
    TaskSpec,
    TaskState,
    TaskUsage,
)
from corral.placement import Taint
from corral.resources import PortRanges, Resources

if TYPE_CHECKING:
    from corral.master.core.offer_columns import OfferColumns


def tasks_resources(tasks: Iterable[TaskRecord]) -> Resources:
    """The tasks' resources summed: each scalar added in the tasks' order (the sum ``+``
    makes, bit for bit), the port ranges merged once at the end (merging is order-free), not
    a ``Resources`` made per task (the state view sums every framework's tasks)."""
    cpus = mem = disk = gpus = 0.0
    ports: list[tuple[int, int]] = []
    for task in tasks:
        r = task.spec.resources
        cpus += r.cpus
        mem += r.mem
        disk += r.disk
        gpus += r.gpus
        if r.ports:
            ports += r.ports
    return Resources.from_scalars((cpus, mem, disk, gpus), tuple(ports))


NominationKey = tuple[str, str, str]  # (framework id, demand, agent id)


@dataclass(slots=True)  # immutable by convention; not frozen for speed (see types._HOT_PATH)
class OfferRecord:
    """One outstanding offer as an object. The book keeps offers as columns (offer_columns.py)
    and makes a record on demand (an accept, the views, validate()); ``columns`` and ``index``
    say which entry it is. Its resources are the allocator's row of scalars plus the agent's
    free port ranges: most offers are declined without their ``Resources`` ever being needed."""

    offer_id: str
    framework_id: str
    agent_id: str
    hostname: str
    scalars: Sequence[float]  # cpus, mem, disk, gpus (corral.resources.SCALARS order)
    ports: PortRanges  # normalized
    attributes: dict[str, str]
    created_at: float
    gang_id: str = ""  # one of a gang's bundle (gangs.py): used, returned and rescinded together
    columns: OfferColumns | None = None  # the book's batch holding it (None: made by hand)
    index: int = -1
    revocable: bool = False  # revocable resources (master/core/revocable.py), not the book's
    # The agent's taints: a framework sees why it may not use an offer it does not tolerate
    # (a PreferNoSchedule one, say) without asking the master.
    taints: tuple[Taint, ...] = ()

    @property
    def resources(self) -> Resources:
        return Resources.offered(self.scalars, self.ports)


@dataclass(slots=True)
class TaskRecord:
    spec: TaskSpec
    framework_id: str
    agent_id: str
    state: TaskState
    status: Status  # the latest status the master knows
    launched_at: float
    kill_requested: bool = False
    # Who preempted it ("framework F, demand D"): its KILLED status says so (reason PREEMPTED).
    preempted_by: str = ""
    # Killed by an operator or a drain (operator_actions.py, maintenance.py): the reason and
    # message its KILLED status reaches the framework with.
    killed_for: tuple[TaskReason, str] | None = None
    usage: TaskUsage | None = None  # as its agent last measured it (usage.py)

    @property
    def task_id(self) -> str:
        return self.spec.task_id


@dataclass(slots=True)
class Nomination:
    """Room made by preemption on one agent for one demand (master.py, "preemption").

    While ``victims`` (keys (framework id, task id) of tasks being killed) live, what each
    frees on its end is charged to the preemptor and kept in ``held``; once none is left,
    ``held`` becomes one offer to the preemptor alone (``offer_id``), rescinded at
    ``expires_at`` if unused."""

    framework_id: str
    demand: str
    agent_id: str
    victims: set[tuple[str, str]]
    started_at: float
    expires_at: float  # the kill timeout while victims live; then the offer's deadline
    held: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0, 0.0])
    offer_id: str = ""
    offered_at: float = 0.0  # when the hold became an offer: tasks launched since used it


@dataclass(slots=True)
class AgentRecord:
    spec: AgentSpec  # spec.agent_id is always set here
    state: AgentState
    connection: int | None  # None while the stream is down
    registered_at: float
    last_seen: float
    free_ports: tuple[tuple[int, int], ...]
    heartbeat_interval: float  # what this agent was last told
    # The timeout counts from here when it is later than last_seen: a shorter interval (and
    # timeout) starts when it is handed out, not at the agent's last heartbeat.
    interval_set_at: float = 0.0
    in_allocator: bool = False
    # The master has held this agent's tasks since it registered with this master: a live task
    # it reports that the master does not hold was never launched there (reconcile.py rule 2).
    # False for a record read from the registry until the agent re-registers.
    tasks_known: bool = False
    # By (framework id, task id), as the agent keys them (and Mesos): frameworks choose their
    # ids, and two frameworks' tasks of one id on one agent are two tasks.
    tasks: dict[tuple[str, str], TaskRecord] = field(default_factory=dict)
    # Proves the id: a re-registration with this agent's id must present it.
    secret: str = ""
    unreachable_at: float | None = None  # when it last became UNREACHABLE (durable)
    maintenance: Maintenance | None = None  # cordoned or draining (maintenance.py; durable)
    usage: AgentUsage | None = None  # its latest usage report (usage.py); None: none yet
    # The certificate it registered with, roles included (not durable: told again when it
    # re-registers): what the ACL's reloads must not lock out unasked (authz.in_use).
    peer: Principal = ANONYMOUS
    # Counts changes to ``tasks`` (they go only through the three methods below): a kept
    # agent view (agent_view.py) recomputes what an agent's tasks hold when it moved.
    tasks_version: int = 0

    def add_task(self, key: tuple[str, str], task: TaskRecord) -> None:
        self.tasks[key] = task
        self.tasks_version += 1

    def pop_task(self, key: tuple[str, str]) -> TaskRecord | None:
        self.tasks_version += 1
        return self.tasks.pop(key, None)

    def clear_tasks(self) -> None:
        self.tasks.clear()
        self.tasks_version += 1

    @property
    def under_pressure(self) -> bool:
        """Memory pressure, the placement rule's condition (rules/pressure.py)."""
        return self.usage is not None and bool(self.usage.pressure)

    @property
    def agent_id(self) -> str:
        return self.spec.agent_id

    @property
    def used(self) -> Resources:
        return tasks_resources(self.tasks.values())


@dataclass(slots=True)
class PendingStatus:
    status: Status
    last_sent: float


@dataclass(slots=True)
class FrameworkRecord:
    spec: FrameworkSpec  # spec.framework_id is always set here
    state: FrameworkState
    stream_id: str
    connection: int | None
    registered_at: float
    disconnected_at: float | None = None
    suppressed: bool = False
    tasks: dict[str, TaskRecord] = field(default_factory=dict)
    # Statuses forwarded and not yet acknowledged, by (task_id, uuid), in arrival order.
    pending: dict[tuple[str, bytes], PendingStatus] = field(default_factory=dict)
    # Known only from agents' reports (no SUBSCRIBE yet): its first subscriber sets the spec.
    placeholder: bool = False
    # A placeholder's owner (spec.principal and spec.role) came from a report the master
    # sealed: only that principal may subscribe with its id (subscriptions.py rule 3).
    owner_reported: bool = False
    removed_at: float | None = None
    # What it still needs (SetDemands), by name in the order given. ``wants_by_demand`` is
    # True once it has called SetDemands: from then on it is offered only while a demand is
    # unmet (auto-suppress); one that never called it is offered as in Mesos.
    demands: dict[str, Demand] = field(default_factory=dict)
    wants_by_demand: bool = False
    # Live tasks naming each demand (TaskSpec.demand), kept as tasks start and end; the version
    # moves with every change (preempt_wanting.py keeps what it decides by it).
    demand_tasks: dict[str, int] = field(default_factory=dict)
    demand_tasks_version: int = 0
    # Who subscribed it, with its certificate roles: what its calls are authorized as
    # (authz.py). Not durable: a recovered framework is told again when it re-subscribes.
    principal: Principal = ANONYMOUS

    @property
    def framework_id(self) -> str:
        return self.spec.framework_id

    @property
    def used(self) -> Resources:
        return tasks_resources(self.tasks.values())
