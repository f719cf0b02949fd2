"""Value types of the master core: what events carry in and commands carry out.

Enum values equal the wire contract's numbers so the shell converts with a cast;
``tests/unit/test_core_types.py`` pins that equality.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from corral.placement import AttributeConstraint, Taint, Toleration, TopologySpread
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
    carried through untouched so the shell can forward it to the agent without re-encoding."""

    task_id: str
    name: str
    resources: Resources
    priority_class: str = ""  # empty: the global default class
    demand: str = ""  # the framework's demand this task serves (counts toward it); may be empty
    # The agent it is for, as the framework named it: needed only by an accept that spans
    # agents (a gang's offers); otherwise the offers' agent is the task's (empty or not).
    agent_id: str = ""
    wire: object = None


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
    gpu_resources: bool = False  # the GPU_RESOURCES capability (masks/gpus.py)
    failover_timeout: float = 0.0  # 0: the master's default
    tolerations: tuple[Toleration, ...] = ()
    offer_constraints: tuple[AttributeConstraint, ...] = ()
    hostname: str = ""
    user: str = ""


@dataclass(frozen=True, slots=True)
class ReportedTask:
    """A task an agent reports at (re-)registration, with its latest status."""

    framework_id: str
    spec: TaskSpec
    status: Status
