"""A framework's own calls that change what it is offered or runs, besides accepts, declines
(accepts.py), acknowledgements (statuses.py), reconciliation (reconcile.py) and teardown
(subscriptions.py): SUPPRESS and REVIVE, SET_DEMANDS, and KILL.

Rules (the core's rule 1: a refused call raises before anything changes):
1. SUPPRESS stops offers to the framework; REVIVE resumes them and clears its refuse filters
   (a framework that wants nothing by its demands stays suppressed, demands.py rule 3).
2. SET_DEMANDS replaces all of the framework's demands after demands.py checks them; a gang
   bundle cut for a demand that changed or was withdrawn is rescinded.
3. KILL of a live task asks its agent to kill it with the grace given (again when the agent
   re-registers, if it is away); KILL of a task that ended answers with its last status.
4. A KILL may say why: reason PREEMPTED only (a framework preempting its own work, as the job
   service reclaiming a queue's quota), with a message saying for whom (``MAX_KILL_MESSAGE``
   characters at most). The task's KILLED status then carries that reason and message, as
   the master's own preemption's (statuses.py rule 3), also if its framework is removed
   before the agent reports it; a ``Preempted`` event says so at once. The first cause is the
   cause: a task already being preempted, or killed by an operator or a drain, keeps its
   reason. A message without a reason, or another reason, is refused (INVALID_ARGUMENT).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

from corral import limits
from corral.limits import echo
from corral.master.core import authz, demands
from corral.master.core import commands as cmd
from corral.master.core.records import FrameworkRecord
from corral.master.core.refusals import CallRejected, Refusal
from corral.master.core.refusals import invalid as _invalid
from corral.master.core.types import Demand, TaskReason

if TYPE_CHECKING:
    from corral.master.core import events as ev
    from corral.master.core.state import CoreState

Commands = list[cmd.Command]


def suppress(core: CoreState, e: ev.Suppress) -> Commands:
    fw = core.caller(e)
    fw.suppressed = True
    core.sync_allocator(fw)
    return []


def revive(core: CoreState, e: ev.Revive) -> Commands:
    fw = core.caller(e)
    fw.suppressed = False
    core.sync_allocator(fw)  # a framework that wants nothing by its demands stays so
    core.allocator.clear_filters(fw.framework_id)
    core.expiries.revived(fw.framework_id, e.now)  # offer_expiry.py rule 4
    return []


def set_demands(core: CoreState, e: ev.SetDemands) -> Commands:
    fw = core.caller(e)
    try:
        demands.check_demands(e.demands, core.priority)
    except demands.DemandError as exc:
        raise _invalid(str(exc)) from None
    authz.demands_gate(core.acl, authz.acting(fw), e.demands)
    previous = fw.demands
    fw.demands = {d.name: d for d in e.demands}
    fw.wants_by_demand = True
    if any(d.min_member > 0 for d in e.demands):
        core.gang_frameworks.add(fw.framework_id)
    else:
        core.gang_frameworks.discard(fw.framework_id)
    out = _rescind_stale_gangs(core, fw, previous, e)
    core.demands_moved.add(fw.framework_id)
    pending = sum(demands.unmet(fw, d) for d in e.demands)
    out.append(
        core.cluster_event(
            e,
            "demands_set",
            fw.framework_id,
            f"{len(e.demands)} demands, {pending} tasks unmet",
        )
    )
    return out


def _rescind_stale_gangs(
    core: CoreState, fw: FrameworkRecord, previous: dict[str, Demand], e: ev.Event
) -> Commands:
    """A bundle was cut for a demand as it was: withdrawn or changed, its offers go back
    (RESCIND), and a gang still waiting gets a new bundle of the new shape."""
    stale = [
        g
        for g in core.book.gangs.values()
        if g.framework_id == fw.framework_id and fw.demands.get(g.demand) != previous.get(g.demand)
    ]
    if not stale:
        return []
    offers = [core.book.offers[oid] for g in stale for oid in g.offer_ids]
    core.book.give_back(offers)
    ids = tuple(o.offer_id for o in offers)
    out: Commands = [
        cmd.SendRescind(stimulus_id=e.stimulus_id, framework_id=fw.framework_id, offer_ids=ids)
    ]
    names = ", ".join(sorted({echo(g.demand) for g in stale}))
    return out + core.rescinded_events(
        out, e, f"rescinded: the gang's demand {names} changed or was withdrawn"
    )


def kill(core: CoreState, e: ev.Kill) -> Commands:
    fw = core.caller(e)
    if not math.isfinite(e.grace_seconds) or e.grace_seconds < 0:
        raise _invalid(f"kill grace period must be a finite number >= 0, got {e.grace_seconds}")
    _check_kill_reason(e)
    task = fw.tasks.get(e.task_id)
    if task is None:
        done = core.completed.get((fw.framework_id, e.task_id))
        if done is None:
            raise CallRejected(Refusal.NOT_FOUND, f"framework has no task {e.task_id!r}")
        status = replace(done.status, uuid=b"", reason=TaskReason.RECONCILIATION)
        return [
            cmd.SendUpdates(
                stimulus_id=e.stimulus_id, framework_id=fw.framework_id, statuses=(status,)
            )
        ]
    task.kill_requested = True
    out: Commands = []
    if e.reason is not None and task.killed_for is None and not task.preempted_by:
        message = e.message or f"preempted by its framework {fw.spec.name}"
        task.killed_for = (e.reason, message)
        out.append(
            core.cluster_event(
                e,
                "task_preempted",
                task.task_id,
                f"task of framework {fw.framework_id} on agent {task.agent_id}: {message}",
            )
        )
    agent = core.agents.get(task.agent_id)
    if agent is None or agent.connection is None:
        return out  # the kill is sent when the agent re-registers
    out.append(
        cmd.SendKill(
            stimulus_id=e.stimulus_id,
            agent_id=task.agent_id,
            framework_id=fw.framework_id,
            task_id=task.task_id,
            grace_seconds=e.grace_seconds,
        )
    )
    return out


# Rule 4: what a framework's KILL may say (a status message, as an attribute value's limit).
MAX_KILL_MESSAGE = limits.MAX_VALUE_LENGTH


def _check_kill_reason(e: ev.Kill) -> None:
    """Rule 4."""
    if e.reason is None:
        if e.message:
            raise _invalid(
                "kill message given without a reason: a kill's message says why it is "
                "preempted (reason PREEMPTED)"
            )
        return
    if e.reason is not TaskReason.PREEMPTED:
        raise _invalid(
            f"kill reason {e.reason.name}: a framework's kill may give reason PREEMPTED only"
        )
    if len(e.message) > MAX_KILL_MESSAGE:
        raise _invalid(
            f"kill message is {len(e.message)} characters, more than the limit of "
            f"{MAX_KILL_MESSAGE}"
        )
