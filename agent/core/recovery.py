"""The agent core's checkpoint (machine.py's rules on ``checkpoint``): tasks recovered from it
after a restart, and what to write to it after each batch of events."""

from __future__ import annotations

from typing import TYPE_CHECKING

from corral.agent.core import commands as c
from corral.agent.core.types import ProcessFate, RecoveredTask, TaskReason, TaskSource, TaskState

if TYPE_CHECKING:
    from corral.agent.core.machine import AgentCore, _Task


def recover_task(core: AgentCore, rt: RecoveredTask, task: _Task) -> None:
    """One task from the checkpoint, as it was when the agent stopped (``task``, its record as
    machine.py makes it from ``rt``: this module never imports machine.py at run time), moved on
    by what became of its process while the agent was down."""
    state = rt.latest.state
    if state is TaskState.KILLING:
        task.kill_reason, task.kill_message = rt.latest.reason, rt.latest.message
        task.grace_period = rt.spec.kill_grace_period or core.config.default_grace_period
    core._put(task)
    for status in rt.pending:
        core.updates.add(status, core._event.now)
    if state.terminal:
        if not rt.pending:  # acknowledged; only its checkpoint was left to remove
            core._drop((rt.spec.framework_id, rt.spec.task_id))
            if core._checkpoint:
                core._dirty[(rt.spec.framework_id, rt.spec.task_id)] = None
        return
    while_down = " while the agent was down"
    match rt.process:
        case ProcessFate.ALIVE:
            if state is TaskState.STARTING:
                core._move(task, TaskState.RUNNING)
            elif state is TaskState.KILLING:
                core._signal_term(task)  # the kill was under way: it starts over
        case ProcessFate.EXITED:
            if state is TaskState.STARTING:
                core._move(task, TaskState.RUNNING)
            core._exited(task, rt.exit_code, rt.signal, while_down)
        case ProcessFate.LAUNCH_FAILED | ProcessFate.NOT_STARTED if state is TaskState.STARTING:
            message = rt.message or "the agent stopped before the task's process started"
            core._move(task, TaskState.FAILED, TaskReason.COMMAND_LAUNCH_FAILED, message)
        case _ if state is TaskState.KILLING:
            how = f"it ended{while_down}"
            message = f"{task.kill_message}; {how}" if task.kill_message else how
            core._move(task, TaskState.KILLED, task.kill_reason, message)
        case _:
            core._move(
                task,
                TaskState.FAILED,
                TaskReason.AGENT_RESTARTED,
                f"the task ended{while_down}; exit status unknown",
                source=TaskSource.AGENT,
            )


def checkpoints(core: AgentCore, stimulus_id: str) -> list[c.Command]:
    """The checkpoint writes (and removals) of the tasks changed since the last."""
    out: list[c.Command] = []
    for key in core._dirty:
        task = core._tasks.get(key)
        framework_id, task_id = key
        if task is None or task.latest is None:
            out.append(
                c.ForgetTask(stimulus_id=stimulus_id, task_id=task_id, framework_id=framework_id)
            )
        else:
            out.append(
                c.CheckpointTask(
                    stimulus_id=stimulus_id,
                    task=task.spec,
                    latest=task.latest,
                    pending=core.updates.pending(framework_id, task_id),
                )
            )
    core._dirty.clear()
    return out
