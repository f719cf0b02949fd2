"""The master core's state as its handlers see it: a Protocol that ``CoreState`` (master.py)
satisfies, listing the components it holds and the few helpers handlers call.

Why a Protocol: master.py imports every handler to dispatch events to it, and every handler
takes the core. Were they to name ``CoreState`` (even for types only), the core would be one
circle of imports; naming ``CoreState``, which imports only the components' own modules (none
of them a handler), they are not. mypy checks that ``CoreState`` is a ``CoreState`` wherever
it passes itself to a handler.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from corral import acl as acls
from corral.master.allocator.interface import Allocator, Scalars
from corral.master.core import commands as cmd
from corral.master.core import events as ev
from corral.master.core.agent_holds import AgentHolds
from corral.master.core.agent_table import AgentTable
from corral.master.core.clocks import Clocks
from corral.master.core.completed import Completed
from corral.master.core.config import MasterConfig
from corral.master.core.demand_bounds import Largest, Rotation
from corral.master.core.durable import AgentEntry, Change, FrameworkEntry
from corral.master.core.offer_book import OfferBook
from corral.master.core.offer_expiry import OfferExpiries
from corral.master.core.pacing import LaunchPacer
from corral.master.core.pending_events import PendingEvents
from corral.master.core.preempt_wanting import PreemptWanting
from corral.master.core.preemption_budget import PreemptionBudget
from corral.master.core.priority_table import PriorityTable
from corral.master.core.quarantine import Quarantine
from corral.master.core.records import (
    AgentRecord,
    FrameworkRecord,
    Nomination,
    NominationKey,
    OfferRecord,
    TaskRecord,
)
from corral.master.core.revocable_book import RevocableOffers
from corral.master.core.roles import RolesTable
from corral.master.core.task_table import EndedBatch, TaskTable
from corral.master.core.types import Status, TaskReason, TaskState

Commands = list[cmd.Command]


class CoreState(Protocol):
    """What master.py's ``CoreState.__init__`` says each is; the helpers are its methods."""

    config: MasterConfig
    allocator: Allocator
    master_id: str
    epoch: int
    agents: dict[str, AgentRecord]
    frameworks: dict[str, FrameworkRecord]
    completed: Completed
    book: OfferBook
    offers: Mapping[str, OfferRecord]
    revocable: RevocableOffers
    pacer: LaunchPacer
    holds: AgentHolds
    clocks: Clocks
    durable_agents: dict[str, AgentEntry]
    durable_frameworks: dict[str, FrameworkEntry]
    changes: list[Change]
    held: dict[str, dict[tuple[str, str, str], None]]
    agent_table: AgentTable
    knows_every_agent: bool
    acl: acls.Acl
    roles: RolesTable
    priority: PriorityTable
    gang_frameworks: set[str]
    demands_moved: set[str]
    nominations: dict[NominationKey, Nomination]
    victim_of: dict[tuple[str, str], NominationKey]
    victims_freed: list[tuple[NominationKey, Scalars]]
    preemption_budget: PreemptionBudget
    pending: PendingEvents
    largest: Largest
    tasks: TaskTable
    quarantine: Quarantine
    preempt_rotation: Rotation
    preempt_wanting: PreemptWanting
    gang_rotation: Rotation
    maybe_drained: set[str]
    expiries: OfferExpiries

    @property
    def recovering(self) -> int: ...

    def cluster_event(
        self, e: ev.Event, kind: str, subject: str, message: str
    ) -> cmd.ClusterEvent: ...

    def caller(self, e: ev.Call) -> FrameworkRecord: ...

    def rescinded_events(self, commands: Commands, e: ev.Event, what: str) -> Commands: ...

    def freed(self, agent: AgentRecord) -> None: ...

    def sync_allocator(self, fw: FrameworkRecord) -> None: ...

    def master_status(
        self, task: TaskRecord, state: TaskState, reason: TaskReason, message: str, e: ev.Event
    ) -> Commands: ...

    def heard_from(
        self,
        e: ev.AgentHeartbeat
        | ev.AgentStatusUpdates
        | ev.AgentUsageReport
        | ev.AgentExecutorTerminated,
    ) -> tuple[AgentRecord | None, Commands]: ...

    def set_task_state(
        self, task: TaskRecord, status: Status, e: ev.Event, batch: EndedBatch | None = None
    ) -> None: ...

    def recount_task_sums(self) -> None: ...

    def new_status(
        self, task: TaskRecord, state: TaskState, reason: TaskReason, message: str, now: float
    ) -> Status: ...

    def finish_task(self, task: TaskRecord, batch: EndedBatch | None = None) -> None: ...
