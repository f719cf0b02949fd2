from __future__ import annotations

import math
from dataclasses import MISSING, dataclass, field, fields
from typing import TYPE_CHECKING, Any

from corral.master.core.priority_table import PriorityTable
from corral.priority import PriorityClass, check_unique
from corral.roles import Quota, check_quota, check_role, check_weight
from corral.tasks import STATUS_RETRY_SECONDS

if TYPE_CHECKING:
    from corral.master.core.disruption_budgets import DisruptionBudget

# The outbox merges messages up to half the 16 MiB message limit (outbox.MAX_BATCH_BYTES): a
# stream must be able to queue one of those. (The core does not import the shell's limits.)
MIN_STREAM_QUEUE_BYTES = 8 * 1024 * 1024


def agent_ack_hold(configured: float, status_retry: float) -> float:
    """How long an agent's acknowledgements may be held (rpc/out_stream.py): the configured
    hold, but at most half the agent's first resend (``status_retry``, 0: the default), so
    the agent hears of a status with half its wait to spare rather than sending it again."""
    return min(configured, (status_retry or STATUS_RETRY_SECONDS) / 2)


# The most a hold may be configured to: the bound for an agent with the default resend
# (corral.tasks); an agent that resends sooner says so in its REGISTER and is held less.
MAX_AGENT_ACK_HOLD = agent_ack_hold(math.inf, 0.0)


# Knobs for which 0 means "off" or "keep none" rather than a mistake.
_ZERO_ALLOWED = frozenset(
    {
        "offer_timeout",
        "pending_event_interval",
        "max_completed_frameworks",
        "max_completed_tasks_per_framework",
        "registry_max_agent_count",
        "agent_ack_hold",
    }
)

WEEK = 7 * 24 * 3600.0


@dataclass(frozen=True, slots=True)
class MasterConfig:
    """Timing and policy knobs of the master core (seconds unless noted)."""

    allocation_interval: float = 1.0
    agent_heartbeat_interval: float = 5.0
    agent_timeout: float = 15.0  # missed heartbeats for this long: the agent is UNREACHABLE
    # Heartbeats from all agents together stay under this rate: past
    # agent_heartbeat_interval * max_agent_heartbeats_per_second agents, each agent is asked to
    # heartbeat less often, and its timeout stretches in the same proportion (as Nomad's
    # heartbeat TTL does). 500/s keeps the 5 s / 15 s defaults up to 2,500 agents; at 10,000
    # agents they become 20 s / 60 s.
    max_agent_heartbeats_per_second: float = 500.0
    # After a master restart, agents in the registry that have not re-registered this long are
    # marked UNREACHABLE (Mesos' agent_reregister_timeout, the same 10-minute default).
    agent_reregister_timeout: float = 600.0
    # At most this many agents per second are marked UNREACHABLE (by missed heartbeats or the
    # re-registration timeout), so a mass partition or a cluster-wide restart does not declare
    # every task lost at once (Mesos' agent_removal_rate_limit). inf: no limit (the default).
    agent_removal_rate: float = math.inf
    # Unreachable agents' records (in memory, in views and in the registry) are forgotten after
    # registry_max_agent_age, and the oldest first past registry_max_agent_count (Mesos'
    # flags; master/core/pruning.py). The age is Mesos' two weeks: a host down over a holiday
    # comes back known. The count is Mesos' idea at Corral's scale: every record costs each
    # `corral get agents` and restart (docs/operations.md, "Nothing kept forever"), and 10,000
    # keeps a whole cluster of the largest size measured (docs/performance.md) through a
    # partition; only churn (agents joining as new ids and going away) reaches it.
    registry_max_agent_age: float = 2 * WEEK
    registry_max_agent_count: int = 10_000
    framework_heartbeat_interval: float = 15.0
    framework_failover_timeout: float = 60.0  # used when a framework asks for 0
    # A framework asking for a longer failover timeout gets this one (a cluster event says so),
    # so a framework that asked for "forever" (1e9 s) and went away is removed at last, with
    # its tasks. Four weeks admits what real frameworks ask for: Marathon a week, Aurora three.
    max_failover_timeout: float = 4 * WEEK
    default_refuse_seconds: float = 5.0
    max_refuse_seconds: float = 365 * 24 * 3600.0
    status_retry_interval: float = 5.0
    # An offer outstanding this long is rescinded and taken as declined, with a filter that
    # doubles while it keeps happening (offer_expiry.py; Mesos' --offer_timeout, which has no
    # default there): a framework that holds offers without answering would otherwise keep
    # them from everyone else. 0: offers never expire.
    offer_timeout: float = 60.0
    # Ended state kept for operators and for the master's own answers (reconciliation, a kill
    # of an ended task, an agent that reports a task the master declared ended): the last
    # max_completed_frameworks removed frameworks, and each framework's last
    # max_completed_tasks_per_framework ended tasks (Mesos' flags and defaults).
    max_completed_frameworks: int = 50
    max_completed_tasks_per_framework: int = 1000
    # The shell's: estimated bytes queued unsent on one stream (framework or agent) before the
    # stream is cut, as well as 10,000 messages. 64 MiB holds 8 of the largest messages the
    # master writes (half the 16 MiB message limit) and a 10,000-agent offer cycle many times.
    stream_queue_bytes: int = 64 * 1024 * 1024
    # The shell's: seconds an agent's acknowledgements wait, while nothing else is queued for
    # it, for more to ride in the same message (rpc/out_stream.py). A master's writes are what
    # a launch costs it most; an agent resends an unacknowledged status only after 10 s (less
    # if it says so: ``agent_ack_hold``). 0 writes each at once.
    agent_ack_hold: float = 2.0
    # Launch pacing (pacing.py, admission control): offers are held back so that
    # accept->RUNNING stays under launch_latency_target. The cpus that may be launching at once
    # form a window that halves when more than 1 % of the launches started since the last cycle
    # took longer than the target (once per late burst), eases by a tenth when more than 10 %
    # took 40 % of it (a queue is building), and grows by a tenth per target's worth of time
    # while they are on time. On by default: without it a
    # cluster whose frameworks accept everything queues the whole cluster's worth of launches
    # and accept->RUNNING becomes seconds (issue #18, docs/operations.md). False offers
    # everything the allocator plans (the master's --no-launch-pacing, for experiments).
    launch_pacing: bool = True
    launch_latency_target: float = 0.05
    launch_pacing_floor_cpus: float = 64.0  # the smallest window
    launch_pacing_window: float = 10.0  # a task launching for longer stops counting
    # While the window holds offers back, cycles come this often (allocation_interval if that
    # is shorter): a paced cycle offers one window's worth, so a 1 s interval would cap a
    # cluster at one window a second. Short, because a cycle's offers are accepted at once and
    # arrive as one burst: at 5,000 launches/s a 0.1 s cycle makes bursts of 500, and the last
    # of a burst waits for the rest at every hop (issue #18). No tuning needed: an idle or
    # declining cluster keeps allocation_interval.
    paced_allocation_interval: float = 0.025
    # Bounded backlogs (issue #18; each refused call says which bound and is RESOURCE_EXHAUSTED):
    # tasks launching (accepted, not yet RUNNING) on one agent; past it the agent is offered to
    # nobody until its launches move on, and an accept that would pass it is refused.
    max_agent_launches: int = 256
    # Statuses forwarded to one framework and not yet acknowledged; at it the framework is
    # offered nothing and its accepts are refused until it acknowledges (its tasks already
    # running still report: the bound stops new work, not statuses of work admitted).
    max_framework_pending_statuses: int = 10_000
    # The shell's: accept calls waiting for the core. Past it an accept is refused at once,
    # so an accept is answered well inside its caller's deadline or refused, never left to
    # time out; while half of it is reached, a cycle offers nothing.
    max_waiting_accepts: int = 512
    # Roles' weights and quotas at start (the master's --weights and --quotas): the core applies
    # them when it is created, as if an operator had set them; operators change them later.
    role_weights: tuple[tuple[str, float], ...] = field(default=())
    role_quotas: tuple[tuple[str, Quota], ...] = field(default=())
    # Priority classes at start (the master's --priority-classes), set over the defaults
    # (corral.priority.DEFAULTS) by name, as if an operator had set them in this order.
    priority_classes: tuple[PriorityClass, ...] = field(default=())
    # Disruption budgets (the master's --disruption-budgets; simulation.py rule 6): drains and
    # the autoscaler's removals keep them.
    disruption_budgets: tuple[DisruptionBudget, ...] = field(default=())
    # Preemption (master/core/preemption.py, docs/scheduling.md): at each tick, before the cycle, a
    # demand whose tasks have no room anywhere takes room from tasks of lower priority. False: never
    # (the master's --no-preemption).
    preemption: bool = True
    # This start takes in the live tasks that agents with ids the registry does not hold report,
    # as a master without a registry does (membership.py rule 1): after restoring a backup, the
    # agents admitted since it (the master's --adopt-unknown-agents).
    adopt_unknown_agents: bool = False
    # Why-pending events (master/core/pending.py): after a cycle, at most once per interval,
    # demands no agent has room for get a FailedScheduling (or GangUnschedulable) event; the
    # same message again for a demand only after pending_event_repeat. 0: no such events.
    pending_event_interval: float = 5.0
    pending_event_repeat: float = 60.0
    # What the victims free is held for the preemptor and offered to it alone; the offer is
    # rescinded (the resources go back to everyone) if not used within this long.
    preemption_nomination_seconds: float = 5.0
    # Victims not all gone this long after they were told to die (an agent that does not kill
    # them) end the hold, so the demand may preempt elsewhere.
    preemption_kill_timeout: float = 60.0
    # At most this many victims per allocation cycle, over all demands (no preemption storms).
    preemption_max_victims_per_cycle: int = 64
    # Per preemptor (master/core/preemption_budget.py): a bucket of this many victims, refilled
    # at preemption_victims_per_minute; a demand whose preempted room went unused preempts
    # nothing for preemption_unused_backoff seconds, doubled per unused nomination in a row.
    preemption_victims_burst: int = 32
    preemption_victims_per_minute: float = 32.0
    preemption_unused_backoff: float = 30.0

    def __post_init__(self) -> None:
        for role, weight in self.role_weights:
            check_weight(check_role(role), weight)
        for role, quota in self.role_quotas:
            check_quota(check_role(role), quota.guarantee, quota.limit)
        check_unique(self.priority_classes)
        # Set over the defaults here, so a file the core could not apply fails at start.
        table = PriorityTable()
        for c in self.priority_classes:
            table.set(c)
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or f.name in (
                "role_weights",
                "role_quotas",
                "priority_classes",
                "disruption_budgets",
            ):
                continue
            if f.name == "agent_removal_rate" and value == math.inf:
                continue
            if f.name in _ZERO_ALLOWED and value == 0:
                continue
            if not math.isfinite(value) or value <= 0:
                raise ValueError(f"{f.name} must be a positive number, got {value!r}")
        if self.stream_queue_bytes < MIN_STREAM_QUEUE_BYTES:
            raise ValueError(
                f"stream_queue_bytes ({self.stream_queue_bytes}) must hold at least one of the "
                f"largest messages the master writes ({MIN_STREAM_QUEUE_BYTES} bytes, 8 MiB)"
            )
        if self.agent_ack_hold > MAX_AGENT_ACK_HOLD:
            raise ValueError(
                f"agent_ack_hold ({self.agent_ack_hold:g}s) must be at most "
                f"{MAX_AGENT_ACK_HOLD:g}s: agents resend a status not acknowledged within "
                f"{STATUS_RETRY_SECONDS:g} s"
            )
        if self.max_failover_timeout < self.framework_failover_timeout:
            raise ValueError(
                f"the longest failover timeout ({self.max_failover_timeout:g}s) is shorter than "
                f"the default one ({self.framework_failover_timeout:g}s)"
            )
        if self.agent_timeout < 2 * self.agent_heartbeat_interval:
            raise ValueError(
                f"agent timeout ({self.agent_timeout:g}s) must be at least twice the agent "
                f"heartbeat interval ({self.agent_heartbeat_interval:g}s), or agents flap"
            )


def default(name: str) -> Any:
    """A knob's default: the command line offers it (and its help shows it) from here, so a
    default is written once (a second copy in the CLI once made a changed default not take)."""
    value = MasterConfig.__dataclass_fields__[name].default
    if value is MISSING:
        raise KeyError(f"MasterConfig.{name} has no default")
    return value
