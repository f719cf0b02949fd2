"""Killing tasks for an operator or a drain (operator_actions.py, maintenance.py): finding a
task by id, the grace period sent, and one kill with the reason its framework is told.
Its own module so that maintenance.py need not import operator_actions.py's teardown (and with
it the subscriptions and ticks)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from corral.limits import echo
from corral.master.core import commands as cmd
from corral.master.core.records import TaskRecord
from corral.master.core.refusals import CallRejected, Refusal, invalid
from corral.master.core.types import TaskReason

if TYPE_CHECKING:
    from corral.master.core import events as ev
    from corral.master.core.state import CoreState

Commands = list[cmd.Command]

# A grace of 0 to the agent means "the task's own"; an operator's 0 means at once.
AT_ONCE = 0.001


def grace_of(seconds: float | None) -> float:
    """The grace period to send (rule 2): 0 for the task's own, else at least ``AT_ONCE``."""
    if seconds is None:
        return 0.0
    if not math.isfinite(seconds) or seconds < 0:
        raise invalid(f"a grace period must be a finite number >= 0, got {seconds}")
    return max(seconds, AT_ONCE)


def find_task(core: CoreState, framework_id: str, task_id: str) -> TaskRecord:
    """The live or kept ended task (rule 1); CallRejected when unknown or ambiguous."""
    if framework_id:
        fw = core.frameworks.get(framework_id)
        if fw is None:
            raise CallRejected(Refusal.NOT_FOUND, f"unknown framework {echo(framework_id)}")
        task = fw.tasks.get(task_id) or core.completed.get((framework_id, task_id))
        if task is None:
            raise CallRejected(
                Refusal.NOT_FOUND,
                f"framework {framework_id} has no task {echo(task_id)} (ended tasks are kept "
                "only up to --max-completed-tasks-per-framework)",
            )
        return task
    found = [
        t
        for fw in core.frameworks.values()
        for t in (fw.tasks.get(task_id) or core.completed.get((fw.framework_id, task_id)),)
        if t is not None
    ]
    if not found:
        raise CallRejected(Refusal.NOT_FOUND, f"no task {echo(task_id)}")
    if len(found) > 1:
        owners = ", ".join(sorted(t.framework_id for t in found))
        raise invalid(f"task id {echo(task_id)} is used by frameworks {owners}: name the framework")
    return found[0]


def kill_one(
    core: CoreState,
    task: TaskRecord,
    grace: float,
    why: tuple[TaskReason, str],
    e: ev.Event,
    out: Commands,
) -> str:
    """Rule 2 for one live task; returns what was done."""
    task.kill_requested = True
    if task.killed_for is None and not task.preempted_by:
        task.killed_for = why
    agent = core.agents.get(task.agent_id)
    if agent is None or agent.connection is None:
        return "killing once its agent is back"
    out.append(
        cmd.SendKill(
            stimulus_id=e.stimulus_id,
            agent_id=task.agent_id,
            framework_id=task.framework_id,
            task_id=task.task_id,
            grace_seconds=grace,
        )
    )
    return "killing"
