"""The master core: events in, commands out, no IO.

This file builds the components that own the core's state (the agent table, the task table,
the offer book and the rest: docs/architecture.md, "Components and the state each owns"), asks
each to check itself (``validate``), and dispatches each event to its handler; agents
(membership.py), frameworks' subscriptions (subscriptions.py), accepts and declines
(accepts.py), task statuses (statuses.py), reconciliation (reconcile.py), an operator's priority
classes, weights and quotas (operator_settings.py), the registry's mirror (mirror.py), recovery
(recovery.py), the clock's housekeeping (ticks.py) and each allocation cycle
(allocation_tick.py) have their own modules, each with its rules.

Rules of the core (this file and those modules apply them):
1. Calls are validated completely before anything changes; a refused call raises
   ``CallRejected`` and leaves the state exactly as it was.
2. Resources are charged in the allocator from offer to decline/rescind/accept-leftover/task end;
   the core calls ``recover`` for every one of those and nothing else. Ports are the core's:
   an agent's free ports travel with its offers and come back the same way.
3. The allocator knows only agents that can take tasks (stream up) and sees a disconnected
   framework as suppressed. Detaching an agent first rescinds its offers and recovers its tasks;
   attaching re-charges them.
4. Agents report task states; the master makes up a state only for what the agent cannot tell
   (its own loss: UNREACHABLE/LOST; tasks missing after re-registration: DROPPED/LOST/GONE;
   a removed framework's tasks: KILLED).
5. Statuses with a uuid are kept per framework until acknowledged and resent (statuses.py); the
   master's own statuses have no uuid (frameworks reconcile to learn them again).
6. What a framework is offered follows its demands (demands.py): whatever changes a demand's
   unmet count (SetDemands, a task starting or ending, a class set) marks the framework, and
   after the event its priority and auto-suppression are handed to the allocator once.
7. What must survive the master (durable.py) is mirrored in ``durable_agents`` and
   ``durable_frameworks`` (mirror.py); a record that no longer matches its mirror is emitted
   as a change (``Persist``, last in the event's commands). validate() holds every record to
   its mirror.
8. After a restart, a question about a task on an agent still RECOVERING is held, not answered:
   the master cannot know yet. It is answered when the agent re-registers or is declared
   UNREACHABLE (reconcile.py).
9. Preemption (nominations.py, preemption.py) runs at each allocation tick, before the cycle;
   the free room its planned tasks need beside their victims is held for the preemptor then,
   and what a victim frees is charged to it in the same event it ends in (``settle`` after
   the handler), so no cycle sees either free, and they are offered to the preemptor alone.
10. Operators' actions (operator_actions.py, maintenance.py) are events naming who asked; each
   is answered by an ``Answer`` command the shell gives its caller once the event is durable.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from corral import acl as acls
from corral import events as cluster_events
from corral.master.allocator.interface import Allocator, Scalars
from corral.master.core import (
    accepts,
    admission,
    allocation_tick,
    authz,
    demands,
    explain_causes,
    framework_calls,
    losses,
    maintenance,
    membership,
    nominations,
    operator_actions,
    operator_settings,
    pending,
    reconcile,
    recovery,
    statuses,
    subscriptions,
    ticks,
    usage,
)
from corral.master.core import commands as cmd
from corral.master.core import events as ev
from corral.master.core.agent_table import AgentTable
from corral.master.core.clocks import Clocks
from corral.master.core.completed import Completed
from corral.master.core.config import MasterConfig
from corral.master.core.demand_work import Largest, Rotation
from corral.master.core.durable import (
    AgentEntry,
    Change,
    FrameworkEntry,
)
from corral.master.core.offer_book import AllOffers, OfferBook, return_ports
from corral.master.core.offer_expiry import OfferExpiries
from corral.master.core.pacing import LaunchPacer
from corral.master.core.preempt_wanting import PreemptWanting
from corral.master.core.preemption_budget import PreemptionBudget
from corral.master.core.priority_table import PriorityTable
from corral.master.core.quarantine import Quarantine
from corral.master.core.records import (
    AgentRecord,
    FrameworkRecord,
    Nomination,
    NominationKey,
    TaskRecord,
)
from corral.master.core.refusals import CallRejected, Refusal
from corral.master.core.revocable import RevocableOffers
from corral.master.core.roles import RolesTable, RoleView
from corral.master.core.states import (
    TASK_TRANSITIONS,
    AgentState,
    FrameworkState,
    check,
)
from corral.master.core.task_table import EndedBatch, TaskTable
from corral.master.core.types import (
    Status,
    TaskReason,
    TaskSource,
    TaskState,
)
from corral.master.core.validate import validate
from corral.priority import DEFAULTS

Commands = list[cmd.Command]

_ENDED_KIND = statuses.ENDED_KIND  # where tests/unit/test_master_events.py looks for it


class MasterCore:
    def __init__(
        self,
        config: MasterConfig,
        allocator: Allocator,
        master_id: str,
        acl: acls.Acl | None = None,
    ) -> None:
        self.config = config
        self.allocator = allocator
        self.master_id = master_id
        self.epoch = 0  # the leadership epoch, from Recover (0: a single master)
        # Frameworks whose demands' unmet counts may have moved in the event in hand (rule 6).
        self.demands_moved: set[str] = set()
        self.priority = PriorityTable(DEFAULTS)
        for c in config.priority_classes:
            self.priority.set(c)
        # task_table.py: live tasks' indexes and every tally of them (per agent and class
        # value, per principal for the ACLs' caps, per class, per demand).
        self.tasks = TaskTable(self.priority, self.demands_moved)
        # agent_table.py: the agents and their membership states, the RECOVERING count and
        # the UNREACHABLE agents' order; ``agents`` is its dict, read by every handler.
        self.agent_table = AgentTable(self.tasks)
        self.agents: dict[str, AgentRecord] = self.agent_table.agents
        self.frameworks: dict[str, FrameworkRecord] = {}
        self.completed = Completed(  # completed.py: ended tasks and removed frameworks, bounded
            config.max_completed_tasks_per_framework, config.max_completed_frameworks
        )
        self._now = 0.0  # the event in hand's time
        self.book = OfferBook(master_id, self.agents, self.frameworks, allocator, lambda: self._now)
        self.offers = (
            self.book.offers
        )  # by id, as records made on demand: views, explain, validate()
        self.revocable = RevocableOffers(master_id)  # revocable.py: kept apart from the book
        self.all_offers = AllOffers(self.offers, self.revocable.out)  # both, by id
        self.pacer = LaunchPacer(config)  # pacing.py
        # admission.py: agents at their launch bound
        self.holds = admission.AgentHolds(allocator, self.agents, config.max_agent_launches)
        self.clocks = Clocks()  # clocks.py: heartbeat deadlines, the removal rate limit
        # Rule 7: what the registry holds, and the changes of the event in hand.
        self.durable_agents: dict[str, AgentEntry] = {}
        self.durable_frameworks: dict[str, FrameworkEntry] = {}
        self.changes: list[Change] = []
        # Rule 8: reconciliation questions held until an agent's recovery ends, by agent id
        # ("" for questions naming no agent: answered once no agent is RECOVERING).
        self.held: dict[str, dict[tuple[str, str, str], None]] = {}  # (fw, task, agent)
        # The registry lists every agent ever admitted (recovery.py): an id it does not hold
        # registers for the first time. False with no durable registry (the master forgot).
        self.knows_every_agent = False
        self._handlers: dict[type[ev.Event], Callable[[Any], Commands]] = {
            ev.AgentRegister: partial(membership.register, self),
            ev.AgentHeartbeat: partial(membership.heartbeat, self),
            ev.AgentStatusUpdates: partial(statuses.agent_updates, self),
            ev.AgentStreamClosed: partial(membership.stream_closed, self),
            ev.AgentUsageReport: partial(usage.agent_usage, self),
            ev.AgentExecutorTerminated: partial(losses.executor_terminated, self),
            ev.FrameworkSubscribe: partial(subscriptions.subscribe, self),
            ev.FrameworkStreamClosed: partial(subscriptions.stream_closed, self),
            ev.Accept: partial(accepts.accept, self),
            ev.Decline: partial(accepts.decline, self),
            ev.Suppress: partial(framework_calls.suppress, self),
            ev.Revive: partial(framework_calls.revive, self),
            ev.Kill: partial(framework_calls.kill, self),
            ev.Acknowledge: partial(statuses.acknowledge, self),
            ev.Reconcile: partial(reconcile.answer_call, self),
            ev.Teardown: partial(subscriptions.teardown, self),
            ev.SetDemands: partial(framework_calls.set_demands, self),
            ev.SetPriorityClass: partial(operator_settings.set_priority_class, self),
            ev.DeletePriorityClass: partial(operator_settings.delete_priority_class, self),
            ev.SetWeight: partial(operator_settings.set_weight, self),
            ev.SetQuota: partial(operator_settings.set_quota, self),
            ev.Tick: partial(ticks.tick, self),
            ev.Recover: self._recover,
            ev.AllocationTick: partial(allocation_tick.allocation_tick, self),
            ev.KillTasks: partial(operator_actions.kill_tasks, self),
            ev.TeardownFramework: partial(operator_actions.teardown, self),
            ev.Cordon: partial(maintenance.cordon, self),
            ev.Uncordon: partial(maintenance.uncordon, self),
            ev.Drain: partial(maintenance.drain, self),
            ev.DeleteAgent: partial(maintenance.delete_agent, self),
            ev.SetAcls: partial(authz.set_acls, self),
        }
        # What principals may do (authz.py): the shell's ACL, replaced by SetAcls when the file
        # changes; none given (the core's own tests, a plain-text master) checks nothing.
        self.acl = acl if acl is not None else acls.allow_all()
        self.roles = RolesTable()  # weights and quotas set by operators (and flags)
        for role, weight in config.role_weights:
            operator_settings.apply_weight(self, role, weight)
        for role, quota in config.role_quotas:
            operator_settings.apply_quota(self, role, quota)
        # Frameworks with a gang demand (min_member > 0): the allocation tick cuts bundles
        # for them first (gangs.py); empty, gangs cost nothing.
        self.gang_frameworks: set[str] = set()
        # Rule 9: room being made by preemption, by (preemptor, demand, agent); the victims'
        # nominations; what victims freed in the event in hand; live tasks per class name
        # (a cycle with nobody below a demand's priority looks no further).
        self.nominations: dict[NominationKey, Nomination] = {}
        self.victim_of: dict[tuple[str, str], NominationKey] = {}
        self.victims_freed: list[tuple[NominationKey, Scalars]] = []
        self.preemption_budget = PreemptionBudget(  # preemption_budget.py: per preemptor
            config.preemption_victims_burst,
            config.preemption_victims_per_minute,
            config.preemption_unused_backoff,
        )
        self.pending = pending.PendingEvents()  # why-pending events' rate limit (pending.py)
        # demand_work.py: what bounds the passes over demands that cannot fit.
        self.largest = Largest()
        self.quarantine = Quarantine()  # demands the allocation tick failed on (quarantine.py)
        self.preempt_rotation = Rotation()
        self.preempt_wanting = PreemptWanting()  # demands preemption considers (kept)
        self.gang_rotation = Rotation()
        self.maybe_drained: set[str] = set()  # draining agents a task ended on (maintenance.py)
        self.expiries = OfferExpiries(
            config, allocator
        )  # offer_expiry.py: expired offers count as declines

    def handle(self, event: ev.Event) -> Commands:
        self._now = event.now
        try:
            out = self._handlers[type(event)](event)
        except BaseException:
            # A refused call changed nothing (rule 1), so it has nothing to persist either.
            self.changes.clear()
            raise
        if self.victims_freed:
            out += nominations.settle(self, event)
        if self.maybe_drained:
            out += maintenance.settle(self, event)
        if self.demands_moved:
            for fw_id in self.demands_moved:
                fw = self.frameworks.get(fw_id)
                if fw is not None:
                    self.sync_allocator(fw)
            self.demands_moved.clear()
        if self.changes:
            out.append(cmd.Persist(stimulus_id=event.stimulus_id, changes=tuple(self.changes)))
            self.changes = []
        return out

    def sync_allocator(self, fw: FrameworkRecord) -> None:
        """Hand the framework's priority and whether it is offered anything to the allocator:
        suppressed when it asked (SUPPRESS), is not connected, wants nothing by its demands
        (demands.py, rule 3), or has as many statuses unacknowledged as admission.py allows."""
        if fw.state is FrameworkState.REMOVED:
            return
        fw_id = fw.framework_id
        self.allocator.set_priority(fw_id, demands.priority(fw, self.priority))
        self.allocator.set_besteffort(fw_id, demands.besteffort_only(fw))
        self.allocator.set_demand_shapes(fw_id, demands.unmet_shapes(fw))
        off = (
            fw.suppressed
            or fw.state is not FrameworkState.SUBSCRIBED
            or not demands.offered_regularly(fw)
            or admission.statuses_held(fw, self.config.max_framework_pending_statuses)
        )
        self.allocator.set_suppressed(fw_id, off)

    @property
    def recovering(self) -> int:
        """Agents RECOVERING (agent_table.py)."""
        return self.agent_table.recovering

    def recount_task_sums(self) -> None:
        """task_table.py rule 2: a class's value or the global default changed."""
        self.tasks.recount(self.frameworks.values())

    def validate(self) -> None:
        """Check the cross-index invariants (validate.py); the core's tests run it after every
        event. Raises InvariantBroken."""
        validate(self)

    def take_offers_expired(self) -> int:
        """Offers rescinded at their timeout since the last call (the shell's metric)."""
        expired, self.book.expired = self.book.expired, 0
        return expired

    def take_offer_waits(self) -> list[float]:
        """Seconds each agent's freed resources waited to be offered, for the offers made since
        the last call (the shell turns them into the offer latency histogram)."""
        waits, self.book.waits = self.book.waits, []
        return waits

    def cycle_interval(self) -> float:
        """Seconds until the next allocation cycle: ``paced_allocation_interval`` while launch
        pacing or a hold kept the last cycle from offering all it could (what is held back is
        offered a window at a time, so the windows must come often), else
        ``allocation_interval``."""
        cfg = self.config
        if cfg.launch_pacing and self.pacer.limited:
            return min(cfg.allocation_interval, cfg.paced_allocation_interval)
        return cfg.allocation_interval

    def freed(self, agent: AgentRecord) -> None:
        self.book.freed([agent.agent_id], self._now)

    # ------------------------------------------------------------------ agents

    def heard_from(
        self,
        e: ev.AgentHeartbeat
        | ev.AgentStatusUpdates
        | ev.AgentUsageReport
        | ev.AgentExecutorTerminated,
    ) -> tuple[AgentRecord | None, Commands]:
        """Membership's rule 4 for any message of an agent: on its current stream it counts as
        a heartbeat and the agent is returned; otherwise None, with what to answer (nothing
        for a stale stream; an UNREACHABLE agent is asked to re-register)."""
        agent = self.agents.get(e.agent_id)
        if agent is None or agent.connection != e.connection:
            return None, []
        if agent.state is AgentState.UNREACHABLE:
            return None, self.ask_to_reregister(agent, e)
        agent.last_seen = e.now
        return agent, []

    def ask_to_reregister(self, agent: AgentRecord, e: ev.Event) -> Commands:
        """An UNREACHABLE agent is heard from on the stream it had (it was paused, or a
        partition healed without the connection breaking). Its tasks were already reported
        UNREACHABLE or LOST and it is out of the allocator; only a registration reconciles
        that, so its stream is closed and it re-registers (agent/connection.py reconnects at
        once). What it sent is dropped: it resends unacknowledged statuses after registering."""
        connection = self.agent_table.disconnect(agent)
        assert connection is not None  # the caller matched the event's connection
        return [
            cmd.CloseAgentStream(
                stimulus_id=e.stimulus_id,
                connection=connection,
                reason="the agent was marked unreachable: re-register",
            ),
            self.cluster_event(
                e, "agent_reregister_asked", agent.agent_id, "heard from while unreachable"
            ),
        ]

    # ------------------------------------------------------------------- calls

    def caller(self, e: ev.Call) -> FrameworkRecord:
        fw = self.frameworks.get(e.framework_id)
        if fw is None or fw.state is FrameworkState.REMOVED:
            raise CallRejected(Refusal.NOT_FOUND, f"framework {e.framework_id!r} is not subscribed")
        if fw.stream_id != e.stream_id or fw.state is not FrameworkState.SUBSCRIBED:
            raise CallRejected(
                Refusal.FAILED_PRECONDITION,
                f"stream {e.stream_id!r} is not framework {e.framework_id}'s current stream",
            )
        return fw

    def rescinded_events(self, commands: Commands, e: ev.Event, what: str) -> Commands:
        """An OfferRescinded event for each RESCIND in ``commands`` ("2 offers " + what)."""
        out: Commands = []
        for c in commands:
            if isinstance(c, cmd.SendRescind):
                n = len(c.offer_ids)
                message = f"{n} offer{'s' if n != 1 else ''} {what}"
                out.append(self.cluster_event(e, "offers_rescinded", c.framework_id, message))
        return out

    # -------------------------------------------------------------- durability

    def _recover(self, e: ev.Recover) -> Commands:
        """A restarted master's first event (recovery.py); agents RECOVERING have
        ``agent_reregister_timeout`` from now to re-register."""
        out = recovery.recover(self, e)
        self.epoch = e.epoch
        if self.recovering:
            self.clocks.recovery_deadline = e.now + self.config.agent_reregister_timeout
        return out

    # ----------------------------------------------------------------- helpers

    def new_status(
        self, task: TaskRecord, state: TaskState, reason: TaskReason, message: str, now: float
    ) -> Status:
        return Status(
            task_id=task.task_id,
            framework_id=task.framework_id,
            agent_id=task.agent_id,
            state=state,
            reason=reason,
            message=message,
            source=TaskSource.MASTER,
            timestamp=now,
        )

    def master_status(
        self, task: TaskRecord, state: TaskState, reason: TaskReason, message: str, e: ev.Event
    ) -> Commands:
        """A status the master makes up (rule 4): apply it and tell the framework once."""
        status = self.new_status(task, state, reason, message, e.now)
        self.set_task_state(task, status, e)
        fw = self.frameworks.get(task.framework_id)
        if fw is None:
            return []
        return statuses.forward(self, fw, status, e)

    def set_task_state(
        self,
        task: TaskRecord,
        status: Status,
        e: ev.Event,
        batch: EndedBatch | None = None,
    ) -> None:
        """Move the task to the status' state; an ended task's resources go back (into
        ``batch`` when the caller ends many tasks, see ``finish_task``)."""
        if status.state is TaskState.RUNNING:
            self.pacer.running(task, e.now)
        task.state = check(TASK_TRANSITIONS, "task", task.task_id, task.state, status.state)
        task.status = status
        if status.state.terminal:
            self.finish_task(task, batch)

    def finish_task(self, task: TaskRecord, batch: EndedBatch | None = None) -> None:
        """The task ended: its resources go back and it moves to ``completed``. With a
        ``batch`` (the caller ends many tasks), the resources and the tallies are left to the
        caller's one ``recover_many`` and ``tasks.count_removed`` at its end."""
        agent = self.agents.get(task.agent_id)
        fw = self.frameworks.get(task.framework_id)
        if self.tasks.remove(fw, agent, task, batch):
            assert agent is not None
            if agent.in_allocator:
                self.freed(agent)
                entry = (task.framework_id, task.agent_id, task.spec.resources.scalars())
                if batch is None:
                    self.allocator.recover(*entry)
                else:
                    batch.returns.append(entry)
            return_ports(agent, task.spec.resources.ports)
            if agent.maintenance is not None:
                maintenance.task_ended(self, agent)
        if task.preempted_by:
            nominations.victim_ended(self, task)
        # The framework's task message was for its launch and its live labels. An ended task
        # kept (completed.py: up to a million at 1,000 frameworks) would hold it, and with it
        # the whole parsed call batch it came in (protobuf's arena): ~0.7 KB a task.
        task.spec.wire = None
        self.completed.add(task)

    def cluster_event(self, e: ev.Event, kind: str, subject: str, message: str) -> cmd.ClusterEvent:
        reason, object_kind = cluster_events.KINDS[kind]  # a kind not in the table is a bug
        return cmd.ClusterEvent(
            stimulus_id=e.stimulus_id,
            kind=kind,
            subject=subject,
            message=message,
            timestamp=e.now,
            reason=reason,
            object_kind=object_kind,
        )

    # ------------------------------------------------------------------- views

    def role_views(self) -> list[RoleView]:
        """Every role with a framework, a weight or a quota: what it was given and holds."""
        return self.roles.views(
            self.frameworks.values(), self.book.of_framework, self.agents.values()
        )

    def explain(self, framework_id: str, now: float) -> dict[str, Any]:
        """Why the framework got what it got in the last cycle (explain_causes.py)."""
        return explain_causes.explain(self, framework_id, now)
