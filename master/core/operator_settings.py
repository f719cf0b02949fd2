"""What an operator sets: priority classes, and roles' weights and quotas.

Rules:
1. A setting is checked before anything changes (INVALID_ARGUMENT with the reason); a
   priority class in use by a framework's demand or task cannot be deleted
   (FAILED_PRECONDITION), nor an unknown one (NOT_FOUND).
2. Applied, it goes to the allocator and to the core's tables at once (``apply_weight``,
   ``apply_quota``: recovery applies what the registry held the same way), is persisted (a
   change, durable.py) and told as a cluster event.
3. A priority class set or deleted may move every framework's priority: all are marked for
   the after-event sync (the core's rule 6).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from corral.limits import echo
from corral.master.core import commands as cmd
from corral.master.core import demands
from corral.master.core import events as ev
from corral.master.core.durable import DeletePriorityClass, PutPriorityClass, PutQuota, PutWeight
from corral.master.core.refusals import CallRejected, Refusal
from corral.master.core.refusals import invalid as _invalid
from corral.priority import PriorityClassError
from corral.roles import Quota, RoleError, check_quota, check_role, check_weight

if TYPE_CHECKING:
    from corral.master.core.state import CoreState

Commands = list[cmd.Command]


def set_priority_class(core: CoreState, e: ev.SetPriorityClass) -> Commands:
    c = e.priority_class
    try:
        core.priority.set(c)
    except PriorityClassError as exc:
        raise _invalid(str(exc)) from None
    # A value or the default moved: every framework's priority may have, and every task's.
    core.demands_moved.update(core.frameworks)
    core.recount_task_sums()
    core.changes.append(PutPriorityClass(c))
    return [
        core.cluster_event(
            e,
            "priority_class_set",
            c.name,
            f"value {c.value} {c.preemption_policy.value}"
            + (" (global default)" if c.global_default else ""),
        )
    ]


def delete_priority_class(core: CoreState, e: ev.DeletePriorityClass) -> Commands:
    if e.name not in core.priority.classes:
        raise CallRejected(Refusal.NOT_FOUND, f"unknown priority class {echo(e.name)}")
    user = demands.classes_in_use(core, e.name)
    if user:
        raise CallRejected(
            Refusal.FAILED_PRECONDITION,
            f"priority class {echo(e.name)} is in use by {user}",
        )
    try:
        core.priority.delete(e.name)
    except PriorityClassError as exc:
        raise CallRejected(Refusal.FAILED_PRECONDITION, str(exc)) from None
    core.changes.append(DeletePriorityClass(e.name))
    core.recount_task_sums()
    return [core.cluster_event(e, "priority_class_deleted", e.name, "")]


def set_weight(core: CoreState, e: ev.SetWeight) -> Commands:
    try:
        weight = check_weight(check_role(e.role), e.weight)
    except RoleError as exc:
        raise _invalid(str(exc)) from None
    apply_weight(core, e.role, weight)
    core.changes.append(PutWeight(e.role, weight))
    return [core.cluster_event(e, "role_weight_set", e.role, f"weight {weight:g}")]


def set_quota(core: CoreState, e: ev.SetQuota) -> Commands:
    try:
        quota = check_quota(check_role(e.role), e.guarantee, e.limit)
    except RoleError as exc:
        raise _invalid(str(exc)) from None
    apply_quota(core, e.role, quota)
    core.changes.append(PutQuota(e.role, quota))
    return [core.cluster_event(e, "role_quota_set", e.role, f"quota {quota}")]


def apply_weight(core: CoreState, role: str, weight: float) -> None:
    core.allocator.set_weight(role, weight)
    core.roles.set_weight(role, weight)


def apply_quota(core: CoreState, role: str, quota: Quota) -> None:
    none = quota.is_none()
    core.allocator.set_quota(
        role,
        None if none else quota.guarantee,
        None if none else quota.limit,
    )
    core.roles.set_quota(role, quota)
