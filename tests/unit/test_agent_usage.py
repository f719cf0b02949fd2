"""The agent core's measurements: memory limits, eviction under pressure, revocable reclaim and
the usage report, driven by ``UsageMeasured`` events and asserted on the commands."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from corral.agent.core import AgentCoreConfig
from corral.agent.core import commands as c
from corral.agent.core import events as e
from corral.agent.core.eviction import EvictionCandidate, rank, select
from corral.agent.core.pressure import PressureTracker, Thresholds
from corral.agent.core.revocable import Borrower, Lender, estimate, reclaim
from corral.agent.core.status_updates import Backoff
from corral.agent.core.types import Signal, TaskReason, TaskUsage
from corral.agent.core.types import TaskState as S
from corral.qos import QosClass
from tests.unit.test_agent_core import Harness, of, sent, spec

G, B, BE = QosClass.GUARANTEED, QosClass.BURSTABLE, QosClass.BESTEFFORT


def harness(
    mem: float = 1000.0,
    hard: float | None = None,
    soft: float | None = None,
    grace: float = 0.0,
    transition: float = 0.0,
    margin: float | None = None,
) -> Harness:
    cfg = AgentCoreConfig(
        default_grace_period=3.0,
        status_backoff=Backoff(initial=1.0, maximum=8.0),
        mem_total=mem,
        thresholds=Thresholds(hard=hard, soft=soft, soft_grace=grace, transition=transition),
        revocable_margin=margin,
    )
    h = Harness(cfg)
    h.register()
    return h


def measure(now: float, **mem: float) -> e.UsageMeasured:
    return e.UsageMeasured(
        now=now, tasks=tuple(TaskUsage(t, cpus=0.1, mem=m) for t, m in mem.items())
    )


def killed(cmds: Sequence[c.Command]) -> dict[str, tuple[TaskReason, str]]:
    """Tasks moved to KILLING by these commands, with their reason and message."""
    return {
        s.task_id: (s.reason, s.message)
        for cmd in cmds
        if isinstance(cmd, c.SendStatusUpdates)
        for s in cmd.statuses
        if s.state is S.KILLING
    }


def report(cmds: Sequence[c.Command]) -> c.SendUsage:
    (cmd,) = of(cmds, c.SendUsage)
    assert isinstance(cmd, c.SendUsage)
    return cmd


# --- memory limits -------------------------------------------------------------------


def test_a_task_over_its_memory_limit_is_killed_at_once_and_ends_failed_memory_limit() -> None:
    h = harness()
    h.running(spec("t1", mem=100.0, mem_limit=200.0))
    assert of(h(measure(1.0, t1=150.0)), c.SignalGroup) == []
    cmds = h(measure(2.0, t1=250.0))
    assert of(cmds, c.SignalGroup) == [
        c.SignalGroup(task_id="t1", framework_id="f1", signal=Signal.KILL)
    ]
    assert sent(cmds) == []  # still RUNNING until its process is gone
    assert of(h(measure(3.0, t1=260.0)), c.SignalGroup) == []  # not killed twice
    cmds = h(e.ProcessExited(now=3.1, task_id="t1", signal=9))
    (status,) = [s for cmd in of(cmds, c.SendStatusUpdates) for s in cmd.statuses]  # type: ignore[attr-defined]
    assert (status.state, status.reason) == (S.FAILED, TaskReason.MEMORY_LIMIT)
    assert "used 250 MiB, limit 200 MiB" in status.message


def test_the_kernel_killing_a_task_at_its_cgroup_limit_is_memory_limit_too() -> None:
    h = harness()
    h.running(spec("t1", mem=100.0, mem_limit=100.0))
    cmds = h(e.ProcessExited(now=1.0, task_id="t1", signal=9, memory_limit=True))
    (status,) = [s for cmd in of(cmds, c.SendStatusUpdates) for s in cmd.statuses]  # type: ignore[attr-defined]
    assert (status.state, status.reason) == (S.FAILED, TaskReason.MEMORY_LIMIT)


def test_a_task_without_a_limit_is_not_limited() -> None:
    h = harness(mem=10_000.0)
    h.running(spec("t1", mem=100.0))
    assert of(h(measure(1.0, t1=5000.0)), c.SignalGroup) == []


def test_a_kill_under_way_wins_over_the_limit() -> None:
    h = harness()
    h.running(spec("t1", mem=100.0, mem_limit=100.0))
    h(e.KillTask(now=1.0, task_id="t1"))
    h(measure(1.5, t1=500.0))
    cmds = h(e.ProcessExited(now=2.0, task_id="t1", signal=15))
    assert [s.reason for cmd in of(cmds, c.SendStatusUpdates) for s in cmd.statuses] == [  # type: ignore[attr-defined]
        TaskReason.KILLED_BY_FRAMEWORK
    ]


# --- eviction order ------------------------------------------------------------------


def cand(
    task_id: str, qos: QosClass, request: float, used: float, priority: int = 0, rev: bool = False
) -> EvictionCandidate:
    return EvictionCandidate(task_id, qos, priority, request, used, rev)


@pytest.mark.parametrize(
    ("candidates", "order"),
    [
        # BestEffort (over its zero request) before Burstable within request before Guaranteed.
        (
            [cand("g", G, 100, 100), cand("b", B, 100, 50), cand("be", BE, 0, 30)],
            ["be", "b", "g"],
        ),
        # Over request: lowest priority first, then most over the request.
        (
            [
                cand("web", B, 64, 160, priority=0),
                cand("batch", BE, 0, 40, priority=0),
                cand("low", B, 64, 70, priority=-100),
            ],
            ["low", "web", "batch"],
        ),
        # Revocable tasks before anything else, even a Guaranteed revocable one.
        ([cand("be", BE, 0, 500), cand("r", G, 10, 10, rev=True)], ["r", "be"]),
        # Guaranteed last: lower priority, then the biggest; ties by id.
        (
            [cand("g2", G, 10, 10, 5), cand("g1", G, 20, 20, 5), cand("g0", G, 10, 10, 1)],
            ["g0", "g1", "g2"],
        ),
    ],
)
def test_kubelet_order(candidates: list[EvictionCandidate], order: list[str]) -> None:
    assert [x.task_id for x in rank(candidates)] == order
    assert [x.task_id for x in rank(reversed(candidates))] == order


def test_select_takes_victims_until_their_usage_covers_the_need() -> None:
    cs = [cand("a", BE, 0, 30), cand("b", BE, 0, 20), cand("c", B, 300, 200)]
    assert [x.task_id for x in select(cs, 25)] == ["a"]
    assert [x.task_id for x in select(cs, 45)] == ["a", "b"]
    assert [x.task_id for x in select(cs, 10_000)] == ["a", "b", "c"]
    assert select(cs, 0) == []
    assert select([cand("idle", BE, 0, 0)], 10) == []  # frees nothing: passed over


# --- pressure --------------------------------------------------------------------------


def test_pressure_tracker_hard_soft_grace_and_transition() -> None:
    p = PressureTracker(Thresholds(hard=100, soft=300, soft_grace=5, transition=2))
    v = p.observe(available=250, projected=250, now=10)
    assert (v.level, v.need_mib, v.since) == ("soft", 0, 10)
    v = p.observe(available=250, projected=250, now=14.9)
    assert v.need_mib == 0  # within the grace
    v = p.observe(available=250, projected=250, now=15)
    assert (v.level, v.threshold, v.need_mib, v.since) == ("soft", "soft", 50, 10)
    v = p.observe(available=50, projected=80, now=16)
    assert (v.level, v.threshold, v.need_mib) == ("hard", "hard", 20)
    v = p.observe(available=50, projected=350, now=17)  # the victims' memory is coming back
    assert (v.level, v.need_mib) == ("hard", 0)
    assert "available 50 MiB < 100 MiB" in v.message
    v = p.observe(available=400, projected=400, now=18)
    assert v.level == "hard"  # held for the transition period
    v = p.observe(available=400, projected=400, now=20)
    assert (v.level, v.since) == ("", 0)


def test_going_back_above_the_soft_threshold_restarts_its_grace() -> None:
    p = PressureTracker(Thresholds(soft=300, soft_grace=5))
    p.observe(250, 250, now=0)
    p.observe(350, 350, now=4)
    assert p.observe(250, 250, now=6).need_mib == 0
    assert p.observe(250, 250, now=11).need_mib == 50


def test_hard_pressure_evicts_besteffort_first_and_spares_guaranteed() -> None:
    h = harness(mem=1000, hard=200)
    h.running(spec("guaranteed", cpus=1.0, mem=400.0, cpus_limit=1.0, mem_limit=400.0))
    h.running(spec("besteffort"))
    h.running(spec("burstable", mem=200.0))
    cmds = h(measure(1.0, guaranteed=400, besteffort=250, burstable=150))
    assert killed(cmds) == {}  # available 200: not below
    cmds = h(measure(2.0, guaranteed=400, besteffort=300, burstable=150))
    victims = killed(cmds)
    assert list(victims) == ["besteffort"]
    reason, message = victims["besteffort"]
    assert reason is TaskReason.EVICTED
    assert "memory pressure (hard): available 150 MiB < 200 MiB" in message
    assert "used 300 MiB" in message and "BestEffort" in message
    # At once: SIGTERM, and SIGKILL right after.
    (grace,) = of(cmds, c.ScheduleGraceExpiry)
    assert grace.at - 2.0 < 0.01  # type: ignore[attr-defined]
    assert report(cmds).report.pressure == "hard"
    # The victim's memory is as good as freed: the next reading evicts nobody else.
    assert killed(h(measure(3.0, guaranteed=400, besteffort=300, burstable=150))) == {}


def test_soft_pressure_waits_its_grace_and_uses_the_tasks_own_grace_period() -> None:
    h = harness(mem=1000, soft=300, grace=10)
    h.running(spec("be", kill_grace_period=7.0))
    h.running(spec("g", cpus=1.0, mem=500.0, cpus_limit=1.0, mem_limit=500.0))
    assert killed(h(measure(1.0, be=250, g=500))) == {}
    assert report(h(measure(5.0, be=250, g=500))).report.pressure == "soft"
    assert killed(h(measure(10.9, be=250, g=500))) == {}
    cmds = h(measure(11.0, be=250, g=500))
    reason, message = killed(cmds)["be"]
    assert reason is TaskReason.EVICTED
    assert "(soft)" in message and "grace 10 s" in message
    (grace,) = of(cmds, c.ScheduleGraceExpiry)
    assert grace.at == pytest.approx(18.0)  # type: ignore[attr-defined]
    r = report(cmds).report
    assert (r.pressure, r.pressure_since) == ("soft", 1.0)


def test_no_thresholds_no_pressure() -> None:
    h = harness(mem=100)
    h.running(spec("be"))
    cmds = h(measure(1.0, be=500))
    assert killed(cmds) == {}
    r = report(cmds).report
    assert (r.pressure, r.mem_used, r.mem_available) == ("", 500, -400)


# --- revocable resources --------------------------------------------------------------


def test_revocable_estimate_is_the_unused_requests_less_the_margin() -> None:
    lenders = [Lender(2.0, 400.0, 0.5, 100.0), Lender(1.0, 100.0, 1.5, 150.0)]
    cpus, mem = estimate(lenders, 0.25)
    assert (cpus, mem) == pytest.approx((1.125, 225.0))
    assert estimate([Lender(1.0, 100.0, None, None)], 0.0) == (0.0, 0.0)


def test_reclaim_kills_the_biggest_borrowers_until_the_rest_fits() -> None:
    lenders = [Lender(1.0, 400.0, 0.1, 250.0)]  # 150 MiB lendable
    borrowers = [Borrower("r1", 0.1, 100.0), Borrower("r2", 0.1, 60.0), Borrower("r3", 0.1, 40.0)]
    assert [b.task_id for b in reclaim(lenders, borrowers)] == ["r1"]
    assert [b.task_id for b in reclaim([Lender(1.0, 400.0, 0.1, 400.0)], borrowers)] == [
        "r1",
        "r2",
        "r3",
    ]
    assert reclaim([Lender(1.0, 400.0, 0.1, 100.0)], borrowers) == []


def test_revocable_tasks_are_reclaimed_before_any_other_task_is_touched() -> None:
    h = harness(mem=1000, hard=100, margin=0.2)
    h.running(spec("serving", cpus=1.0, mem=500.0))  # Burstable
    h.running(spec("be"))
    cmds = h(measure(1.0, serving=100, be=50))
    r = report(cmds).report
    assert (r.revocable_mem, r.revocable_cpus) == pytest.approx((320.0, 0.72))
    h.running(spec("rev", cpus=0.2, mem=300.0, revocable=True))
    assert killed(h(measure(2.0, serving=100, be=50, rev=200))) == {}
    # Serving grows into its request: 250 MiB left unused < 300 lent.
    cmds = h(measure(3.0, serving=250, be=50, rev=200))
    assert {k: v[0] for k, v in killed(cmds).items()} == {
        "rev": TaskReason.REVOCABLE_RESOURCES_RECLAIMED
    }
    assert "revocable resources reclaimed" in killed(cmds)["rev"][1]


def test_under_pressure_a_revocable_task_goes_before_besteffort() -> None:
    h = harness(mem=1000, hard=200)
    h.running(spec("serving", cpus=1.0, mem=800.0))
    h.running(spec("be"))
    h.running(spec("rev", cpus=0.1, mem=300.0, revocable=True))
    cmds = h(measure(1.0, serving=300, be=400, rev=150))
    victims = killed(cmds)
    assert list(victims) == ["rev"]
    assert victims["rev"][0] is TaskReason.REVOCABLE_RESOURCES_RECLAIMED


def test_a_revocable_task_is_limited_to_what_it_borrowed() -> None:
    h = harness()
    h.running(spec("rev", cpus=0.1, mem=100.0, revocable=True))
    assert of(h(measure(1.0, rev=150)), c.SignalGroup) == [
        c.SignalGroup(task_id="rev", framework_id="f1", signal=Signal.KILL)
    ]


# --- the report ------------------------------------------------------------------------


def test_the_report_names_each_tasks_usage_and_is_sent_only_while_registered() -> None:
    h = harness(mem=1000)
    h.running(spec("t1", mem=100.0))
    r = report(h(measure(1.0, t1=40.0, unknown=999.0))).report
    assert [(fw, u.task_id, u.mem) for fw, u in r.tasks] == [("f1", "t1", 40.0)]
    assert (r.mem_total, r.mem_used, r.mem_available) == (1000.0, 40.0, 960.0)
    h(e.Disconnected(now=2.0))
    assert of(h(measure(3.0, t1=50.0)), c.SendUsage) == []


def test_replay_of_measurements_gives_identical_commands() -> None:
    def run() -> list[c.Command]:
        h = harness(mem=1000, hard=200, soft=400, grace=2, margin=0.1)
        h.running(spec("g", cpus=1.0, mem=300.0, cpus_limit=1.0, mem_limit=300.0))
        h.running(spec("be"))
        h.running(spec("b", mem=100.0, priority=10))
        out: list[c.Command] = []
        for i, (g, be, b) in enumerate([(300, 100, 100), (300, 300, 150), (300, 450, 200)]):
            out += h(measure(float(i), g=g, be=be, b=b))
        return out

    assert run() == run()
