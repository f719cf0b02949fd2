"""State machines of the master core, written as data.

The rules:
- A task moves only along ``TASK_TRANSITIONS``; terminal states (FINISHED, FAILED, KILLED, ERROR,
  LOST, DROPPED, GONE) have no way out. UNREACHABLE is *not* terminal: an agent that comes back
  brings its tasks back, so UNREACHABLE may go to any state the agent reports.
- An agent is ACTIVE while its stream is up or its heartbeat timeout has not run out,
  UNREACHABLE after that, and comes back to ACTIVE by re-registering with its id. An agent the
  master knows only from its registry (after a master restart) is RECOVERING until it
  re-registers (ACTIVE) or the re-registration timeout runs out (UNREACHABLE).
- A framework is SUBSCRIBED while its event stream is up, DISCONNECTED until its failover
  timeout runs out, then REMOVED (as after TEARDOWN), which is final.
Anything else raises ``IllegalTransition``: a bug in the core, or a peer to refuse.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import TypeVar

from corral.master.core.types import TaskState

S = TypeVar("S")


class IllegalTransition(Exception):
    def __init__(self, what: str, subject: str, source: object, target: object) -> None:
        names = (getattr(source, "name", source), getattr(target, "name", target))
        super().__init__(f"{what} {subject}: illegal transition {names[0]} -> {names[1]}")
        self.source = source
        self.target = target


_T = TaskState
_ANY_LIVE = frozenset({_T.STARTING, _T.RUNNING, _T.KILLING, _T.UNREACHABLE})
_ENDS = frozenset({_T.FINISHED, _T.FAILED, _T.KILLED, _T.ERROR, _T.LOST, _T.DROPPED, _T.GONE})

TASK_TRANSITIONS: Mapping[TaskState, frozenset[TaskState]] = {
    _T.STAGING: _ANY_LIVE | _ENDS,
    _T.STARTING: frozenset({_T.RUNNING, _T.KILLING, _T.UNREACHABLE}) | _ENDS,
    _T.RUNNING: frozenset({_T.KILLING, _T.UNREACHABLE}) | _ENDS,
    _T.KILLING: frozenset({_T.UNREACHABLE}) | _ENDS,
    _T.UNREACHABLE: _ANY_LIVE | _ENDS,
    **{end: frozenset() for end in _ENDS},
    # UNKNOWN only answers reconciliation for tasks the master never heard of; no task is in it.
    _T.UNKNOWN: frozenset(),
}


class AgentState(Enum):
    ACTIVE = "active"
    UNREACHABLE = "unreachable"
    RECOVERING = "recovering"


AGENT_TRANSITIONS: Mapping[AgentState, frozenset[AgentState]] = {
    AgentState.RECOVERING: frozenset({AgentState.ACTIVE, AgentState.UNREACHABLE}),
    AgentState.ACTIVE: frozenset({AgentState.UNREACHABLE}),
    AgentState.UNREACHABLE: frozenset({AgentState.ACTIVE}),
}


def agent_shown(state: str, connected: bool, maintenance: str, drained: bool) -> str:
    """How an agent's state is shown to people, in the CLI's tables and the cluster events:
    active, cordoned, draining, drained, disconnected (ACTIVE, its stream down, before its
    timeout), recovering or unreachable; maintenance joins a state other than active
    (``disconnected,drained``). ``maintenance`` is the mode ("" none), ``drained``: draining
    with no task left."""
    mode = "drained" if maintenance == "draining" and drained else maintenance
    shown = "disconnected" if state == AgentState.ACTIVE.value and not connected else state
    if not mode:
        return shown
    return mode if shown == AgentState.ACTIVE.value else f"{shown},{mode}"


class FrameworkState(Enum):
    SUBSCRIBED = "subscribed"
    DISCONNECTED = "disconnected"
    REMOVED = "removed"


FRAMEWORK_TRANSITIONS: Mapping[FrameworkState, frozenset[FrameworkState]] = {
    FrameworkState.SUBSCRIBED: frozenset(
        {FrameworkState.SUBSCRIBED, FrameworkState.DISCONNECTED, FrameworkState.REMOVED}
    ),
    FrameworkState.DISCONNECTED: frozenset({FrameworkState.SUBSCRIBED, FrameworkState.REMOVED}),
    FrameworkState.REMOVED: frozenset(),
}


def check(table: Mapping[S, frozenset[S]], what: str, subject: str, source: S, target: S) -> S:
    """Return ``target`` if the table allows ``source -> target``, else raise."""
    if target not in table[source]:
        raise IllegalTransition(what, subject, source, target)
    return target


def validate_tables() -> None:
    """Every state of each table is a key, and every target is a known state."""
    for name, table, states in (
        ("task", TASK_TRANSITIONS, set(TaskState)),
        ("agent", AGENT_TRANSITIONS, set(AgentState)),
        ("framework", FRAMEWORK_TRANSITIONS, set(FrameworkState)),
    ):
        keys = set(table)
        if keys != states:
            raise AssertionError(f"{name} table misses states {states - keys}")
        for source, targets in table.items():
            unknown = set(targets) - states
            if unknown:
                raise AssertionError(f"{name} table: {source} -> unknown {unknown}")
