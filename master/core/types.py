"""Value types of the master core: what events carry in and commands carry out.

Enum values equal the wire contract's numbers so the shell converts with a cast;
``tests/unit/test_core_types.py`` pins that equality.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from corral.containers import ContainerSpec
from corral.placement import AttributeConstraint, Taint, Toleration, TopologySpread
from corral.qos import QosClass, qos_class
from corral.resources import Resources

# Re-exported: the cores' modules import task vocabulary from their own types module.
from corral.tasks import TERMINAL_STATES as TERMINAL_STATES
from corral.tasks import Status as Status
from corral.tasks import TaskReason as TaskReason
from corral.tasks import TaskSource as TaskSource
from corral.tasks import TaskState as TaskState

# _HOT_PATH: values made once per status update or task are plain slotted dataclasses, treated
# as immutable by convention. A frozen dataclass sets every field through object.__setattr__,
# which doubled their construction time in the master's load-test profile.


@dataclass(slots=True)  # not frozen: see _HOT_PATH above
class TaskSpec:
    """What the core needs to know of a task to launch. ``wire`` is the caller's task message,
    carried through untouched so the shell can forward it to the agent without re-encoding;
    dropped (None) once the task has ended (``MasterCore.finish_task``)."""

    task_id: str
    name: str
    resources: Resources
    priority_class: str = ""  # empty: the global default class
    demand: str = ""  # the framework's demand this task serves (counts toward it); may be empty
    # The agent it is for, as the framework named it: needed only by an accept that spans
    # agents (a gang's offers); otherwise the offers' agent is the task's (empty or not).
    agent_id: str = ""
    wire: object = None
    # Its limits (corral.qos: 0 means none); with ``resources`` they decide its QoS class.
    cpus_limit: float = 0.0
    mem_limit: float = 0.0
    # A revocable task (TaskInfo.revocable) holds these revocable resources; its
    # ``resources`` keep only its ports, so the allocator, DRF and preemption never count it
    # (master/core/revocable.py).
    revocable: Resources | None = None
    # Its class's value when launched (set by the accept): the agent evicts the lowest first.
    priority: int = 0
    # The image it runs in (TaskInfo.container); None: a process (corral.containers).
    container: ContainerSpec | None = None

    @property
    def qos(self) -> QosClass:
        r = self.revocable or self.resources
        return qos_class(r.cpus, r.mem, self.cpus_limit, self.mem_limit)


@dataclass(frozen=True, slots=True)
class Demand:
    """What a framework still needs (docs/scheduling.md): ``count`` tasks of one shape.

    ``unmet`` = count - the framework's live tasks naming this demand (TaskSpec.demand).
    ``min_member`` > 0 makes it a gang: its missing members are offered as one bundle
    (master/core/gangs.py).
    ``constraints`` and ``tolerations`` are its tasks': explain uses them per agent, and
    ``spread`` (master/core/spread.py) over where its live tasks are."""

    name: str
    resources: Resources  # one task's shape: scalars only
    count: int
    priority_class: str = ""  # empty: the global default class
    min_member: int = 0
    constraints: tuple[AttributeConstraint, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    spread: TopologySpread | None = None


@dataclass(frozen=True, slots=True)
class AgentSpec:
    agent_id: str  # empty for a new agent
    hostname: str
    resources: Resources
    attributes: dict[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    reservations: dict[str, Resources] = field(default_factory=dict)
    name: str = ""  # for people: tells apart agents of one host (AgentInfo.name)
    # Who registered it (its certificate's common name), set by the core from the event: the
    # id stays bound to it (authz.py rule 1). Empty on a plain-text master.
    principal: str = ""


@dataclass(frozen=True, slots=True)
class FrameworkSpec:
    framework_id: str  # empty for a new framework
    name: str
    role: str = "*"
    principal: str = ""
    partition_aware: bool = False
    gpu_resources: bool = False  # the GPU_RESOURCES capability (rules/gpus.py)
    revocable_resources: bool = False  # the REVOCABLE_RESOURCES capability (revocable.py)
    failover_timeout: float = 0.0  # 0: the master's default
    tolerations: tuple[Toleration, ...] = ()
    offer_constraints: tuple[AttributeConstraint, ...] = ()
    hostname: str = ""
    user: str = ""
    # A service launching for its owner (FrameworkInfo.on_behalf_of): the principal, with its
    # certificate roles, whose grants authorize the framework and whose cap its tasks count
    # against (authz.py rule 6). Empty: the subscribing principal's own.
    owner: str = ""
    owner_roles: tuple[str, ...] = ()

    @property
    def held_by(self) -> str:
        """Whose cap the framework's tasks count against (authz.py rule 4)."""
        return self.owner or self.principal


@dataclass(frozen=True, slots=True)
class Requester:
    """Who asked for an operator's action, as the shell knows it: the address the call came
    from and the name the caller declared (``corral --as NAME``; empty if none). ``verified``
    is False until authentication (TLS client certificates) supplies a principal the shell has
    checked: then ``name`` is that principal. Cluster events name the requester as ``str()``."""

    address: str
    name: str = ""
    verified: bool = False

    def __str__(self) -> str:
        if not self.name:
            return f"an operator at {self.address or 'an unknown address'}"
        how = "" if self.verified else " (declared)"
        return f"operator {self.name}{how} at {self.address or 'an unknown address'}"


@dataclass(frozen=True, slots=True)
class Maintenance:
    """An agent under maintenance (maintenance.py): ``cordoned`` (offered to nobody) or
    ``draining`` (cordoned, and its tasks killed with ``grace_seconds``, or each task's own
    grace when None). ``requested_by`` is the Requester's text."""

    mode: str  # CORDONED or DRAINING
    since: float
    requested_by: str
    grace_seconds: float | None = None


CORDONED = "cordoned"
DRAINING = "draining"


@dataclass(frozen=True, slots=True)
class TaskUsage:
    """What one task uses, as its agent measured it: cores and MiB."""

    framework_id: str
    task_id: str
    cpus: float
    mem: float


@dataclass(frozen=True, slots=True)
class AgentUsage:
    """An agent's latest usage report (agent/core/usage.py makes it): its memory, what its
    tasks use, its memory pressure ("", "soft" or "hard") and its revocable estimate."""

    timestamp: float
    mem_total: float
    mem_used: float
    mem_available: float
    cpus_used: float
    pressure: str
    pressure_since: float
    pressure_message: str
    revocable_cpus: float
    revocable_mem: float
    source: str


@dataclass(frozen=True, slots=True)
class FrameworkOwner:
    """Whose a framework is: the principal that subscribed it and its role, as the master
    launched its tasks with them (master/security/seals.py). An agent reports them with each
    task."""

    principal: str
    role: str


@dataclass(frozen=True, slots=True)
class ReportedTask:
    """A task an agent reports at (re-)registration, with its latest status, and its
    framework's owner as the master launched it: None when the report says no owner the shell
    could check (its seal missing or wrong, a task launched before owners were sealed)."""

    framework_id: str
    spec: TaskSpec
    status: Status
    owner: FrameworkOwner | None = None
