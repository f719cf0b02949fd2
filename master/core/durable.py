"""What the master keeps across its own restarts: the registry's records and the changes to them.

The core decides what is durable; the shell (``corral.master.registry``) stores it. Rules:
1. An agent is in the registry from its first registration (admission) on, with the secret that
   proves its id and when it became unreachable, if it did, until an unreachable one is
   forgotten (pruning.py). Tasks are not: agents report them when they re-register, as in
   Mesos.
2. A framework is in the registry from its first SUBSCRIBED on, with its info (failover timeout
   included) and when it disconnected or was removed. Frameworks known only from agents'
   reports (placeholders) are not.
3. Roles' weights and quotas, and priority classes, set or deleted by operators are (flags are
   applied at every start, under what the registry holds).
4. The shell makes an effect visible (a SUBSCRIBED, a REGISTERED, a call's answer) only after
   the changes of the same event are durable.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from corral.master.core.records import AgentRecord, FrameworkRecord
from corral.master.core.states import FrameworkState
from corral.master.core.types import AgentSpec, FrameworkSpec
from corral.priority import PriorityClass
from corral.roles import Quota


@dataclass(frozen=True, slots=True)
class AgentEntry:
    spec: AgentSpec  # spec.agent_id is set
    secret: str
    registered_at: float
    unreachable_at: float | None = None

    @property
    def agent_id(self) -> str:
        return self.spec.agent_id


@dataclass(frozen=True, slots=True)
class FrameworkEntry:
    spec: FrameworkSpec  # spec.framework_id is set
    registered_at: float
    disconnected_at: float | None = None
    removed_at: float | None = None

    @property
    def framework_id(self) -> str:
        return self.spec.framework_id


def agent_entry(agent: AgentRecord) -> AgentEntry:
    """What the registry holds of an agent (rule 1)."""
    return AgentEntry(
        spec=agent.spec,
        secret=agent.secret,
        registered_at=agent.registered_at,
        unreachable_at=agent.unreachable_at,
    )


def framework_entry(fw: FrameworkRecord) -> FrameworkEntry:
    """What the registry holds of a framework (rule 2)."""
    return FrameworkEntry(
        spec=fw.spec,
        registered_at=fw.registered_at,
        disconnected_at=(fw.disconnected_at if fw.state is FrameworkState.DISCONNECTED else None),
        removed_at=fw.removed_at,
    )


# --- changes (the core emits them in ``commands.Persist``) --------------------------------


@dataclass(frozen=True, slots=True)
class PutAgent:
    entry: AgentEntry


@dataclass(frozen=True, slots=True)
class RemoveAgent:
    """An unreachable agent's record is forgotten (pruning.py)."""

    agent_id: str


@dataclass(frozen=True, slots=True)
class PutFramework:
    entry: FrameworkEntry


@dataclass(frozen=True, slots=True)
class PutWeight:
    role: str
    weight: float


@dataclass(frozen=True, slots=True)
class PutQuota:
    role: str
    quota: Quota  # Quota.is_none(): the role has no quota any more


@dataclass(frozen=True, slots=True)
class PutPriorityClass:
    priority_class: PriorityClass

    @property
    def name(self) -> str:
        return self.priority_class.name


@dataclass(frozen=True, slots=True)
class DeletePriorityClass:
    """Kept as a tombstone: a class deleted by an operator stays deleted even if the defaults
    or the flags define it."""

    name: str


Change = (
    PutAgent
    | RemoveAgent
    | PutFramework
    | PutWeight
    | PutQuota
    | PutPriorityClass
    | DeletePriorityClass
)


@dataclass(frozen=True, slots=True)
class RegistryState:
    """Everything the registry holds, as the master reads it at start."""

    agents: tuple[AgentEntry, ...] = ()
    frameworks: tuple[FrameworkEntry, ...] = ()
    weights: tuple[tuple[str, float], ...] = ()
    quotas: tuple[tuple[str, Quota], ...] = ()
    # In the order operators last changed them; None: deleted.
    priority_classes: tuple[tuple[str, PriorityClass | None], ...] = ()
    extra: dict[str, str] = field(default_factory=dict)  # the registry's own facts, for views
    # The store outlives the master (SQLite, ZooKeeper): it lists every agent ever admitted and
    # not forgotten since (pruning.py), so an id it does not hold is an agent registering for
    # the first time, or one forgotten: either way, the master launched no task on it.
    durable: bool = False
