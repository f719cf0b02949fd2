"""The cluster events' fixed vocabulary (docs/scheduling.md, "Why pending").

Every cluster event the master records has a ``kind`` (what happened, snake_case, as the master
has always named it: ``agent_unreachable``, ``task_preempted``, ...), a ``reason`` (one of
``REASONS``, CamelCase as Kubernetes names them: ``AgentLost``, ``Preempted``, ...), the kind of
object it is about (``object_kind``: agent, framework, task, demand, ...) and that object's id
(``subject``). The kind decides the other two: ``KINDS`` is the table, and a kind not in it is a
bug the core's tests catch. Operators filter by reason (``corral events --reason``,
``/api/v1/events?reason=``), so the reasons are few and fixed.

Kept out of the master's package: the CLI (base install) checks ``--reason`` against it.
"""

from __future__ import annotations

from typing import Any, Protocol

# --- the reasons --------------------------------------------------------------------------
# Why work is pending or moved.
SCHEDULED = "Scheduled"  # tasks of a demand launched
FAILED_SCHEDULING = "FailedScheduling"  # a demand pending after a cycle: no agent has room
GANG_UNSCHEDULABLE = "GangUnschedulable"  # a waiting gang whose members do not all fit
PREEMPTED = "Preempted"  # a task killed to make room for a higher priority
NOMINATION_EXPIRED = "NominationExpired"  # room preempted for a demand was not used in time
# Killed by an agent, not the master: never Preempted (docs/scheduling.md, "Eviction").
EVICTED = "Evicted"  # under memory pressure
RECLAIMED = "Reclaimed"  # a revocable task whose resources were taken back
OOM_KILLED = "OOMKilled"  # used more memory than its limit
OFFER_RESCINDED = "OfferRescinded"  # offers taken back (agent gone, timeout, demand changed)
# Agents.
AGENT_ADDED = "AgentAdded"
AGENT_REREGISTERED = "AgentReregistered"
AGENT_REREGISTER_ASKED = "AgentReregisterAsked"
AGENT_DISCONNECTED = "AgentDisconnected"
AGENT_LOST = "AgentLost"  # unreachable: missed heartbeats or did not re-register in time
AGENT_PRUNED = "AgentPruned"  # unreachable too long, or the oldest of too many: forgotten
MEMORY_PRESSURE = "MemoryPressure"  # an agent's available memory is below a threshold
MEMORY_PRESSURE_CLEARED = "MemoryPressureCleared"
# Frameworks.
FRAMEWORK_ADDED = "FrameworkAdded"
FRAMEWORK_RESUBSCRIBED = "FrameworkResubscribed"
FRAMEWORK_DISCONNECTED = "FrameworkDisconnected"
FRAMEWORK_REMOVED = "FrameworkRemoved"
FAILOVER_TIMEOUT_CAPPED = "FailoverTimeoutCapped"  # asked for more than --max-failover-timeout
DEMANDS_SET = "DemandsSet"
# Tasks that ended (one reason per terminal state) and statuses the master dropped.
TASK_FINISHED = "TaskFinished"
TASK_FAILED = "TaskFailed"
TASK_KILLED = "TaskKilled"
TASK_ERROR = "TaskError"
TASK_LOST = "TaskLost"
TASK_DROPPED = "TaskDropped"
TASK_GONE = "TaskGone"
STATUS_IGNORED = "StatusIgnored"
# Operators' changes and the master itself.
PRIORITY_CLASS_SET = "PriorityClassSet"
PRIORITY_CLASS_DELETED = "PriorityClassDeleted"
ROLE_WEIGHT_SET = "RoleWeightSet"
ROLE_QUOTA_SET = "RoleQuotaSet"
MASTER_RECOVERED = "MasterRecovered"
# Operators' actions on tasks, frameworks and agents (each names who asked).
KILL_REQUESTED = "KillRequested"
TEARDOWN_REQUESTED = "TeardownRequested"
AGENT_CORDONED = "AgentCordoned"
AGENT_UNCORDONED = "AgentUncordoned"
AGENT_DRAINING = "AgentDraining"
AGENT_DRAINED = "AgentDrained"  # a draining agent's last task ended
AGENT_DELETED = "AgentDeleted"
# Input the master could not use as given, and what it did instead.
UNKNOWN_PRIORITY_CLASS = "UnknownPriorityClass"  # a task names a class the master does not hold
TASK_REFUSED = "TaskRefused"  # an agent reported a task the master never launched there
QUARANTINED = "Quarantined"  # a demand, framework or agent the allocation tick failed on
# Security (docs/security.md): a call refused by the ACLs or for its identity (the audit
# trail), and the ACL file loaded or refused.
DENIED = "Denied"
ACLS_LOADED = "AclsLoaded"
ACLS_REJECTED = "AclsRejected"

# kind -> (reason, object kind)
KINDS: dict[str, tuple[str, str]] = {
    "demand_scheduled": (SCHEDULED, "demand"),
    "demand_unschedulable": (FAILED_SCHEDULING, "demand"),
    "gang_unschedulable": (GANG_UNSCHEDULABLE, "demand"),
    "task_preempted": (PREEMPTED, "task"),
    "nomination_expired": (NOMINATION_EXPIRED, "framework"),
    "task_evicted": (EVICTED, "task"),
    "task_reclaimed": (RECLAIMED, "task"),
    "task_memory_limit": (OOM_KILLED, "task"),
    "offers_expired": (OFFER_RESCINDED, "framework"),
    "offers_rescinded": (OFFER_RESCINDED, "framework"),
    "agent_added": (AGENT_ADDED, "agent"),
    "agent_reregistered": (AGENT_REREGISTERED, "agent"),
    "agent_reregister_asked": (AGENT_REREGISTER_ASKED, "agent"),
    "agent_disconnected": (AGENT_DISCONNECTED, "agent"),
    "agent_unreachable": (AGENT_LOST, "agent"),
    "agent_pruned": (AGENT_PRUNED, "agent"),
    "agent_memory_pressure": (MEMORY_PRESSURE, "agent"),
    "agent_memory_pressure_cleared": (MEMORY_PRESSURE_CLEARED, "agent"),
    "framework_added": (FRAMEWORK_ADDED, "framework"),
    "framework_resubscribed": (FRAMEWORK_RESUBSCRIBED, "framework"),
    "framework_disconnected": (FRAMEWORK_DISCONNECTED, "framework"),
    "framework_removed": (FRAMEWORK_REMOVED, "framework"),
    "failover_timeout_capped": (FAILOVER_TIMEOUT_CAPPED, "framework"),
    "demands_set": (DEMANDS_SET, "framework"),
    "task_finished": (TASK_FINISHED, "task"),
    "task_failed": (TASK_FAILED, "task"),
    "task_killed": (TASK_KILLED, "task"),
    "task_error": (TASK_ERROR, "task"),
    "task_lost": (TASK_LOST, "task"),
    "task_dropped": (TASK_DROPPED, "task"),
    "task_gone": (TASK_GONE, "task"),
    "status_ignored": (STATUS_IGNORED, "task"),
    "priority_class_set": (PRIORITY_CLASS_SET, "priority_class"),
    "priority_class_deleted": (PRIORITY_CLASS_DELETED, "priority_class"),
    "role_weight_set": (ROLE_WEIGHT_SET, "role"),
    "role_quota_set": (ROLE_QUOTA_SET, "role"),
    "master_recovered": (MASTER_RECOVERED, "master"),
    "task_kill_requested": (KILL_REQUESTED, "task"),
    "framework_teardown_requested": (TEARDOWN_REQUESTED, "framework"),
    "agent_cordoned": (AGENT_CORDONED, "agent"),
    "agent_uncordoned": (AGENT_UNCORDONED, "agent"),
    "agent_draining": (AGENT_DRAINING, "agent"),
    "agent_drained": (AGENT_DRAINED, "agent"),
    "agent_deleted": (AGENT_DELETED, "agent"),
    "priority_class_unknown": (UNKNOWN_PRIORITY_CLASS, "task"),
    "reported_task_refused": (TASK_REFUSED, "task"),
    "demand_quarantined": (QUARANTINED, "demand"),
    "framework_quarantined": (QUARANTINED, "framework"),
    "agent_quarantined": (QUARANTINED, "agent"),
    "allocation_failed": (QUARANTINED, "master"),
    "access_denied": (DENIED, "principal"),
    "acls_loaded": (ACLS_LOADED, "master"),
    "acls_rejected": (ACLS_REJECTED, "master"),
}

REASONS: tuple[str, ...] = tuple(dict.fromkeys(reason for reason, _ in KINDS.values()))

# Reasons frequent enough under load (one per launch or per ended task) that the master does
# not write them to its log; they are in the event log, the Operator watch and HTTP as all are.
QUIET = frozenset(
    {
        SCHEDULED,
        TASK_FINISHED,
        TASK_FAILED,
        TASK_KILLED,
        TASK_ERROR,
        TASK_LOST,
        TASK_DROPPED,
        TASK_GONE,
        PREEMPTED,
    }
)


class EventLike(Protocol):
    @property
    def timestamp(self) -> float: ...
    @property
    def kind(self) -> str: ...
    @property
    def reason(self) -> str: ...
    @property
    def object_kind(self) -> str: ...
    @property
    def subject(self) -> str: ...
    @property
    def message(self) -> str: ...
    @property
    def stimulus_id(self) -> str: ...


def record(e: EventLike) -> dict[str, Any]:
    """A cluster event as JSON, one shape everywhere (the master's HTTP, ``corral events -o
    json``): the master's own event and the wire's have the same fields."""
    return {
        "timestamp": e.timestamp,
        "kind": e.kind,
        "reason": e.reason,
        "object_kind": e.object_kind,
        "subject": e.subject,
        "message": e.message,
        "stimulus_id": e.stimulus_id,
    }


def demand_subject(framework_id: str, demand: str) -> str:
    """A demand's id in an event: its framework's id and its name."""
    return f"{framework_id}/{demand}"


def check_reason(text: str) -> str:
    """``text`` if it is a reason; ValueError naming the reasons otherwise."""
    if text not in REASONS:
        raise ValueError(f"unknown reason {text!r}; the reasons are " + ", ".join(REASONS))
    return text
