"""The preemption policy (master/core/preemption.py), table-driven as kube-scheduler's
default_preemption_test.go: which agent, which victims, and what is never a victim."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from corral.master.core.preemption import AgentView, Candidate, place, victims_on_agent

LOW, MID, HIGH = -100, 0, 1000


def t(name: str, cpus: float, priority: int = LOW, at: float = 0.0, group: str = "") -> Candidate:
    return Candidate((name[0], name), priority, at, (cpus, 0.0, 0.0, 0.0), group)


def agent(aid: str, free_cpus: float, *tasks: Candidate, gpus: float = 0.0) -> AgentView:
    return AgentView(aid, (free_cpus, 0.0, 0.0, gpus), tasks)


@dataclass
class Case:
    name: str
    agents: list[AgentView]
    want: list[tuple[str, list[str]]]  # per placed task: agent, victims' task ids (sorted)
    shape: tuple[float, ...] = (2.0, 0.0, 0.0, 0.0)
    count: int = 1
    priority: int = HIGH
    spare: dict[str, int] = field(default_factory=dict)
    max_victims: int = 100


CASES = [
    Case(
        "free room needs no victim",
        [agent("a1", 0, t("x1", 4)), agent("a2", 2)],
        [("a2", [])],
    ),
    Case(
        "no lower-priority task: nothing",
        [agent("a1", 0, t("x1", 2, HIGH), t("x2", 2, 2000))],
        [],
    ),
    Case(
        "equal priority is never a victim",
        [agent("a1", 1, t("x1", 2, HIGH))],
        [],
    ),
    Case(
        "the fewest victims on the agent: the big task, not two small ones",
        [agent("a1", 0, t("x1", 1), t("x2", 1), t("x3", 2))],
        [("a1", ["x3"])],
    ),
    Case(
        "at equal priority the task launched last gives way",
        [agent("a1", 0, t("x1", 2, at=3.0), t("x2", 2, at=1.0))],
        [("a1", ["x1"])],
    ),
    Case(
        "the lowest priorities go first on the agent, the most important are reprieved",
        [agent("a1", 0, t("x1", 1, MID), t("x2", 1, LOW), t("x3", 1, LOW))],
        [("a1", ["x2", "x3"])],
    ),
    Case(
        "between agents: the lowest highest-priority victim",
        [agent("a1", 0, t("x1", 2, MID)), agent("a2", 0, t("y1", 1, LOW), t("y2", 1, LOW))],
        [("a2", ["y1", "y2"])],
    ),
    Case(
        "then the smallest sum of priorities (more victims weigh more)",
        [
            agent("a1", 0, t("x1", 1, LOW), t("x2", 1, LOW)),
            agent("a2", 1, t("y1", 1, LOW), t("y2", 1, LOW)),
        ],
        [("a2", ["y2"])],
    ),
    Case(
        "then the newest victims",
        [agent("a1", 0, t("x1", 2, LOW, at=5.0)), agent("a2", 0, t("y1", 2, LOW, at=9.0))],
        [("a2", ["y1"])],
    ),
    Case(
        "ties: the agent id",
        [agent("b", 0, t("y1", 2)), agent("a", 0, t("x1", 2))],
        [("a", ["x1"])],
    ),
    Case(
        "one agent that cannot make room even with every lower task gone is skipped",
        [agent("a1", 0, t("x1", 1)), agent("a2", 0, t("y1", 2, MID))],
        [("a2", ["y1"])],
    ),
    Case(
        "a GPU shape needs an agent with GPUs",
        [agent("a1", 0, t("x1", 4)), agent("a2", 0, t("y1", 2), gpus=1.0)],
        [("a2", ["y1"])],
        shape=(2.0, 0.0, 0.0, 1.0),
    ),
    Case(
        "three tasks: each placed in what the earlier ones left, exactly enough victims",
        [
            agent("a1", 0, t("x1", 1), t("x2", 1), t("x3", 1), t("x4", 1)),
            agent("a2", 0, t("y1", 1), t("y2", 1), t("y3", 1), t("y4", 1)),
        ],
        [("a1", ["x3", "x4"]), ("a1", ["x1", "x2"]), ("a2", ["y3", "y4"])],
        count=3,
    ),
    Case(
        "a victim freeing more than one shape: the next task needs no new victim",
        [agent("a1", 0, t("x1", 4))],
        [("a1", ["x1"]), ("a1", [])],
        count=3,
    ),
    Case(
        "a gang at its minimum keeps its tasks; another agent gives way",
        [
            agent("a1", 0, t("x1", 2, LOW, group="g")),
            agent("a2", 0, t("y1", 2, MID)),
        ],
        [("a2", ["y1"])],
        spare={"g": 0},
    ),
    Case(
        "a gang above its minimum loses only what it can spare",
        [
            agent("a1", 0, t("x1", 2, group="g"), t("x2", 2, group="g"), t("x3", 2, group="g")),
        ],
        [("a1", ["x3"])],
        count=3,
        spare={"g": 1},
    ),
    Case(
        "a gang's spare task is chosen over a more important one, and the rest make up",
        [
            agent(
                "a1",
                0,
                t("x1", 1, group="g", at=1.0),
                t("x2", 1, group="g", at=2.0),
                t("x3", 1, MID),
            )
        ],
        [("a1", ["x2", "x3"])],
        spare={"g": 1},
    ),
    Case(
        "the per-cycle bound on victims stops further placements",
        [agent("a1", 0, t("x1", 2)), agent("a2", 0, t("y1", 2)), agent("a3", 0, t("z1", 2))],
        [("a1", ["x1"]), ("a2", ["y1"])],
        count=3,
        max_victims=2,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_place(case: Case) -> None:
    got = place(case.shape, case.count, case.priority, case.agents, case.spare, case.max_victims)
    assert [(p.agent_id, sorted(v.key[1] for v in p.victims)) for p in got] == case.want


def test_victims_on_agent_none_when_nothing_allowed_frees_enough() -> None:
    tasks = [t("x1", 2, LOW, group="g"), t("x2", 1, LOW)]
    assert victims_on_agent((2.0, 0, 0, 0), (0.0, 0, 0, 0), tasks, HIGH, {"g": 0}) is None
    got = victims_on_agent((2.0, 0, 0, 0), (1.0, 0, 0, 0), tasks, HIGH, {"g": 0})
    assert got is not None and [v.key[1] for v in got] == ["x2"]


def test_a_victim_a_budget_counts_is_given_back_first_on_an_agent() -> None:
    from corral.master.core.preemption import violating

    kept = Candidate(("f", "kept"), 10, 1.0, (1.0, 0, 0, 0), budgets=("web",))
    other = Candidate(("f", "other"), 20, 1.0, (1.0, 0, 0, 0))
    shape, free = (1.0, 0, 0, 0), (0.0, 0, 0, 0)
    # Without budgets the less important task goes; with "web" allowing none, the other one.
    assert victims_on_agent(shape, free, [kept, other], HIGH, {}) == (kept,)
    assert victims_on_agent(shape, free, [kept, other], HIGH, {}, {"web": 0}) == (other,)
    assert victims_on_agent(shape, free, [kept, other], HIGH, {}, {"web": 1}) == (kept,)
    assert violating([kept, other], {"web": 0}) == {("f", "kept")}
    assert violating([kept, kept], {"web": 1}) == {("f", "kept")}
    assert violating([kept], {}) == set()
