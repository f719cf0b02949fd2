"""The job service's admission model (frameworks/jobs/admission.py): whole-job admission,
queue order, cohorts with borrowing and lending limits, reclaim, explanations. validate()
runs after every step."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corral.frameworks.jobs.admission import Admission, AdmissionError, State
from corral.frameworks.jobs.queues import QueueConfig, QueueConfigError, Vector, single_queue


def gpus(n: float, cpus: float = 0.0) -> Vector:
    return (cpus, 0.0, 0.0, float(n))


def cohort(
    a: Any = 8, b: Any = 8, strategy: str = "BestEffortFIFO", reclaim: str = "Any", **extra: Any
) -> QueueConfig:
    def cq(name: str, gpu: Any) -> dict[str, Any]:
        return {
            "name": name,
            "cohort": "ml",
            "queueing_strategy": strategy,
            "preemption": {"reclaim_within_cohort": reclaim, **extra},
            "resources": {"default": {"gpus": gpu}},
        }

    return QueueConfig.from_json({"cluster_queues": [cq("team-a", a), cq("team-b", b)]})


class Model:
    """The model with validate() after every step and a clock."""

    def __init__(self, config: QueueConfig) -> None:
        self.m = Admission(config)
        self.now = 0.0

    def submit(self, name: str, queue: str, request: Vector, priority: int = 0, **kw: Any) -> None:
        self.now += 1
        self.m.submit(name, queue, request, priority, self.now, **kw)
        self.m.validate()

    def cycle(self) -> tuple[list[str], list[tuple[str, str]]]:
        self.now += 1
        r = self.m.cycle(self.now)
        self.m.validate()
        return [a.name for a in r.admitted], [(p.victim, p.reason) for p in r.preempted]

    def finish(self, name: str) -> None:
        self.m.finish(name)
        self.m.validate()

    def evicted(self, name: str) -> None:
        self.m.evicted(name)
        self.m.validate()

    def state(self, name: str) -> State:
        return self.m.workloads[name].state


def test_a_job_is_admitted_whole_or_not_at_all() -> None:
    m = Model(single_queue("q", gpus=8))
    m.submit("small", "q", gpus(4))
    m.submit("gang", "q", gpus(8))
    assert m.cycle() == (["small"], [])
    # 4 free: the 8-GPU gang takes nothing of them, and says why.
    assert m.state("gang") is State.PENDING
    assert m.m.ledger.usage[("q", "default")][3] == 4
    assert m.m.explain("gang") == "Pending: queue q needs 8 gpus, 4 free nominal"
    m.finish("small")
    assert m.cycle() == (["gang"], [])
    assert m.m.explain("gang") == "QuotaReserved in queue q, flavor default"


def test_resources_a_queue_does_not_name_are_not_counted() -> None:
    m = Model(single_queue("q", gpus=1))
    m.submit("cpu-heavy", "q", (1000.0, 1e6, 0.0, 0.0))
    assert m.cycle() == (["cpu-heavy"], [])


def test_priority_orders_a_queue_then_submission() -> None:
    m = Model(single_queue("q", gpus=1))
    m.submit("low", "q", gpus(1), priority=-100)
    m.submit("first", "q", gpus(1))
    m.submit("second", "q", gpus(1))
    assert [w.name for w in m.m.pending["q"]] == ["first", "second", "low"]
    assert m.cycle() == (["first"], [])
    assert m.m.position("second") == 0 and m.m.position("low") == 1


def test_strict_fifo_head_blocks_best_effort_passes_it() -> None:
    for strategy, expected in (("StrictFIFO", []), ("BestEffortFIFO", ["small"])):
        config = QueueConfig.from_json(
            {
                "cluster_queues": [
                    {
                        "name": "q",
                        "queueing_strategy": strategy,
                        "resources": {"default": {"gpus": 4}},
                    }
                ]
            }
        )
        m = Model(config)
        m.submit("running", "q", gpus(2))
        assert m.cycle() == (["running"], [])
        m.submit("big", "q", gpus(4))
        m.submit("small", "q", gpus(1))
        assert m.cycle() == (expected, []), strategy
        if strategy == "StrictFIFO":
            assert m.m.explain("small") == (
                "Pending: queue q is StrictFIFO and 1 job wait ahead of it (head: big)"
            )
        m.finish("running")
        admitted, _ = m.cycle()
        # Strict: the head goes first. Best effort: the small job it let by still holds one
        # GPU, so the head waits for it too (the price of BestEffortFIFO).
        assert admitted == (["big"] if strategy == "StrictFIFO" else [])


def test_borrowing_from_the_cohort_and_reclaim_by_the_lender() -> None:
    m = Model(cohort(a=4, b=4))
    for i in range(8):
        m.submit(f"a{i}", "team-a", gpus(1), priority=i % 2)  # a0 low, a1 high, ...
    admitted, _ = m.cycle()
    assert admitted == [f"a{i}" for i in (1, 3, 5, 7, 0, 2, 4, 6)]  # priority, then order
    assert m.m.ledger.borrowed("team-a", "default")[3] == 4
    assert m.m.ledger.lent("team-b", "default")[3] == 4
    # B wants its 4 GPUs back: A's borrowing jobs are preempted, lowest priority and newest
    # first, only as many as it needs, with a reason naming the queue.
    m.submit("b0", "team-b", gpus(2))
    admitted, preempted = m.cycle()
    assert admitted == []
    assert [v for v, _ in preempted] == ["a6", "a4"]
    assert preempted[0][1] == (
        "preempted: queue team-b reclaims its nominal quota from cohort ml "
        "(queue team-a borrows it) for job b0"
    )
    assert m.state("a6") is State.EVICTING
    assert m.m.explain("b0") == (
        "Pending: waiting for 2 preempted jobs to end (a4, a6) in flavor default"
    )
    # The next cycle waits for them rather than preempting more.
    assert m.cycle() == ([], [])
    assert m.m.explain("b0").startswith("Pending: waiting for 2 preempted jobs to end")
    m.evicted("a6")
    m.evicted("a4")
    admitted, _ = m.cycle()
    assert admitted == ["b0"]
    # The victims are back in their queue, in their old place, and say why.
    assert [w.name for w in m.m.pending["team-a"]] == ["a4", "a6"]
    assert m.m.explain("a4").endswith(
        "(requeued after it was preempted: queue team-b reclaims its nominal quota from cohort ml"
        " (queue team-a borrows it) for job b0)"
    )
    # A keeps borrowing what B does not use: 2 of B's 4 (6 of its 8 jobs run).
    assert m.cycle() == ([], [])
    assert m.m.ledger.borrowed("team-a", "default")[3] == 2
    # A job of B's beyond its nominal quota reclaims nothing: it waits.
    m.submit("b1", "team-b", gpus(3))
    assert m.cycle() == ([], [])
    assert m.m.explain("b1") == (
        "Pending: queue team-b needs 3 gpus, 0 free nominal, cohort ml lends 0"
    )


def test_a_queue_within_its_nominal_goes_before_borrowers() -> None:
    m = Model(cohort(a=4, b=4))
    m.submit("a-big", "team-a", gpus(6))  # would borrow 2 of B's
    m.submit("b-all", "team-b", gpus(4))  # submitted later, but within B's own quota
    admitted, _ = m.cycle()
    assert admitted == ["b-all"]
    assert m.m.explain("a-big") == (
        "Pending: queue team-a needs 6 gpus, 4 free nominal, cohort ml lends 0"
    )


def test_lending_limit_keeps_part_of_a_queue_for_itself() -> None:
    m = Model(cohort(a=4, b={"nominal": 4, "lending_limit": 1}))
    m.submit("a", "team-a", gpus(6))
    assert m.cycle() == ([], [])
    assert (
        m.m.explain("a") == "Pending: queue team-a needs 6 gpus, 4 free nominal, cohort ml lends 1"
    )
    m.finish("a")
    m.submit("a5", "team-a", gpus(5))
    assert m.cycle() == (["a5"], [])


def test_borrowing_limit_bounds_what_a_queue_takes_beyond_nominal() -> None:
    m = Model(cohort(a={"nominal": 4, "borrowing_limit": 2}, b=8))
    m.submit("a7", "team-a", gpus(7))
    assert m.cycle() == ([], [])
    assert "more than its nominal 4 plus borrowing limit could ever give" in m.m.explain("a7")
    m.submit("a6", "team-a", gpus(6))
    assert m.cycle() == (["a6"], [])


def test_reclaim_lower_priority_spares_borrowers_of_higher_priority() -> None:
    m = Model(cohort(a=2, b=2, reclaim="LowerPriority"))
    m.submit("a-high", "team-a", gpus(4), priority=10)
    assert m.cycle() == (["a-high"], [])
    m.submit("b", "team-b", gpus(2), priority=0)
    assert m.cycle() == ([], [])
    assert m.state("a-high") is State.ADMITTED
    m2 = Model(cohort(a=2, b=2, reclaim="Never"))
    m2.submit("a", "team-a", gpus(4), priority=-10)
    m2.cycle()
    m2.submit("b", "team-b", gpus(2))
    assert m2.cycle() == ([], [])


def test_reclaim_takes_whole_jobs_and_no_more_than_needed() -> None:
    m = Model(cohort(a=4, b=4))
    m.submit("a-gang", "team-a", gpus(6))  # borrows 2
    m.submit("a-one", "team-a", gpus(1))  # borrows 1 more
    # a-one fits A's own quota (pass 1); the gang borrows (pass 2).
    assert m.cycle() == (["a-one", "a-gang"], [])
    m.submit("b", "team-b", gpus(3))
    _, preempted = m.cycle()
    # a-one (newest) first; still short, so the gang too; then a-one is put back: the gang
    # alone frees enough. Whole jobs only.
    assert [v for v, _ in preempted] == ["a-gang"]
    assert m.state("a-one") is State.ADMITTED


def test_no_preemption_when_it_would_not_make_room() -> None:
    m = Model(cohort(a=4, b=4))
    m.submit("a", "team-a", gpus(5))
    m.cycle()
    m.submit("b", "team-b", gpus(5))  # beyond B's nominal: no reclaim for it
    assert m.cycle() == ([], [])
    assert m.state("a") is State.ADMITTED


def test_within_queue_preemption_by_priority() -> None:
    m = Model(cohort(a=2, b=0, within_cluster_queue="LowerPriority"))
    m.submit("low", "team-a", gpus(2), priority=-100)
    m.cycle()
    m.submit("high", "team-a", gpus(2), priority=100)
    _, preempted = m.cycle()
    assert preempted == [
        ("low", "preempted in queue team-a by job high of higher priority (100 > -100)")
    ]


def test_flavors_first_fit_and_a_jobs_allowed_flavors() -> None:
    config = QueueConfig.from_json(
        {
            "flavors": [
                {"name": "a100", "attributes": {"gpu-sku": "a100"}},
                {"name": "t4", "attributes": {"gpu-sku": "t4"}},
            ],
            "cluster_queues": [
                {"name": "q", "resources": {"a100": {"gpus": 2}, "t4": {"gpus": 4}}}
            ],
        }
    )
    m = Model(config)
    m.submit("x", "q", gpus(2))
    m.submit("y", "q", gpus(2))
    m.submit("only-a100", "q", gpus(1), flavors=("a100",))
    admitted, _ = m.cycle()
    assert admitted == ["x", "y"]
    assert (m.m.workloads["x"].flavor, m.m.workloads["y"].flavor) == ("a100", "t4")
    assert m.m.explain("only-a100") == (
        "Pending: queue q needs 1 gpus of flavor a100, 0 free nominal"
    )


def test_restore_admitted_charges_as_before() -> None:
    m = Model(cohort(a=4, b=4))
    m.m.restore_admitted("a", "team-a", gpus(6), 0, 1.0, seq=7, flavor="default", admitted_at=2.0)
    m.m.validate()
    assert m.m.workloads["a"].borrowing
    m.submit("b", "team-b", gpus(4))
    _, preempted = m.cycle()
    assert [v for v, _ in preempted] == ["a"]
    with pytest.raises(AdmissionError):
        m.m.submit("a", "team-a", gpus(1), 0, 3.0)


def test_queue_status_figures() -> None:
    m = Model(cohort(a=4, b=4))
    m.submit("a", "team-a", gpus(6))
    m.submit("b", "team-b", gpus(1))
    m.submit("c", "team-b", gpus(9))
    m.cycle()
    rows = {s.cluster_queue: s for s in m.m.status()}
    assert rows["team-a"].used[3] == 6 and rows["team-a"].borrowed[3] == 2
    assert rows["team-b"].lent[3] == 2 and rows["team-b"].pending == 1
    assert rows["team-b"].admitted == 1


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"cluster_queues": [{"name": "q"}]}, "cluster queue 'q'.resources must map flavors"),
        (
            {"cluster_queues": [{"name": "q", "resources": {"gpu": {}}}]},
            "unknown flavor 'gpu' (known: default)",
        ),
        (
            {"cluster_queues": [{"name": "q", "resources": {"default": {"gpus": -1}}}]},
            "cluster queue 'q'.resources.default.gpus must be a finite number >= 0, got -1",
        ),
        (
            {"cluster_queues": [{"name": "q", "resources": {"default": {"tpus": 1}}}]},
            "unknown field 'tpus'",
        ),
        (
            {
                "cluster_queues": [
                    {
                        "name": "q",
                        "resources": {"default": {"gpus": {"nominal": 1, "borrowing_limit": 1}}},
                    }
                ]
            },
            "borrowing_limit and lending_limit need a cohort",
        ),
        (
            {
                "cluster_queues": [
                    {
                        "name": "q",
                        "cohort": "c",
                        "resources": {"default": {"gpus": {"nominal": 1, "lending_limit": 2}}},
                    }
                ]
            },
            "lending_limit 2 exceeds the nominal quota 1",
        ),
        (
            {
                "cluster_queues": [
                    {"name": "q", "queueing_strategy": "LIFO", "resources": {"default": {}}}
                ]
            },
            "queueing_strategy must be StrictFIFO or BestEffortFIFO, got 'LIFO'",
        ),
        (
            {"local_queues": [{"name": "x", "cluster_queue": "nope"}], "cluster_queues": []},
            "local queue 'x': cluster_queue 'nope' is not a cluster queue",
        ),
    ],
)
def test_bad_configuration_names_the_field(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(QueueConfigError, match=None) as err:
        QueueConfig.from_json(doc)
    assert message in str(err.value)


def test_configuration_round_trips() -> None:
    config = cohort(a={"nominal": 4, "borrowing_limit": 2}, b={"nominal": 4, "lending_limit": 1})
    again = QueueConfig.from_json(config.to_json())
    assert again == config
    assert config.cluster_queue_of("team-a") is config.cluster_queues["team-a"]


# -- properties -----------------------------------------------------------------------------

Op = tuple[str, int, int, int]


@st.composite
def scripts(draw: st.DrawFn) -> list[Op]:
    ops = st.tuples(
        st.sampled_from(["submit", "submit", "cycle", "finish", "evicted"]),
        st.integers(0, 2),  # queue
        st.integers(0, 5),  # gpus
        st.integers(-1, 1),  # priority
    )
    return draw(st.lists(ops, min_size=1, max_size=40))


@settings(max_examples=150, deadline=None)
@given(
    script=scripts(),
    strategy=st.sampled_from(["StrictFIFO", "BestEffortFIFO"]),
    reclaim=st.sampled_from(["Any", "LowerPriority", "Never"]),
    lend=st.sampled_from([None, 0, 2]),
    borrow=st.sampled_from([None, 1, 3]),
)
def test_any_sequence_keeps_the_invariants(
    script: list[Op], strategy: str, reclaim: str, lend: int | None, borrow: int | None
) -> None:
    def q(name: str) -> dict[str, Any]:
        quota: dict[str, Any] = {"nominal": 4}
        if lend is not None:
            quota["lending_limit"] = lend
        if borrow is not None:
            quota["borrowing_limit"] = borrow
        return {
            "name": name,
            "cohort": "c",
            "queueing_strategy": strategy,
            "preemption": {
                "reclaim_within_cohort": reclaim,
                "within_cluster_queue": "LowerPriority",
            },
            "resources": {"default": {"gpus": quota, "cpus": 8}},
        }

    m = Model(QueueConfig.from_json({"cluster_queues": [q("a"), q("b"), q("c")]}))
    n = 0
    for op, queue, g, prio in script:
        names = sorted(m.m.workloads)
        if op == "submit":
            m.submit(f"w{n}", "abc"[queue], gpus(g, cpus=1), priority=prio)
            n += 1
        elif op == "cycle":
            before = {k: w.state for k, w in m.m.workloads.items()}
            admitted, preempted = m.cycle()
            for name in admitted:
                assert before[name] is State.PENDING
            for victim, reason in preempted:
                assert before[victim] is State.ADMITTED and "queue" in reason
            _check_no_fitting_job_waits(m.m, strategy)
            if strategy == "StrictFIFO":
                # Nothing admitted from a queue while a job ahead of it stays pending.
                for name in admitted:
                    w = m.m.workloads[name]
                    ahead = [p for p in m.m.pending[w.cluster_queue] if p.key < w.key]
                    assert not ahead, (name, [p.name for p in ahead])
        elif op == "finish" and names:
            m.finish(names[g % len(names)])
        elif op == "evicted":
            for name in names:
                if m.state(name) is State.EVICTING:
                    m.evicted(name)
                    break
        for name in m.m.workloads:
            assert m.m.explain(name)


def _check_no_fitting_job_waits(m: Admission, strategy: str) -> None:
    """After a cycle, under BestEffortFIFO, no pending workload fits within what its queue
    may take now (it would have been admitted), unless a preemption is under way."""
    if strategy != "BestEffortFIFO":
        return
    if any(w.state is State.EVICTING for w in m.workloads.values()):
        return
    for queue in m.pending.values():
        for w in queue:
            assert not m.ledger.has_room(w.cluster_queue, "default", w.request), w


def test_admission_never_exceeds_a_queue_without_a_cohort() -> None:
    m = Model(single_queue("q", gpus=3, cpus=2))
    for i in range(10):
        m.submit(f"w{i}", "q", (0.5, 0.0, 0.0, 1.0))
    admitted, _ = m.cycle()
    assert len(admitted) == 3
    assert all(
        v <= lim
        for v, lim in zip(
            m.m.ledger.usage[("q", "default")], (2, math.inf, math.inf, 3), strict=True
        )
    )
