"""The master core driven by events; assertions on the commands it returns and on its state."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from corral.master.core import commands as cmd
from corral.master.core import events as ev
from corral.master.core.config import MasterConfig
from corral.master.core.master import CallRejected
from corral.master.core.states import AgentState, FrameworkState, IllegalTransition, validate_tables
from corral.master.core.types import ReportedTask, Requester, TaskReason, TaskSpec, TaskState
from corral.placement import Taint, TaintEffect, Toleration
from corral.resources import Resources
from tests.unit.core_harness import Harness, of, status, task


def test_transition_tables_are_complete() -> None:
    validate_tables()


def test_illegal_transition_raises_loudly() -> None:
    h = Harness()
    aid, _ = h.add_agent()
    fid, _ = h.subscribe()
    [offer] = h.offers_for(fid)
    h.accept(fid, [offer.offer_id], task("t1"))
    rec = h.core.frameworks[fid].tasks["t1"]
    with pytest.raises(IllegalTransition, match="STAGING -> STAGING"):
        h.core.set_task_state(
            rec, status("t1", fid, aid, TaskState.STAGING), ev.Tick(stimulus_id="x", now=0)
        )


def test_register_assigns_id_and_offers_whole_agent() -> None:
    h = Harness()
    aid, out = h.add_agent(resources="cpus:4;mem:4096;disk:1000;ports:[31000-31010]")
    assert aid == of(cmd.SendRegistered, out)[0].agent_id
    assert of(cmd.ClusterEvent, out)[0].kind == "agent_added"
    fid, out = h.subscribe()
    assert of(cmd.SendSubscribed, out)[0].stream_id == h.streams[fid]
    [offer] = h.offers_for(fid)
    assert offer.agent_id == aid
    assert offer.resources == Resources(4, 4096, 1000, 0, ((31000, 31010),))
    # Outstanding offers are charged: the next cycle offers nothing more.
    assert h.allocate() == []


def test_accept_launches_and_returns_leftover_under_filter() -> None:
    h = Harness()
    aid, _ = h.add_agent()
    fid, _ = h.subscribe()
    [offer] = h.offers_for(fid)
    out = h.accept(fid, [offer.offer_id], task("t1"), task("t2"), refuse=0)
    [launch] = of(cmd.SendLaunch, out)
    assert launch.agent_id == aid and [t.task_id for t in launch.tasks] == ["t1", "t2"]
    assert h.core.frameworks[fid].tasks["t1"].state is TaskState.STAGING
    assert offer.offer_id not in h.core.offers
    # refuse 0: the leftover (2 cpus) comes back in the next cycle.
    [again] = h.offers_for(fid)
    assert again.resources.cpus == pytest.approx(2) and again.resources.mem == pytest.approx(
        4096 - 256
    )


def test_decline_filters_agent_until_expiry() -> None:
    h = Harness()
    h.add_agent()
    fid, _ = h.subscribe()
    [offer] = h.offers_for(fid)
    h.handle(ev.Decline(**h.call_base(fid), offer_ids=(offer.offer_id,), refuse_seconds=10))
    assert h.offers_for(fid) == []
    h.now += 9.9
    assert h.offers_for(fid) == []
    h.now += 0.2
    assert len(h.offers_for(fid)) == 1


def test_a_refuse_filter_lasts_at_least_one_allocation_interval() -> None:
    """Mesos MESOS-4302: a filter shorter than the interval would be gone before the next
    cycle; it lasts one interval instead. refuse_seconds 0 is still no filter at all."""
    h = Harness(config=MasterConfig(allocation_interval=2.0))
    h.add_agent()
    fid, _ = h.subscribe()
    [offer] = h.offers_for(fid)
    h.handle(ev.Decline(**h.call_base(fid), offer_ids=(offer.offer_id,), refuse_seconds=0.5))
    h.now += 1.0
    assert h.offers_for(fid) == [], "a 0.5 s filter did not outlast the 2 s interval"
    h.now += 1.1
    [offer] = h.offers_for(fid)
    h.handle(ev.Decline(**h.call_base(fid), offer_ids=(offer.offer_id,), refuse_seconds=0))
    assert len(h.offers_for(fid)) == 1


def test_a_framework_sees_what_its_finished_task_freed_before_its_filter_expires() -> None:
    """The filter of an accept's leftover refuses only the leftover: when the task ends, the
    agent is offered again in the next cycle, not after the 5 s default filter."""
    h = Harness()
    aid, _ = h.add_agent(resources="cpus:4;mem:4096")
    fid, _ = h.subscribe()
    [offer] = h.offers_for(fid)
    h.accept(fid, [offer.offer_id], task("t1", "cpus:3;mem:1024"))
    h.now += 0.1
    assert h.offers_for(fid) == [], "the refused leftover was offered again"
    h.agent_updates(aid, status("t1", fid, aid, TaskState.RUNNING, uuid=b"r"))
    h.agent_updates(aid, status("t1", fid, aid, TaskState.FINISHED, uuid=b"f"))
    h.now += 0.1
    [again] = h.offers_for(fid)
    assert (again.agent_id, again.scalars[0]) == (aid, 4.0)


def revocable_task(task_id: str) -> TaskSpec:
    return TaskSpec(task_id, task_id, Resources(), revocable=Resources(cpus=0.5, mem=64))


def _one_offer(h: Harness) -> tuple[str, str, str]:
    aid, _ = h.add_agent()
    fid, _ = h.subscribe()
    [offer] = h.offers_for(fid)
    return aid, fid, offer.offer_id


@pytest.mark.parametrize(
    ("make_call", "reason"),
    [
        (lambda fid, oid: ((("nope",)), (task("t1"),)), "offer 'nope' is unknown"),
        (lambda fid, oid: ((oid, oid), (task("t1"),)), "appears twice"),
        (lambda fid, oid: ((oid,), (task("t1", "cpus:5;mem:1"),)), "exceed the offered cpus"),
        (lambda fid, oid: ((oid,), (task("t1", "cpus:1;mem:9999"),)), "exceed the offered mem"),
        (lambda fid, oid: ((oid,), (task("t1"), task("t1"))), "task id 't1' appears twice"),
        (lambda fid, oid: ((oid,), (task("", "cpus:1"),)), "empty task_id"),
        (lambda fid, oid: ((oid,), (revocable_task("t9"),)), "marked revocable and the offers"),
        (lambda fid, oid: ((), (task("t1"),)), "no offer ids"),
    ],
)
def test_bad_accept_is_refused_and_changes_nothing(make_call, reason) -> None:  # type: ignore[no-untyped-def]
    h = Harness()
    _aid, fid, oid = _one_offer(h)
    offer_ids, tasks = make_call(fid, oid)
    before = (dict(h.core.offers), dict(h.core.frameworks[fid].tasks))
    with pytest.raises(CallRejected, match=reason) as info:
        h.accept(fid, offer_ids, *tasks)
    assert info.value.code == "INVALID_ARGUMENT"
    assert (dict(h.core.offers), dict(h.core.frameworks[fid].tasks)) == before
    # The offer is still usable afterwards.
    assert of(cmd.SendLaunch, h.accept(fid, [oid], task("ok")))


def test_a_besteffort_task_is_accepted_and_charged_nothing() -> None:
    h = Harness()
    aid, fid, oid = _one_offer(h)
    launched = of(cmd.SendLaunch, h.accept(fid, [oid], task("be", "disk:1"), refuse=0))
    assert [t.task_id for c in launched for t in c.tasks] == ["be"]  # type: ignore[attr-defined]
    assert h.core.allocator.charged(fid, aid) == (0.0, 0.0, 1.0, 0.0)
    assert h.core.frameworks[fid].tasks["be"].spec.qos.value == "BestEffort"


def test_task_id_in_use_and_used_offer_are_refused() -> None:
    h = Harness()
    _aid, fid, oid = _one_offer(h)
    h.accept(fid, [oid], task("t1"), refuse=0)
    [o2] = h.offers_for(fid)
    with pytest.raises(CallRejected, match="already in use"):
        h.accept(fid, [o2.offer_id], task("t1"))
    with pytest.raises(CallRejected, match="unknown, rescinded or already used"):
        h.accept(fid, [oid], task("t2"))


def test_two_frameworks_each_run_a_task_of_one_id_on_one_agent() -> None:
    # An agent keys its tasks by (framework, task), as Mesos does (issue #41): tenants never
    # collide on an id, and an accept tells nobody which ids another framework uses.
    h = Harness()
    aid, _ = h.add_agent()
    a, _ = h.subscribe("a")
    [oa] = h.offers_for(a)
    h.accept(a, [oa.offer_id], task("t1"), refuse=0)
    b, _ = h.subscribe("b")
    [ob] = h.offers_for(b)
    [launch] = of(cmd.SendLaunch, h.accept(b, [ob.offer_id], task("t1"), refuse=0))
    assert (launch.framework_id, [t.task_id for t in launch.tasks]) == (b, ["t1"])
    assert set(h.core.agents[aid].tasks) == {(a, "t1"), (b, "t1")}
    # Their statuses are told apart by framework: a's task ends, b's runs on.
    h.agent_updates(aid, status("t1", a, aid, TaskState.FINISHED, uuid=b"u1"))
    h.agent_updates(aid, status("t1", b, aid, TaskState.RUNNING, uuid=b"u2"))
    assert set(h.core.agents[aid].tasks) == {(b, "t1")}
    assert h.core.frameworks[b].tasks["t1"].state is TaskState.RUNNING


def test_offers_of_two_agents_in_one_accept_are_refused() -> None:
    h = Harness()
    h.add_agent()
    h.add_agent()
    fid, _ = h.subscribe()
    offers = h.offers_for(fid)
    assert len(offers) == 2
    with pytest.raises(CallRejected, match="different agents"):
        h.accept(fid, [o.offer_id for o in offers], task("t1"))


@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf])
def test_bad_refuse_seconds_refused(bad: float) -> None:
    h = Harness()
    _aid, fid, oid = _one_offer(h)
    with pytest.raises(CallRejected, match="refuse_seconds"):
        h.handle(ev.Decline(**h.call_base(fid), offer_ids=(oid,), refuse_seconds=bad))
    assert oid in h.core.offers


def test_stale_stream_and_unknown_framework_refused() -> None:
    h = Harness()
    _aid, fid, _oid = _one_offer(h)
    with pytest.raises(CallRejected) as info:
        h.handle(ev.Suppress(**h.base(), framework_id=fid, stream_id="old"))
    assert info.value.code == "FAILED_PRECONDITION"
    with pytest.raises(CallRejected) as info:
        h.handle(ev.Suppress(**h.base(), framework_id="ghost", stream_id="x"))
    assert info.value.code == "NOT_FOUND"


def test_status_flow_forwards_and_acks_reach_agent() -> None:
    h = Harness()
    aid, fid, oid = _one_offer(h)
    h.accept(fid, [oid], task("t1"), refuse=0)
    out = h.agent_updates(aid, status("t1", fid, aid, TaskState.RUNNING, uuid=b"u1"))
    [fwd] = of(cmd.SendUpdates, out)
    assert fwd.framework_id == fid and fwd.statuses[0].state is TaskState.RUNNING
    assert (("t1", b"u1")) in h.core.frameworks[fid].pending
    out = h.agent_updates(aid, status("t1", fid, aid, TaskState.FINISHED, uuid=b"u2", exit_code=0))
    assert "t1" not in h.core.frameworks[fid].tasks
    assert h.core.completed[(fid, "t1")].state is TaskState.FINISHED
    out = h.handle(
        ev.Acknowledge(
            **h.call_base(fid), acknowledgements=((aid, "t1", b"u1"), (aid, "t1", b"u2"))
        )
    )
    [acks] = of(cmd.SendAgentAcks, out)
    assert acks.agent_id == aid and acks.acknowledgements == (
        (fid, "t1", b"u1"),
        (fid, "t1", b"u2"),
    )
    assert h.core.frameworks[fid].pending == {}
    # The task's resources are free again: the whole agent is offerable.
    [offer] = h.offers_for(fid)
    assert offer.resources.cpus == pytest.approx(4)


def test_unacknowledged_status_is_resent_after_retry_interval() -> None:
    h = Harness(MasterConfig(status_retry_interval=5))
    aid, fid, oid = _one_offer(h)
    h.accept(fid, [oid], task("t1"))
    h.agent_updates(aid, status("t1", fid, aid, TaskState.RUNNING, uuid=b"u1"))
    assert of(cmd.SendUpdates, h.tick(1)) == []
    [again] = of(cmd.SendUpdates, h.tick(5))
    assert again.statuses[0].uuid == b"u1"


def test_duplicate_status_is_forwarded_but_changes_nothing() -> None:
    h = Harness()
    aid, fid, oid = _one_offer(h)
    h.accept(fid, [oid], task("t1"))
    h.agent_updates(aid, status("t1", fid, aid, TaskState.RUNNING, uuid=b"u1"))
    out = h.agent_updates(aid, status("t1", fid, aid, TaskState.RUNNING, uuid=b"u1"))
    assert len(of(cmd.SendUpdates, out)) == 1
    assert h.core.frameworks[fid].tasks["t1"].state is TaskState.RUNNING


def test_status_going_backwards_is_ignored_and_acked() -> None:
    h = Harness()
    aid, fid, oid = _one_offer(h)
    h.accept(fid, [oid], task("t1"))
    h.agent_updates(aid, status("t1", fid, aid, TaskState.RUNNING, uuid=b"u1"))
    out = h.agent_updates(aid, status("t1", fid, aid, TaskState.STARTING, uuid=b"u0"))
    assert of(cmd.SendUpdates, out) == []
    assert of(cmd.SendAgentAcks, out)[0].acknowledgements == ((fid, "t1", b"u0"),)
    assert of(cmd.ClusterEvent, out)[0].kind == "status_ignored"


def test_kill_is_sent_to_agent_and_unknown_task_not_found() -> None:
    h = Harness()
    aid, fid, oid = _one_offer(h)
    h.accept(fid, [oid], task("t1"))
    [kill] = of(cmd.SendKill, h.handle(ev.Kill(**h.call_base(fid), task_id="t1")))
    assert (kill.agent_id, kill.task_id) == (aid, "t1")
    with pytest.raises(CallRejected) as info:
        h.handle(ev.Kill(**h.call_base(fid), task_id="nope"))
    assert info.value.code == "NOT_FOUND"


def test_agent_stream_loss_rescinds_offers_then_timeout_reports_lost() -> None:
    h = Harness(MasterConfig(agent_timeout=10, status_retry_interval=100))
    a1, _ = h.add_agent()
    a2, _ = h.add_agent()
    fid, _ = h.subscribe()
    offers = {o.agent_id: o for o in h.offers_for(fid)}
    h.accept(fid, [offers[a1].offer_id], task("t1"), refuse=0)
    h.agent_updates(a1, status("t1", fid, a1, TaskState.RUNNING, uuid=b"u1"))
    h.allocate()  # a1's leftover offered again
    out = h.close_agent(a1)
    rescinds = of(cmd.SendRescind, out)
    assert rescinds and all(h.core.offers.get(oid) is None for r in rescinds for oid in r.offer_ids)
    assert [o.agent_id for r in rescinds for o in [offers[a1]]] == [a1]
    assert h.core.agents[a1].state is AgentState.ACTIVE  # until the timeout
    assert of(cmd.SendUpdates, h.tick(5)) == []
    h.handle(ev.AgentHeartbeat(**h.base(), agent_id=a2, connection=h.connections[a2]))
    out = h.tick(6)
    [lost] = of(cmd.SendUpdates, out)
    assert lost.statuses[0].state is TaskState.LOST
    assert lost.statuses[0].reason is TaskReason.AGENT_UNREACHABLE
    assert h.core.agents[a1].state is AgentState.UNREACHABLE
    assert h.core.agents[a2].state is AgentState.ACTIVE
    # The other agent keeps being offered.
    h.handle(ev.Decline(**h.call_base(fid), offer_ids=tuple(h.core.offers), refuse_seconds=0))
    assert [o.agent_id for o in h.offers_for(fid)] == [a2]


def test_heartbeats_spread_out_as_the_cluster_grows_and_tighten_as_it_shrinks() -> None:
    # At most 1 heartbeat/s: past 5 agents each one is asked to heartbeat less often. A new
    # agent is the cluster growing: told the interval of 25 % more agents (the growth headroom)
    # from the 5th on, when that passes the configured 5 s.
    cfg = MasterConfig(agent_heartbeat_interval=5, agent_timeout=15)
    h = Harness(replace(cfg, max_agent_heartbeats_per_second=1.0))
    registered = [of(cmd.SendRegistered, h.add_agent()[1])[0] for _ in range(10)]
    ids = [r.agent_id for r in registered]
    given = [r.heartbeat_interval for r in registered]
    assert given == [5, 5, 5, 5, 6.25, 7.5, 8.75, 10, 11.25, 12.5]
    # The tick corrects the early ones, more than 25 % below the interval of 10 agents, to it
    # with the growth headroom (12.5 s: the cluster grew and may grow on); 8.75 and on are
    # within.
    out = of(cmd.SendHeartbeatInterval, h.tick())
    assert sorted((c.agent_id, c.heartbeat_interval) for c in out) == [
        (aid, 12.5) for aid in sorted(ids[:6])
    ]
    assert of(cmd.SendHeartbeatInterval, h.tick()) == []  # said once, not every tick
    # The timeout stretches in proportion: 3 missed heartbeats of 12.5 s.
    a1, a9 = ids[0], ids[8]

    def beat(aids: list[str]) -> None:
        for aid in aids:
            h.handle(ev.AgentHeartbeat(**h.base(), agent_id=aid, connection=h.connections[aid]))

    beat(ids)
    h.tick(20)
    beat(ids[1:])  # the others' timeouts are 24-37.5 s
    h.tick(17)
    assert h.core.agents[a1].state is AgentState.ACTIVE
    beat(ids[1:])
    out = h.tick(1)
    assert h.core.agents[a1].state is AgentState.UNREACHABLE
    [down] = [c for c in of(cmd.ClusterEvent, out) if c.subject == a1]
    assert down.message == "no heartbeat for 37.5s"
    # Down to 2 agents (8 stopped and deleted; a partition is test_a_partition_that_heals_...):
    # they are told 5 s again, and their 15 s timeout counts from then, not from their last
    # heartbeat 2 s before.
    stopped_and_deleted(h, ids[:8])
    out = of(cmd.SendHeartbeatInterval, h.tick())
    assert sorted((c.agent_id, c.heartbeat_interval) for c in out) == [
        (aid, 5.0) for aid in sorted(ids[8:])
    ]
    h.tick(14)
    assert h.core.agents[a9].state is AgentState.ACTIVE
    h.tick(2)
    assert h.core.agents[a9].state is AgentState.UNREACHABLE


def stopped_and_deleted(h: Harness, agent_ids: list[str]) -> None:
    """The agents stop (their streams close) and an operator deletes them: the cluster shrinks
    at once (a stream closing alone is an agent expected back until its timeout)."""
    for aid in agent_ids:
        h.close_agent(aid)
        h.handle(ev.DeleteAgent(**h.base(), requester=Requester("10.0.0.7:1", "ops"), agent_id=aid))


def ten_agents_retold() -> tuple[Harness, list[str]]:
    """At most 1 heartbeat/s and 5 s at least: 10 agents registered at 5, 5, 5, 5, 6.25, 7.5,
    8.75, 10, 11.25 and 12.5 s (a new agent told the growth headroom), then a tick re-tells the
    six under 10 / 1.25 s 12.5 s (ticks.py rule 3)."""
    cfg = MasterConfig(agent_heartbeat_interval=5, agent_timeout=15)
    h = Harness(replace(cfg, max_agent_heartbeats_per_second=1.0))
    ids = [of(cmd.SendRegistered, h.add_agent()[1])[0].agent_id for _ in range(10)]
    told = {c.agent_id: c.heartbeat_interval for c in of(cmd.SendHeartbeatInterval, h.tick())}
    assert told == dict.fromkeys(ids[:6], 12.5)
    return h, ids


def test_a_growing_cluster_is_retold_with_headroom_and_a_shrinking_one_without() -> None:
    # ticks.py rule 3: growth re-tells an interval 25 % longer than the size calls for, so the
    # next 56 % of growth needs no re-tell; shrinking re-tells the size's own interval.
    h, ids = ten_agents_retold()
    more = [of(cmd.SendRegistered, h.add_agent()[1])[0].agent_id for _ in range(3)]
    # 13 agents: 13 s; below 10.4 s are the two registered at 8.75 and 10 s, not the six told
    # 12.5 nor the one at 11.25, nor the three new ones (13.75-16.25).
    assert [h.core.agents[a].heartbeat_interval for a in more] == [13.75, 15.0, 16.25]
    told = {c.agent_id: c.heartbeat_interval for c in of(cmd.SendHeartbeatInterval, h.tick())}
    assert told == dict.fromkeys(ids[6:8], 16.25)
    stopped_and_deleted(h, ids[:6])
    # 7 agents: 7 s; above 7 * 1.25 * 1.25 = 10.9 s are every one left: told 7 s itself.
    told = {c.agent_id: c.heartbeat_interval for c in of(cmd.SendHeartbeatInterval, h.tick())}
    assert told == dict.fromkeys([*ids[6:], *more], 7.0)
    assert of(cmd.SendHeartbeatInterval, h.tick()) == []


def test_the_tick_re_tells_from_the_heaps_of_what_agents_were_told() -> None:
    # Clocks.told_low/told_high hold (interval, agent id) of every ACTIVE connected agent
    # (validate() checks it after each event here): the tick takes the agents off the band
    # from their tops, and skips entries gone stale (a closed agent, an interval re-told).
    h, ids = ten_agents_retold()
    clocks = h.core.clocks
    assert clocks.told_low[0] == (8.75, ids[6])
    assert clocks.told_high[0] == (-12.5, min([*ids[:6], ids[9]]))
    stopped_and_deleted(h, ids[:1])  # 9 agents: the band 7.2-14.1 s holds 8.75-12.5
    assert of(cmd.SendHeartbeatInterval, h.tick()) == []
    # A new agent is told the interval of the agents there with it and the growth headroom.
    more = [of(cmd.SendRegistered, h.add_agent()[1])[0].agent_id for _ in range(4)]
    assert [h.core.agents[a].heartbeat_interval for a in more] == [12.5, 13.75, 15.0, 16.25]
    assert clocks.told_high[0] == (-16.25, more[3])
    # 13 agents: under 13 / 1.25 = 10.4 are the two registered at 8.75 and 10 s.
    told = {c.agent_id: c.heartbeat_interval for c in of(cmd.SendHeartbeatInterval, h.tick())}
    assert told == dict.fromkeys(ids[6:8], 16.25)
    assert clocks.told_low[0] == (11.25, ids[8])
    # Down to 2 agents (5 s; above 5 * 1.25 * 1.25 = 7.8 s): the gone agents' entries, 12.5 s
    # and more, are stale and re-tell nobody.
    stopped_and_deleted(h, [*ids[1:], *more[:2]])
    told = {c.agent_id: c.heartbeat_interval for c in of(cmd.SendHeartbeatInterval, h.tick())}
    assert told == dict.fromkeys(more[2:], 5.0)


def test_a_partition_that_heals_re_tells_nobody() -> None:
    # ticks.py rule 3: an ACTIVE agent whose stream broke is expected back until its timeout,
    # so the others are not told a shorter interval when it goes, nor it and they a longer one
    # when it is back (a partition cutting half of 10,000 agents re-told 18,099 intervals).
    h, ids = ten_agents_retold()
    intervals = {a: h.core.agents[a].heartbeat_interval for a in ids}
    for aid in ids[:5]:
        h.close_agent(aid)
    assert of(cmd.SendHeartbeatInterval, h.tick()) == []
    back = [of(cmd.SendRegistered, h.add_agent(agent_id=aid)[1])[0] for aid in ids[:5]]
    assert [r.heartbeat_interval for r in back] == [10.0] * 5  # the ten agents' interval
    assert of(cmd.SendHeartbeatInterval, h.tick()) == []
    assert {a: h.core.agents[a].heartbeat_interval for a in ids[5:]} == {
        a: intervals[a] for a in ids[5:]
    }
    # Cut again and not back before their timeout (3 missed heartbeats of 10 s): the cluster
    # shrank to 5 agents (5 s; above 5 * 1.25 * 1.25 = 7.8 s are all 5 left), who are told so.
    for aid in ids[:5]:
        h.close_agent(aid)
    told: list[cmd.SendHeartbeatInterval] = []
    cut_at = h.now
    while any(h.core.agents[a].state is AgentState.ACTIVE for a in ids[:5]):
        assert h.now < cut_at + 60, "the cut agents never became UNREACHABLE"
        for aid in ids[5:]:
            h.handle(ev.AgentHeartbeat(**h.base(), agent_id=aid, connection=h.connections[aid]))
        told += of(cmd.SendHeartbeatInterval, h.tick(1))
    assert sorted((c.agent_id, c.heartbeat_interval) for c in told) == [
        (aid, 5.0) for aid in sorted(ids[5:])
    ]


def test_a_busy_agent_stays_reachable_on_status_updates_alone() -> None:
    h = Harness(MasterConfig(agent_timeout=10, status_retry_interval=100))
    a1, _ = h.add_agent()
    fid, _ = h.subscribe()
    [offer] = h.offers_for(fid)
    h.accept(fid, [offer.offer_id], task("t1"), refuse=0)
    for state in (TaskState.STARTING, TaskState.RUNNING):
        h.tick(8)
        h.agent_updates(a1, status("t1", fid, a1, state, uuid=state.name.encode()))
    h.tick(8)  # 24 s without a heartbeat, 8 s since the last status
    assert h.core.agents[a1].state is AgentState.ACTIVE


def test_offer_waits_count_from_when_resources_came_back_to_the_pool() -> None:
    h = Harness(MasterConfig(status_retry_interval=100))
    a1, _ = h.add_agent()  # registered at 1000
    fid, _ = h.subscribe()
    h.now += 2
    [offer] = h.offers_for(fid)
    assert h.core.take_offer_waits() == [2.0]
    assert h.core.take_offer_waits() == []  # taken once
    h.now += 1
    h.accept(fid, [offer.offer_id], task("t1"), refuse=0)  # the rest of the agent comes back
    h.now += 0.5
    [offer] = h.offers_for(fid)
    assert h.core.take_offer_waits() == [0.5]
    h.now += 1
    h.handle(ev.Decline(**h.call_base(fid), offer_ids=(offer.offer_id,), refuse_seconds=0))
    h.now += 1
    h.agent_updates(a1, status("t1", fid, a1, TaskState.FINISHED, uuid=b"u1"))
    h.now += 0.25
    h.allocate()
    assert h.core.take_offer_waits() == [1.25]  # from the decline, the earlier of the two
    h.now += 3
    assert h.allocate() == [] and h.core.take_offer_waits() == []  # nothing came back


def test_partition_aware_framework_sees_unreachable_then_running_again() -> None:
    h = Harness(MasterConfig(agent_timeout=10, status_retry_interval=100))
    aid, _ = h.add_agent()
    fid, _ = h.subscribe(partition_aware=True)
    [offer] = h.offers_for(fid)
    h.accept(fid, [offer.offer_id], task("t1"))
    h.agent_updates(aid, status("t1", fid, aid, TaskState.RUNNING, uuid=b"u1"))
    h.close_agent(aid)
    [upd] = of(cmd.SendUpdates, h.tick(11))
    assert upd.statuses[0].state is TaskState.UNREACHABLE
    rec = h.core.frameworks[fid].tasks["t1"]
    reported = ReportedTask(fid, rec.spec, status("t1", fid, aid, TaskState.RUNNING))
    _, out = h.add_agent(agent_id=aid, tasks=(reported,))
    assert of(cmd.ClusterEvent, out)[-1].kind == "agent_reregistered"
    assert h.core.agents[aid].state is AgentState.ACTIVE
    assert h.core.frameworks[fid].tasks["t1"].state is TaskState.RUNNING


def test_reregistration_without_a_task_reports_it_gone_or_dropped() -> None:
    h = Harness()
    aid, fid, oid = _one_offer(h)
    h.accept(fid, [oid], task("staged"), task("running"))
    h.agent_updates(aid, status("running", fid, aid, TaskState.RUNNING, uuid=b"u"))
    _, out = h.add_agent(agent_id=aid)
    states = {s.task_id: s.state for u in of(cmd.SendUpdates, out) for s in u.statuses}
    assert states == {"staged": TaskState.DROPPED, "running": TaskState.LOST}
    assert h.core.frameworks[fid].tasks == {}


def test_framework_failover_closes_old_stream_and_resends_pending() -> None:
    h = Harness()
    aid, fid, oid = _one_offer(h)
    h.accept(fid, [oid], task("t1"))
    h.agent_updates(aid, status("t1", fid, aid, TaskState.RUNNING, uuid=b"u1"))
    old_stream = h.streams[fid]
    _, out = h.subscribe(framework_id=fid)
    [close] = of(cmd.CloseFrameworkStream, out)
    assert close.stream_id == old_stream
    [resent] = of(cmd.SendUpdates, out)
    assert resent.statuses[0].uuid == b"u1"
    assert h.core.offers == {}  # the old stream's offers were taken back


def test_disconnected_framework_removed_after_failover_timeout() -> None:
    h = Harness(MasterConfig(agent_timeout=1000))
    aid, fid, oid = _one_offer(h)
    h.accept(fid, [oid], task("t1"))
    h.handle(ev.FrameworkStreamClosed(**h.base(), framework_id=fid, stream_id=h.streams[fid]))
    assert h.core.frameworks[fid].state is FrameworkState.DISCONNECTED
    assert h.allocate() == []  # a disconnected framework gets no offers
    assert of(cmd.SendKill, h.tick(30)) == []
    out = h.tick(31)  # default failover timeout: 60 s
    [kill] = of(cmd.SendKill, out)
    assert kill.task_id == "t1" and kill.agent_id == aid
    assert h.core.frameworks[fid].state is FrameworkState.REMOVED


def test_teardown_kills_tasks_and_closes_stream() -> None:
    h = Harness()
    _aid, fid, oid = _one_offer(h)
    h.accept(fid, [oid], task("t1"))
    out = h.handle(ev.Teardown(**h.call_base(fid)))
    assert of(cmd.SendKill, out)[0].task_id == "t1"
    assert of(cmd.CloseFrameworkStream, out)[0].message == "teardown"
    with pytest.raises(CallRejected):
        h.handle(ev.Suppress(**h.call_base(fid)))


def test_suppress_stops_offers_and_revive_clears_filters() -> None:
    h = Harness()
    h.add_agent()
    fid, _ = h.subscribe()
    [offer] = h.offers_for(fid)
    h.handle(ev.Decline(**h.call_base(fid), offer_ids=(offer.offer_id,), refuse_seconds=1000))
    h.handle(ev.Suppress(**h.call_base(fid)))
    assert h.offers_for(fid) == []
    h.handle(ev.Revive(**h.call_base(fid)))
    assert len(h.offers_for(fid)) == 1


def test_reconcile_answers_known_and_unknown_tasks() -> None:
    h = Harness()
    aid, fid, oid = _one_offer(h)
    h.accept(fid, [oid], task("t1"))
    out = h.handle(ev.Reconcile(**h.call_base(fid), tasks=(("t1", aid), ("ghost", aid))))
    [upd] = of(cmd.SendUpdates, out)
    got = {s.task_id: (s.state, s.reason, s.uuid) for s in upd.statuses}
    assert got["t1"] == (TaskState.STAGING, TaskReason.RECONCILIATION, b"")
    assert got["ghost"][0] is TaskState.LOST


def test_taints_keep_intolerant_framework_off_the_agent() -> None:
    h = Harness()
    spot = Taint("spot", "true", TaintEffect.NO_SCHEDULE)
    h.add_agent(taints=(spot,))
    _plain, _ = h.subscribe("plain")
    tolerant, _ = h.subscribe("tolerant", tolerations=(Toleration("spot", "true"),))
    batches = h.allocate()
    assert [b.framework_id for b in batches] == [tolerant]


def test_every_command_repeats_its_stimulus_id() -> None:
    h = Harness()
    _aid, fid, oid = _one_offer(h)
    e = ev.Accept(**h.call_base(fid), offer_ids=(oid,), tasks=(task("t1"),))
    assert all(c.stimulus_id == e.stimulus_id for c in h.handle(e))
