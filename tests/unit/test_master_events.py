"""Why-pending cluster events (master/core/pending.py) and the events' fixed vocabulary
(corral/events.py): FailedScheduling with kube-scheduler's counts, rate-limited per demand;
GangUnschedulable with explain's text; Scheduled; OfferRescinded; AgentLost; the bounded log."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from corral import events as cluster_events
from corral.master.core import commands as cmd
from corral.master.core import demands, pending
from corral.master.core import events as ev
from corral.master.core.config import MasterConfig
from corral.master.event_log import EventLog
from corral.placement import TopologySpread, parse_taint
from tests.unit.core_harness import Harness, demand, of, task

CORE = Path(__file__).resolve().parents[2] / "master" / "core"


def cycle(h: Harness, advance: float = 1.0) -> list[cmd.ClusterEvent]:
    h.now += advance
    return of(cmd.ClusterEvent, h.handle(ev.AllocationTick(**h.base(), seed=7)))


def why_pending(events: list[cmd.ClusterEvent]) -> list[tuple[str, str, str]]:
    return [
        (e.reason, e.subject, e.message)
        for e in events
        if e.reason in (cluster_events.FAILED_SCHEDULING, cluster_events.GANG_UNSCHEDULABLE)
    ]


def test_every_kind_the_core_records_has_a_reason_and_an_object_kind() -> None:
    """A kind outside the table would raise in the core: find every literal kind the core's
    modules pass to cluster_event or assign to ``kind``."""
    kinds: set[str] = set()
    for path in CORE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            value: ast.expr | None = None
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "cluster_event"
                and len(node.args) >= 2
            ):
                value = node.args[1]
            elif isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "kind" for t in node.targets
            ):
                value = node.value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                kinds.add(value.value)
    from corral.master.core.master import _ENDED_KIND

    kinds |= set(_ENDED_KIND.values())
    assert len(kinds) > 20, kinds  # the scan found the core's calls
    assert kinds - set(cluster_events.KINDS) == set()
    assert cluster_events.KINDS["agent_unreachable"] == (cluster_events.AGENT_LOST, "agent")
    assert cluster_events.KINDS["task_preempted"][0] == cluster_events.PREEMPTED


def test_failed_scheduling_counts_agents_per_reason_and_is_rate_limited() -> None:
    h = Harness(config=MasterConfig(pending_event_interval=5.0, pending_event_repeat=60.0))
    fid, _ = h.subscribe("trainer", gpu_resources=True)
    for i in range(2):
        h.add_agent(f"c{i}", resources="cpus:4;mem:4096")
    h.add_agent("spot", resources="cpus:4;mem:4096", taints=(parse_taint("spot=true:NoSchedule"),))
    h.set_demands(fid, demand("train", "cpus:1;mem:128;gpus:1", count=2))
    subject = f"{fid}/train"
    expected = "0/3 agents: 3 insufficient gpus, 1 taint spot=true:NoSchedule"
    [event] = [e for e in cycle(h) if e.reason == cluster_events.FAILED_SCHEDULING]
    assert (event.kind, event.object_kind, event.subject) == (
        "demand_unschedulable",
        "demand",
        subject,
    )
    assert event.message == expected
    # The same message: nothing until the repeat period (60 s), one cycle a second.
    quiet = [why_pending(cycle(h)) for _ in range(58)]
    assert quiet == [[]] * 58
    repeated: list[tuple[str, str, str]] = []
    for _ in range(5):
        repeated += why_pending(cycle(h))
    assert repeated == [(cluster_events.FAILED_SCHEDULING, subject, expected)]
    # A new reason changes the message: recorded at the next scan (at most one per 5 s).
    h.add_agent("small", resources="cpus:1;mem:64;gpus:1")
    changed: list[tuple[str, str, str]] = []
    for _ in range(5):
        changed += why_pending(cycle(h))
    assert changed == [
        (
            cluster_events.FAILED_SCHEDULING,
            subject,
            "0/4 agents: 3 insufficient gpus, 1 insufficient mem, 1 taint spot=true:NoSchedule",
        )
    ]
    # Room appears: no event; the demand's tasks launch: Scheduled.
    h.add_agent("gpu", resources="cpus:4;mem:4096;gpus:2")
    events = cycle(h, advance=5.0)
    assert why_pending(events) == []
    [offer] = [o for o in h.offers_for(fid) if o.agent_id == "gpu"] or [
        o for o in h.core.offers.values() if o.agent_id == "gpu"
    ]
    out = h.accept(fid, [offer.offer_id], task("t1", "cpus:1;mem:128;gpus:1", demand="train"))
    [scheduled] = of(cmd.ClusterEvent, out)
    assert (scheduled.reason, scheduled.subject) == (cluster_events.SCHEDULED, subject)
    assert scheduled.message == "1 task launched on agent gpu; 1 of 2 unmet"


def test_refuse_filters_and_suppression() -> None:
    h = Harness()
    fid, _ = h.subscribe("picky")
    h.add_agent("a", resources="cpus:2;mem:1024")
    h.set_demands(fid, demand("web", "cpus:1;mem:128", count=1))
    [offer] = h.offers_for(fid)
    h.handle(ev.Decline(**h.call_base(fid), offer_ids=(offer.offer_id,), refuse_seconds=3600.0))
    assert why_pending(cycle(h, advance=5.0)) == [
        (cluster_events.FAILED_SCHEDULING, f"{fid}/web", "0/1 agents: 1 refuse filter")
    ]
    reasons = h.core.explain(fid, h.now)["pending_demands"][0]["reasons"]
    assert reasons == [{"reason": "refuse filter", "agents": 1, "sample_agents": ["a"]}]
    h.handle(ev.Suppress(**h.call_base(fid)))
    assert why_pending(cycle(h, advance=120.0)) == []  # it waits by its own choice


def test_gang_unschedulable_says_how_many_tasks_and_why() -> None:
    h = Harness()
    fid, _ = h.subscribe("trainer", gpu_resources=True)
    for i in range(2):
        h.add_agent(f"g{i}", resources="cpus:4;mem:4096;gpus:1")
    h.add_agent("c0", resources="cpus:4;mem:4096")
    h.set_demands(fid, demand("train", "cpus:1;mem:128;gpus:1", count=3, min_member=3))
    [event] = why_pending(cycle(h))
    assert event == (
        cluster_events.GANG_UNSCHEDULABLE,
        f"{fid}/train",
        "1/3 tasks unplaceable: insufficient gpus on 1 agent",
    )
    assert why_pending(cycle(h)) == []  # rate-limited
    h.add_agent("g9", resources="cpus:4;mem:4096;gpus:1")  # the bundle is cut: no event
    assert why_pending(cycle(h, advance=60.0)) == []


def test_no_events_when_turned_off_or_without_demands() -> None:
    h = Harness(config=MasterConfig(pending_event_interval=0.0))
    fid, _ = h.subscribe()
    h.set_demands(fid, demand("big", "cpus:100;mem:128"))
    h.add_agent("a")
    assert why_pending(cycle(h)) == []
    plain = Harness()
    plain.subscribe()  # never sets a demand: plain Mesos
    assert why_pending(cycle(plain)) == []


def test_an_agent_leaving_rescinds_its_offers_and_is_reported() -> None:
    h = Harness()
    fid, _ = h.subscribe()
    aid, _ = h.add_agent("a")
    [offer] = h.offers_for(fid)
    out = of(cmd.ClusterEvent, h.close_agent(aid))
    rescinded = [e for e in out if e.reason == cluster_events.OFFER_RESCINDED]
    assert [(e.subject, e.message) for e in rescinded] == [
        (fid, "1 offer of agent a rescinded: the agent disconnected")
    ]
    assert offer.offer_id not in h.core.offers
    h.now += 3600
    lost = [e for e in of(cmd.ClusterEvent, h.tick()) if e.reason == cluster_events.AGENT_LOST]
    assert [(e.kind, e.object_kind, e.subject) for e in lost] == [
        ("agent_unreachable", "agent", aid)
    ]


def test_the_event_log_is_bounded_and_counts_what_it_drops() -> None:
    log = EventLog(3)

    def event(i: int, kind: str) -> cmd.ClusterEvent:
        reason, object_kind = cluster_events.KINDS[kind]
        return cmd.ClusterEvent(
            stimulus_id=f"s{i}",
            kind=kind,
            subject="x",
            message=str(i),
            timestamp=float(i),
            reason=reason,
            object_kind=object_kind,
        )

    dropped = [
        log.append(event(i, "agent_added" if i % 2 else "agent_unreachable")) for i in range(5)
    ]
    assert dropped == [False, False, False, True, True] and log.dropped == 2
    assert [e.message for e in log] == ["2", "3", "4"]
    assert [e.message for e in log.select(cluster_events.AGENT_LOST)] == ["2", "4"]
    with pytest.raises(ValueError):
        EventLog(0)
    with pytest.raises(ValueError, match="unknown reason 'Lost'"):
        cluster_events.check_reason("Lost")


def test_a_scan_reasons_once_per_shape_and_says_what_each_demand_would_be_told() -> None:
    """pending.py rule 5: demands of one framework with one ``reasons_key`` share the reasons a
    scan counts (one computation, not counted twice against MAX_REASONED_PER_SCAN); a demand
    with an enforced spread rule is its own key (its tasks are counted by name). Each event's
    message is the one a scan of that demand alone would record."""
    h = Harness(config=MasterConfig(pending_event_interval=5.0))
    fid, _ = h.subscribe("wide")
    for i in range(3):
        h.add_agent(f"a{i}", resources="cpus:4;mem:4096", attributes={"zone": f"z{i % 2}"})
    big = [
        demand(f"big{k}", "cpus:8;mem:128", count=1)
        for k in range(pending.MAX_REASONED_PER_SCAN + 5)
    ]
    spread = demand("spread", "cpus:8;mem:128", count=1, spread=TopologySpread("zone", 1))
    h.set_demands(fid, *big, spread)
    got = {subject: message for _, subject, message in why_pending(cycle(h))}
    fw = h.core.frameworks[fid]
    agents = demands.connected_agents(h.core)
    held = demands.held_back(h.core, fw, h.now)
    # Every demand reasoned in one scan, past MAX_REASONED_PER_SCAN: they share two keys.
    assert len(got) == len(big) + 1
    for d in [*big, spread]:
        alone = demands.demand_reasons(h.core, fw, d, agents, held)
        assert got[f"{fid}/{d.name}"] == pending.failed_scheduling_message(len(agents), alone)
    assert demands.reasons_key(fw, big[0]) == demands.reasons_key(fw, big[1])
    assert demands.reasons_key(fw, big[0]) != demands.reasons_key(fw, spread)
