"""Frameworks' subscriptions: a framework subscribes or fails over, disconnects, and is removed
(TEARDOWN, or its failover timeout run out); and a framework known only from agents' tasks
waits as a placeholder. Transitions: ``SUBSCRIBED ⇄ DISCONNECTED → REMOVED`` (states.py).

Rules:
1. A SUBSCRIBE is checked before anything changes: a finite ``failover_timeout`` >= 0
   (INVALID_ARGUMENT), its principal field its certificate's, not the id of a removed
   framework (FAILED_PRECONDITION), a failover keeps the name and principal the framework
   subscribed with (PERMISSION_DENIED): an id alone does not take over someone else's
   framework; and the ACLs grant its role and tolerations (authz.py). No role means ``*``; a
   role must follow Mesos' rules for role names (corral.roles.check_role; INVALID_ARGUMENT); no
   id, the shell's new one; no principal field, its certificate's. A ``failover_timeout`` past
   ``max_failover_timeout`` is capped to it (``capped``, with a cluster event), here and for
   what recovery.py reads: no framework is kept forever.
2. A failover closes the old stream and takes back the framework's outstanding offers; a
   changed role, tolerations or constraints re-add it to the allocator with its tasks' charges.
   Its unacknowledged statuses are resent at once, at most ``RESEND_BATCH`` (one UPDATE); the
   rest are due at the next tick.
3. A placeholder (a framework known only from an agent's tasks, e.g. after a master restart) is
   DISCONNECTED and suppressed, keeps its tasks until the framework subscribes or its failover
   timeout runs out, and is not durable (recovery.py). Its owner, the principal and role its
   tasks were launched with, is what the agents report with the master's seal (the first such
   report; master/security/seals.py): its tasks count in that role, and only that principal may
   subscribe with its id (authz.py rule 1). A placeholder no report names an owner of is
   taken over by no principal (a plain-text master has none to tell apart).
4. A framework whose stream closes is DISCONNECTED: its offers come back, its nominations are
   released (nominations.py) and it is suppressed; the core's tick removes it once its failover
   timeout (its own, else the master's) has run out.
5. A removed framework's offers and nominations go back, its tasks are killed (on their agents
   if connected; KILLED with reason FRAMEWORK_REMOVED either way, unless a kill already
   under way gave it a cause of its own, which stays the cause: PREEMPTED by the master or by
   its framework, an operator's kill, a drain), its unacknowledged statuses
   are dropped, its demands are forgotten (it wants nothing; views show no priority for it),
   it leaves the allocator and its stream is closed. It is kept REMOVED among a
   bounded number of removed frameworks (completed.py); the oldest past the bound are forgotten,
   here and in the registry's mirror.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

from corral.master.core import authz, mirror, nominations, statuses
from corral.master.core import commands as cmd
from corral.master.core.records import FrameworkRecord, TaskRecord
from corral.master.core.refusals import CallRejected, Refusal
from corral.master.core.states import FRAMEWORK_TRANSITIONS, FrameworkState, check
from corral.master.core.statuses import RESEND_BATCH
from corral.master.core.types import FrameworkOwner, FrameworkSpec, TaskReason, TaskState
from corral.roles import RoleError, check_role

if TYPE_CHECKING:
    from corral.master.core import events as ev
    from corral.master.core.state import CoreState

Commands = list[cmd.Command]


def subscribe(core: CoreState, e: ev.FrameworkSubscribe) -> Commands:
    """A SUBSCRIBE: a new framework, or one failing over (rules 1 and 2)."""
    spec = e.spec
    if not math.isfinite(spec.failover_timeout) or spec.failover_timeout < 0:
        raise CallRejected(
            Refusal.INVALID_ARGUMENT,
            f"failover_timeout must be a finite number >= 0, got {spec.failover_timeout}",
        )
    if not spec.role:
        spec = replace(spec, role="*")
    try:
        check_role(spec.role)
    except RoleError as exc:
        raise CallRejected(Refusal.INVALID_ARGUMENT, f"framework info: {exc}") from None
    asked = spec.failover_timeout
    spec = capped(core, spec)
    fw_id = spec.framework_id or e.new_framework_id
    principal = authz.framework_principal(core.acl, e.principal, spec)
    spec = replace(spec, framework_id=fw_id, principal=principal)
    fw = core.frameworks.get(fw_id)
    if fw is not None and fw.state is FrameworkState.REMOVED:
        raise CallRejected(
            Refusal.FAILED_PRECONDITION,
            f"framework {fw_id} was removed; subscribe without an id",
        )
    if fw is not None and not fw.placeholder:
        # Failing over is the same framework coming back; an id alone is not enough to take
        # over someone else's: its principal (a certificate's) and name must be the same.
        authz.framework_owner(core.acl, e.principal, fw, spec)
    elif fw is not None:
        # Known from its tasks only: the principal they were launched for (rule 3).
        authz.placeholder_owner(core.acl, e.principal, fw)
    authz.framework_gate(core.acl, authz.delegation_gate(core.acl, e.principal, spec), spec)
    out: Commands = []
    if fw is None:
        fw = FrameworkRecord(
            spec=spec,
            state=FrameworkState.SUBSCRIBED,
            stream_id=e.stream_id,
            connection=e.connection,
            registered_at=e.now,
        )
        core.frameworks[fw_id] = fw
        add_to_allocator(core, fw_id, spec)
        kind = "framework_added"
    else:
        if fw.connection is not None:
            out.append(
                cmd.CloseFrameworkStream(
                    stimulus_id=e.stimulus_id,
                    framework_id=fw_id,
                    stream_id=fw.stream_id,
                    message="framework failed over to a new connection",
                )
            )
        core.book.take_back(fw)
        if fw.spec != spec:
            _replace_in_allocator(core, fw, spec)
        if spec.held_by != fw.spec.held_by:
            core.tasks.held_by(fw, spec.held_by)
        fw.spec = spec
        fw.state = check(
            FRAMEWORK_TRANSITIONS, "framework", fw_id, fw.state, FrameworkState.SUBSCRIBED
        )
        fw.stream_id = e.stream_id
        fw.connection = e.connection
        fw.disconnected_at = None
        fw.placeholder = False
        fw.owner_reported = False
        kind = "framework_resubscribed"
    fw.principal = e.principal
    core.sync_allocator(fw)
    out.append(
        cmd.SendSubscribed(
            stimulus_id=e.stimulus_id,
            connection=e.connection,
            framework_id=fw_id,
            stream_id=e.stream_id,
        )
    )
    if fw.pending:
        pending = list(fw.pending.values())
        for p in pending[RESEND_BATCH:]:
            p.last_sent = -math.inf  # due at the next tick
        out += statuses.resend(fw, pending, e)
    mirror.mark_framework(core, fw)
    out.append(core.cluster_event(e, kind, fw_id, f"{spec.name} role={spec.role}"))
    if asked != spec.failover_timeout:
        out.append(
            core.cluster_event(
                e,
                "failover_timeout_capped",
                fw_id,
                f"asked for a failover timeout of {asked:g}s; kept for at most "
                f"{spec.failover_timeout:g}s once disconnected (--max-failover-timeout)",
            )
        )
    return out


def capped(core: CoreState, spec: FrameworkSpec) -> FrameworkSpec:
    """Rule 1: the spec with its failover timeout at most ``max_failover_timeout``."""
    longest = core.config.max_failover_timeout
    if spec.failover_timeout <= longest:
        return spec
    return replace(spec, failover_timeout=longest)


def placeholder(
    core: CoreState, fw_id: str, now: float, owner: FrameworkOwner | None
) -> FrameworkRecord:
    """A framework known only from an agent's tasks (e.g. after a master restart): it keeps
    its tasks until it re-subscribes or its failover timeout runs out (rule 3)."""
    owner = _valid(owner)
    spec = FrameworkSpec(framework_id=fw_id, name="(unknown until it re-subscribes)")
    if owner is not None:
        spec = replace(spec, principal=owner.principal, role=owner.role)
    fw = FrameworkRecord(
        spec=spec,
        state=FrameworkState.DISCONNECTED,
        stream_id="",
        connection=None,
        registered_at=now,
        disconnected_at=now,
        placeholder=True,
        owner_reported=owner is not None,
    )
    core.frameworks[fw_id] = fw
    core.allocator.add_framework(fw_id, spec.role)
    core.allocator.set_suppressed(fw_id, True)
    return fw


def reported_owner(core: CoreState, fw: FrameworkRecord, owner: FrameworkOwner | None) -> None:
    """Another report of a placeholder's owner (rule 3): the first sealed one counts. Sealed
    reports name one principal per framework (a failover keeps it); a framework whose role
    changed on a failover has tasks sealed with either role, and keeps the first reported."""
    owner = _valid(owner)
    if owner is None or not fw.placeholder or fw.owner_reported:
        return
    spec = replace(fw.spec, principal=owner.principal, role=owner.role)
    core.tasks.held_by(fw, owner.principal)
    if spec.role != fw.spec.role:
        _replace_in_allocator(core, fw, spec)
        core.allocator.set_suppressed(fw.framework_id, True)
    fw.spec = spec
    fw.owner_reported = True


def _valid(owner: FrameworkOwner | None) -> FrameworkOwner | None:
    """An owner whose role is a role (a plain-text master takes agents at their word)."""
    if owner is None:
        return None
    try:
        check_role(owner.role)
    except RoleError:
        return None
    return owner


def add_to_allocator(core: CoreState, fw_id: str, spec: FrameworkSpec) -> None:
    core.allocator.add_framework(
        fw_id,
        spec.role,
        spec.tolerations,
        spec.offer_constraints,
        gpu_resources=spec.gpu_resources,
    )


def _replace_in_allocator(core: CoreState, fw: FrameworkRecord, spec: FrameworkSpec) -> None:
    """Role, tolerations or constraints changed: re-add the framework with its charges."""
    fw_id = fw.framework_id
    for task in fw.tasks.values():
        agent = core.agents.get(task.agent_id)
        if agent is not None and agent.in_allocator:
            core.allocator.recover(fw_id, task.agent_id, task.spec.resources.scalars())
    core.allocator.remove_framework(fw_id)
    add_to_allocator(core, fw_id, spec)
    for task in fw.tasks.values():
        agent = core.agents.get(task.agent_id)
        if agent is not None and agent.in_allocator:
            core.allocator.allocate(fw_id, task.agent_id, task.spec.resources.scalars())


def stream_closed(core: CoreState, e: ev.FrameworkStreamClosed) -> Commands:
    """The framework's stream closed (rule 4)."""
    fw = core.frameworks.get(e.framework_id)
    if fw is None or fw.stream_id != e.stream_id or fw.state is not FrameworkState.SUBSCRIBED:
        return []
    fw.state = check(
        FRAMEWORK_TRANSITIONS,
        "framework",
        fw.framework_id,
        fw.state,
        FrameworkState.DISCONNECTED,
    )
    fw.connection = None
    fw.disconnected_at = e.now
    core.book.take_back(fw)
    nominations.release_framework(core, fw.framework_id)
    core.allocator.set_suppressed(fw.framework_id, True)
    mirror.mark_framework(core, fw)
    return [core.cluster_event(e, "framework_disconnected", fw.framework_id, "")]


def remove(core: CoreState, fw: FrameworkRecord, e: ev.Event, why: str) -> Commands:
    """Remove the framework (rule 5)."""
    core.book.take_back(fw)
    nominations.release_framework(core, fw.framework_id)
    core.preemption_budget.forget(fw.framework_id)
    core.quarantine.forget(fw.framework_id)
    core.expiries.forget(fw.framework_id)
    out: Commands = []
    for task in list(fw.tasks.values()):
        agent = core.agents.get(task.agent_id)
        if agent is not None and agent.connection is not None:
            out.append(
                cmd.SendKill(
                    stimulus_id=e.stimulus_id,
                    agent_id=task.agent_id,
                    framework_id=fw.framework_id,
                    task_id=task.task_id,
                )
            )
        reason, message = _first_cause(task) or (TaskReason.FRAMEWORK_REMOVED, why)
        status = core.new_status(task, TaskState.KILLED, reason, message, e.now)
        core.set_task_state(task, status, e)
    fw.state = check(
        FRAMEWORK_TRANSITIONS, "framework", fw.framework_id, fw.state, FrameworkState.REMOVED
    )
    fw.pending.clear()
    # A removed framework wants nothing: no demand, unmet count or priority is shown for it.
    fw.demands = {}
    fw.removed_at = e.now
    core.gang_frameworks.discard(fw.framework_id)
    mirror.mark_framework(core, fw)
    core.allocator.remove_framework(fw.framework_id)
    if fw.connection is not None:
        out.append(
            cmd.CloseFrameworkStream(
                stimulus_id=e.stimulus_id,
                framework_id=fw.framework_id,
                stream_id=fw.stream_id,
                message=why,
            )
        )
        fw.connection = None
    out.append(core.cluster_event(e, "framework_removed", fw.framework_id, why))
    keep_removed(core, fw.framework_id)
    return out


def _first_cause(task: TaskRecord) -> tuple[TaskReason, str] | None:
    """Rule 5: why a kill under way was asked for, as its KILLED status would have said
    (statuses.py rule 3)."""
    if task.preempted_by:
        return TaskReason.PREEMPTED, task.preempted_by
    return task.killed_for


def keep_removed(core: CoreState, fw_id: str) -> None:
    """The removed framework joins those kept; the oldest past the bound are forgotten
    (the registry keeps more of them, on disk: registry/prune.py)."""
    for old_id in core.completed.framework_removed(fw_id):
        old = core.frameworks.get(old_id)
        if old is not None and old.state is FrameworkState.REMOVED:
            del core.frameworks[old_id]
            core.durable_frameworks.pop(old_id, None)


def teardown(core: CoreState, e: ev.Teardown) -> Commands:
    """A framework's TEARDOWN: removed at its own request (rule 5)."""
    fw = core.caller(e)
    return remove(core, fw, e, "teardown")
