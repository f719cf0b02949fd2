"""The agent's task transition table: data checks and the loud failure on a bad move."""

from __future__ import annotations

import pytest

from corral.agent.core.states import TASK_TRANSITIONS, IllegalTransition, check, validate_table
from corral.agent.core.types import TaskState as S


def test_table_is_complete_and_terminal_states_are_final() -> None:
    validate_table()
    for state in S:
        if state.terminal:
            assert TASK_TRANSITIONS[state] == frozenset()


@pytest.mark.parametrize(
    ("source", "target"),
    [
        (S.STAGING, S.STARTING),
        (S.STAGING, S.ERROR),
        (S.STAGING, S.DROPPED),
        (S.STAGING, S.KILLED),
        (S.STARTING, S.RUNNING),
        (S.STARTING, S.FAILED),
        (S.STARTING, S.KILLING),
        (S.RUNNING, S.FINISHED),
        (S.RUNNING, S.FAILED),
        (S.RUNNING, S.KILLING),
        (S.KILLING, S.KILLED),
    ],
)
def test_legal(source: S, target: S) -> None:
    assert check("t", source, target) is target


@pytest.mark.parametrize(
    ("source", "target"),
    [
        (S.STAGING, S.RUNNING),
        (S.STARTING, S.FINISHED),
        (S.RUNNING, S.STARTING),
        (S.KILLING, S.FINISHED),
        (S.KILLING, S.RUNNING),
        (S.FINISHED, S.RUNNING),
        (S.KILLED, S.KILLING),
        (S.FAILED, S.FINISHED),
    ],
)
def test_illegal_raises(source: S, target: S) -> None:
    with pytest.raises(IllegalTransition, match=f"{source.name} -> {target.name}"):
        check("t", source, target)


def test_the_agent_reports_exactly_the_states_the_master_accepts_from_it() -> None:
    from corral.tasks import AGENT_REPORTED_STATES, TaskState

    # A task enters the agent STAGING; every state it can reach from there is reportable.
    reachable = {TaskState.STAGING} | {t for ts in TASK_TRANSITIONS.values() for t in ts}
    assert reachable == set(AGENT_REPORTED_STATES)
