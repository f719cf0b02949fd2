"""Operators' actions on tasks and frameworks: kill tasks, tear a framework down (the Operator
API's KillTasks and TeardownFramework; `corral kill`, `corral teardown`). Agents' maintenance
is maintenance.py's.

Rules:
1. Checked whole before anything changes (the core's rule 1): every task named must be known
   (live, or ended and still kept), to one framework (a task id two frameworks use needs the
   framework named); a grace period is finite and >= 0. Else refused: NOT_FOUND,
   INVALID_ARGUMENT, FAILED_PRECONDITION, naming what.
2. A live task is killed through its agent, with the grace period given (0: SIGKILL at once)
   or its own; its KILLED status reaches its framework with reason KILLED_BY_OPERATOR and a
   message naming who asked. An agent not connected is told when it re-registers
   (reconcile.py). A task already ended is answered as such; nothing is sent.
3. A teardown removes the framework as its own TEARDOWN does (subscriptions.py rule 5).
4. Every action is answered (``Answer``: what was done, per task) and recorded as one cluster
   event per object naming the requester.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from corral.limits import echo
from corral.master.core import commands as cmd
from corral.master.core import subscriptions
from corral.master.core.kills import find_task, grace_of, kill_one
from corral.master.core.records import TaskRecord
from corral.master.core.refusals import CallRejected, Refusal, invalid
from corral.master.core.states import FrameworkState
from corral.master.core.types import TaskReason

if TYPE_CHECKING:
    from corral.master.core import events as ev
    from corral.master.core.state import CoreState

Commands = list[cmd.Command]


def kill_tasks(core: CoreState, e: ev.KillTasks) -> Commands:
    """Rules 1, 2 and 4."""
    if not e.tasks:
        raise invalid("name at least one task")
    grace = grace_of(e.grace_seconds)
    tasks: dict[tuple[str, str], TaskRecord] = {}
    for framework_id, task_id in e.tasks:
        task = find_task(core, framework_id, task_id)
        tasks[(task.framework_id, task.task_id)] = task
    who = str(e.requester)
    out: Commands = []
    answered: list[tuple[str, str, str, str]] = []
    for task in tasks.values():
        if task.state.terminal:
            outcome = f"already {task.state.name}"
        else:
            outcome = kill_one(
                core, task, grace, (TaskReason.KILLED_BY_OPERATOR, f"killed by {who}"), e, out
            )
        answered.append((task.task_id, task.framework_id, task.agent_id, outcome))
        how = "its own grace period" if not grace else f"a grace period of {e.grace_seconds:g}s"
        out.append(
            core.cluster_event(
                e,
                "task_kill_requested",
                task.task_id,
                f"task of framework {task.framework_id} on agent {task.agent_id}: kill "
                f"requested by {who} with {how} ({outcome})",
            )
        )
    out.append(cmd.Answer(stimulus_id=e.stimulus_id, value=tuple(answered)))
    return out


def teardown(core: CoreState, e: ev.TeardownFramework) -> Commands:
    """Rules 3 and 4."""
    fw = core.frameworks.get(e.framework_id)
    if fw is None:
        raise CallRejected(Refusal.NOT_FOUND, f"unknown framework {echo(e.framework_id)}")
    if fw.state is FrameworkState.REMOVED:
        raise CallRejected(
            Refusal.FAILED_PRECONDITION, f"framework {e.framework_id} is already removed"
        )
    live = len(fw.tasks)
    who = str(e.requester)
    out: Commands = [
        core.cluster_event(
            e,
            "framework_teardown_requested",
            fw.framework_id,
            f"{fw.spec.name}: teardown requested by {who}; {live} tasks killed",
        )
    ]
    out += subscriptions.remove(core, fw, e, f"torn down by {who}")
    out.append(cmd.Answer(stimulus_id=e.stimulus_id, value=live))
    return out
