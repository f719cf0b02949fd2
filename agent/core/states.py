"""The agent's task lifecycle, written as data.

The rules:
- A task the agent accepts is STAGING for the length of one event: it moves to STARTING when the
  executor is asked to start it, or straight to ERROR (invalid), DROPPED (the agent is shutting
  down) or KILLED (a kill for a task the agent never ran, recorded so the master learns).
- STARTING becomes RUNNING when the process exists, FAILED when it could not be started, and
  KILLING when a kill arrives first (the signal then waits for the process to exist).
- RUNNING ends FINISHED (exit 0) or FAILED (anything else), or becomes KILLING.
- KILLING ends KILLED, however the process exits: the framework asked for it to stop.
- A custom executor (Mesos' executor API) reports its task's states itself
  (``EXECUTOR_TRANSITIONS``): from STARTING, RUNNING or KILLING it may end the task in any
  terminal state an executor may send, STARTING may become RUNNING, a live task KILLING, and a
  repeated state (RUNNING again, say) is a new status of the same state, as on Mesos.
- Terminal states have no way out. Anything else raises ``IllegalTransition``: it means an
  executor reported something impossible (e.g. an exit before a start), which is a bug to see.
"""

from __future__ import annotations

from collections.abc import Mapping

from corral.agent.core.types import TaskState

_T = TaskState


class IllegalTransition(Exception):
    def __init__(self, task_id: str, source: TaskState, target: TaskState) -> None:
        super().__init__(f"task {task_id}: illegal transition {source.name} -> {target.name}")
        self.task_id = task_id
        self.source = source
        self.target = target


TASK_TRANSITIONS: Mapping[TaskState, frozenset[TaskState]] = {
    _T.STAGING: frozenset({_T.STARTING, _T.ERROR, _T.DROPPED, _T.KILLED}),
    _T.STARTING: frozenset({_T.RUNNING, _T.FAILED, _T.KILLING}),
    _T.RUNNING: frozenset({_T.FINISHED, _T.FAILED, _T.KILLING}),
    _T.KILLING: frozenset({_T.KILLED}),
    # Terminal, and states only the master uses: no way out, no way in.
    **{
        s: frozenset()
        for s in TaskState
        if s not in {_T.STAGING, _T.STARTING, _T.RUNNING, _T.KILLING}
    },
}


_BY_EXECUTOR = frozenset(
    {_T.FINISHED, _T.FAILED, _T.KILLED, _T.ERROR, _T.LOST, _T.DROPPED, _T.GONE}
)
EXECUTOR_TRANSITIONS: Mapping[TaskState, frozenset[TaskState]] = {
    _T.STARTING: _BY_EXECUTOR | {_T.STARTING, _T.RUNNING, _T.KILLING},
    _T.RUNNING: _BY_EXECUTOR | {_T.RUNNING, _T.KILLING},
    _T.KILLING: _BY_EXECUTOR | {_T.KILLING},
}


def check_executor(task_id: str, source: TaskState, target: TaskState) -> TaskState:
    """Return ``target`` if a custom executor may move its task ``source -> target``."""
    if target not in EXECUTOR_TRANSITIONS.get(source, frozenset()):
        raise IllegalTransition(task_id, source, target)
    return target


def check(task_id: str, source: TaskState, target: TaskState) -> TaskState:
    """Return ``target`` if the table allows ``source -> target``, else raise."""
    if target not in TASK_TRANSITIONS[source]:
        raise IllegalTransition(task_id, source, target)
    return target


def validate_table() -> None:
    """Every state is a key, terminal states lead nowhere."""
    missing = set(TaskState) - set(TASK_TRANSITIONS)
    if missing:
        raise AssertionError(f"task table misses states {missing}")
    for source, targets in TASK_TRANSITIONS.items():
        if source.terminal and targets:
            raise AssertionError(f"terminal state {source.name} has transitions {targets}")
