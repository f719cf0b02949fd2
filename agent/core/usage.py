"""What the agent core does with a measurement of its tasks (``UsageMeasured``).

The rules, in the order they apply to one measurement:
1. Each live task's usage is kept (``_Task.usage``); a measurement of a task that is not
   running here is ignored.
2. Memory limits: a task using more than its memory limit is killed at once (SIGKILL to its
   group, no grace: the kernel's cgroup OOM killer does the same) and ends TASK_FAILED with
   reason MEMORY_LIMIT. Where a cgroup enforces the limit the kernel gets there first and the
   shell says so in ``ProcessExited.memory_limit``; this rule is the psutil fallback's
   enforcement. A revocable task without a limit is limited to what it borrowed. A custom
   executor's process is limited to its live tasks' limits together (machine.py).
3. Revocable resources (revocable.py): what revocable tasks hold past what the agent's own
   tasks leave unused is reclaimed (REVOCABLE_RESOURCES_RECLAIMED).
4. Pressure (pressure.py) and eviction (eviction.py): victims are killed (KILLED, reason
   EVICTED, or REVOCABLE_RESOURCES_RECLAIMED for revocable ones) with a message naming the
   pressure and the figures; a hard threshold kills at once, a soft one with the task's own
   grace period.
5. The agent tells the master (``SendUsage``) while registered: its tasks' usage, its memory,
   the pressure and the revocable estimate.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from corral.agent.core import commands as c
from corral.agent.core import events as e
from corral.agent.core import eviction, revocable
from corral.agent.core.pressure import HARD, Verdict
from corral.agent.core.types import Signal, TaskReason, TaskState, TaskUsage, UsageReport

if TYPE_CHECKING:
    from corral.agent.core.machine import AgentCore, _Task

# kubelet's hard eviction has no grace period: SIGKILL follows SIGTERM at once.
HARD_EVICTION_GRACE = 0.001


def _live(task: _Task) -> bool:
    """Running here and not on its way out (killed, or over its limit)."""
    return task.started and task.state is TaskState.RUNNING and not task.limit_message


def on_usage(core: AgentCore, event: e.UsageMeasured) -> None:
    for u in event.tasks:
        task = core._find(u.framework_id, u.task_id)
        if task is not None and not task.state.terminal:
            task.usage = u
    _enforce_limits(core)
    _reclaim(core)
    verdict = _evict(core, event.now)
    if core.registered:
        core._emit(c.SendUsage(report=_report(core, event, verdict)))
        core._last_sent = event.now  # the master hears from the agent: no heartbeat needed


def _enforce_limits(core: AgentCore) -> None:
    for task in core._tasks.values():
        limit = core.executor_mem_limit(task)
        if limit <= 0 or task.usage is None or not _live(task):
            continue
        if task.usage.mem > limit:
            task.limit_message = (
                f"memory limit exceeded: used {task.usage.mem:.0f} MiB, limit {limit:.0f} MiB"
            )
            core._emit(
                c.SignalGroup(
                    task_id=task.spec.task_id,
                    framework_id=task.spec.framework_id,
                    signal=Signal.KILL,
                )
            )


def _lenders(core: AgentCore) -> list[revocable.Lender]:
    return [
        revocable.Lender(
            t.spec.cpus,
            t.spec.mem,
            None if t.usage is None else t.usage.cpus,
            None if t.usage is None else t.usage.mem,
        )
        for t in core._tasks.values()
        if _live(t) and not t.spec.revocable
    ]


def _reclaim(core: AgentCore) -> None:
    borrowers = [
        revocable.Borrower(t.spec.task_id, t.spec.cpus, t.spec.mem, t.spec.framework_id)
        for t in core._tasks.values()
        if _live(t) and t.spec.revocable
    ]
    if not borrowers:
        return
    lenders = _lenders(core)
    victims = revocable.reclaim(lenders, borrowers)
    if not victims:
        return
    _, room = revocable.lendable(lenders)
    held = sum(b.mem for b in borrowers)
    message = (
        f"revocable resources reclaimed: the agent's own tasks now leave {room:.0f} MiB "
        f"unused and revocable tasks held {held:.0f} MiB"
    )
    for victim in victims:
        task = core._tasks[(victim.framework_id, victim.task_id)]
        core._kill(task, 0.0, TaskReason.REVOCABLE_RESOURCES_RECLAIMED, message)


def _evict(core: AgentCore, now: float) -> Verdict:
    cfg = core.config
    tracker = core.pressure
    used = projected_used = 0.0
    for t in core._tasks.values():
        if t.usage is None or t.state.terminal:
            continue
        used += t.usage.mem
        if _live(t):
            projected_used += t.usage.mem
    verdict = tracker.observe(cfg.mem_total - used, cfg.mem_total - projected_used, now)
    if verdict.need_mib <= 0:
        return verdict
    candidates = [
        eviction.EvictionCandidate(
            t.spec.task_id,
            t.spec.qos,
            t.spec.priority,
            t.spec.mem,
            t.usage.mem,
            t.spec.revocable,
            t.spec.framework_id,
        )
        for t in core._tasks.values()
        if _live(t) and t.usage is not None
    ]
    grace_hard = verdict.threshold == HARD
    for victim in eviction.select(candidates, verdict.need_mib):
        task = core._tasks[(victim.framework_id, victim.task_id)]
        reason = (
            TaskReason.REVOCABLE_RESOURCES_RECLAIMED if victim.revocable else TaskReason.EVICTED
        )
        message = (
            f"evicted: {verdict.message}; the task used {victim.usage_mem:.0f} MiB "
            f"({victim.over_request:+.0f} MiB over its request of {victim.request_mem:.0f}; "
            f"{victim.qos.value}, priority {victim.priority})"
        )
        core._kill(task, HARD_EVICTION_GRACE if grace_hard else 0.0, reason, message)
    return verdict


def _report(core: AgentCore, event: e.UsageMeasured, verdict: Verdict) -> UsageReport:
    cfg = core.config
    live = [t for t in core._tasks.values() if t.usage is not None and not t.state.terminal]
    mem_used = sum(t.usage.mem for t in live if t.usage is not None)
    cpus_used = sum(t.usage.cpus for t in live if t.usage is not None)
    rev_cpus = rev_mem = 0.0
    if cfg.revocable_margin is not None:
        rev_cpus, rev_mem = revocable.estimate(_lenders(core), cfg.revocable_margin)
    tracker = core.pressure
    tasks: list[tuple[str, TaskUsage]] = [
        (t.spec.framework_id, t.usage) for t in live if t.usage is not None
    ]
    return UsageReport(
        timestamp=event.now,
        mem_total=cfg.mem_total,
        mem_used=mem_used,
        mem_available=cfg.mem_total - mem_used,
        cpus_used=cpus_used,
        pressure=tracker.level,
        pressure_since=tracker.since,
        pressure_message=verdict.message,
        revocable_cpus=rev_cpus,
        revocable_mem=rev_mem,
        source=event.source,
        tasks=tuple(tasks),
    )
