"""Gang offers in the master core (master/core/gangs.py): a gang demand is offered as one
bundle or not at all, accepted whole, and returned whole."""

from __future__ import annotations

from typing import Any

import pytest

from corral.master.core import commands as cmd
from corral.master.core import events as ev
from corral.master.core.refusals import CallRejected, Refusal
from corral.master.core.types import TaskSpec, TaskState
from tests.unit.core_harness import Harness, demand, of, status, task

GPU_AGENT = "cpus:4;mem:4096;gpus:1"
SHAPE = "cpus:1;mem:128;gpus:1"


def gang_cluster(gpu_agents: int, other_agents: int = 0) -> tuple[Harness, str]:
    h = Harness()
    fid, _ = h.subscribe("trainer", gpu_resources=True)
    for i in range(gpu_agents):
        h.add_agent(f"g{i}", resources=GPU_AGENT)
    for i in range(other_agents):
        h.add_agent(f"c{i}", resources="cpus:4;mem:4096")
    return h, fid


def member(task_id: str, agent_id: str = "", resources: str = SHAPE) -> TaskSpec:
    t = task(task_id, resources, demand="train")
    t.agent_id = agent_id
    return t


def snapshot(h: Harness, fid: str) -> dict[str, Any]:
    core = h.core
    return {
        "offers": sorted(core.offers),
        "gangs": sorted(core.book.gangs),
        "tasks": sorted(core.frameworks[fid].tasks),
        "charged": {a: core.allocator.charged(fid, a) for a in sorted(core.agents)},
        "free_ports": {a: r.free_ports for a, r in core.agents.items()},
    }


def test_a_gang_is_offered_as_one_bundle_of_its_members_only() -> None:
    h, fid = gang_cluster(4, other_agents=1)
    other, _ = h.subscribe("other", gpu_resources=True)
    h.set_demands(fid, demand("train", SHAPE, count=3, min_member=3))
    batches = {b.framework_id: b.offers for b in h.allocate()}
    bundle = batches[fid]
    assert len(bundle) == 3  # nothing else: a waiting gang is offered only as a bundle
    gang_ids = {o.gang_id for o in bundle}
    assert len(gang_ids) == 1 and "" not in gang_ids
    assert sorted(o.agent_id for o in bundle) == ["g0", "g1", "g2"]  # most slots, then by id
    assert all(list(o.scalars) == [1.0, 128.0, 0.0, 1.0] for o in bundle)
    # Only the members' resources are held: the rest of those agents goes to others.
    rest = {o.agent_id: list(o.scalars) for o in batches[other]}
    assert rest["g0"] == [3.0, 3968.0, 0.0, 0.0]
    assert rest["g3"] == [4.0, 4096.0, 0.0, 1.0]
    assert h.core.explain(fid, h.now)["pending_demands"][0]["summary"].startswith(
        f"3 tasks offered as gang {bundle[0].gang_id} on 3 agents"
    )
    assert h.offers_for(fid) == []  # one bundle outstanding per demand


def test_no_partial_hold_when_the_members_do_not_fit() -> None:
    h, fid = gang_cluster(2, other_agents=1)
    h.set_demands(fid, demand("train", SHAPE, count=3, min_member=3))
    assert h.offers_for(fid) == []
    assert all(h.core.allocator.charged(fid, a) == (0.0,) * 4 for a in h.core.agents)
    pending = h.core.explain(fid, h.now)["pending_demands"][0]
    assert pending["gang"]["members"] == 3 and pending["gang"]["placeable"] == 2
    assert pending["summary"].startswith("1/3 tasks unplaceable: insufficient gpus on 1 agent;")
    h.add_agent("g9", resources=GPU_AGENT)  # the third GPU arrives: the bundle is cut
    bundle = h.offers_for(fid)
    assert sorted(o.agent_id for o in bundle) == ["g0", "g1", "g9"]


def test_a_larger_agent_holds_several_members() -> None:
    h, fid = gang_cluster(1)
    h.add_agent("big", resources="cpus:8;mem:8192;gpus:2")
    h.set_demands(fid, demand("train", SHAPE, count=3, min_member=3))
    bundle = h.offers_for(fid)
    assert {o.agent_id: list(o.scalars)[3] for o in bundle} == {"big": 2.0, "g0": 1.0}


def test_accepting_a_gang_launches_every_member_on_its_agent() -> None:
    h, fid = gang_cluster(3)
    h.set_demands(fid, demand("train", SHAPE, count=3, min_member=3))
    bundle = h.offers_for(fid)
    tasks = [member(f"m{i}", o.agent_id) for i, o in enumerate(bundle)]
    out = h.accept(fid, [o.offer_id for o in bundle], *tasks)
    launches = {c.agent_id: [t.task_id for t in c.tasks] for c in of(cmd.SendLaunch, out)}
    assert launches == {o.agent_id: [f"m{i}"] for i, o in enumerate(bundle)}
    fw = h.core.frameworks[fid]
    assert {t.task_id: t.agent_id for t in fw.tasks.values()} == {
        f"m{i}": o.agent_id for i, o in enumerate(bundle)
    }
    assert fw.demand_tasks == {"train": 3}
    assert h.core.book.gangs == {} and h.core.offers == {}
    h.now += 10
    assert h.offers_for(fid) == []  # the demand is met


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("two offers", "an accept uses all of them or none (this one names 2)"),
        ("two tasks", "launches all its members or none: this accept has 2 tasks"),
        ("no agent", "names no agent_id"),
        ("wrong agent", "which holds none of gang"),
        ("other demand", "does not name demand 'train'"),
        ("too big", "exceed the offered gpus"),
        ("with an ordinary offer", "a gang is accepted on its own"),
    ],
)
def test_a_partial_accept_is_refused_and_changes_nothing(case: str, reason: str) -> None:
    h, fid = gang_cluster(3)
    h.set_demands(fid, demand("train", SHAPE, count=3, min_member=3), demand("x", count=1))
    batch = h.offers_for(fid)
    bundle = [o for o in batch if o.gang_id]
    plain = [o for o in batch if not o.gang_id]
    ids = [o.offer_id for o in bundle]
    tasks = [member(f"m{i}", o.agent_id) for i, o in enumerate(bundle)]
    if case == "two offers":
        ids = ids[:2]
    elif case == "two tasks":
        tasks = tasks[:2]
    elif case == "no agent":
        tasks[1].agent_id = ""
    elif case == "wrong agent":
        tasks[1].agent_id = "nope"
    elif case == "other demand":
        tasks[2].demand = "x"
    elif case == "too big":
        tasks[0] = member("m0", bundle[0].agent_id, "cpus:1;mem:128;gpus:2")
    else:
        ids.append(plain[0].offer_id)
    before = snapshot(h, fid)
    with pytest.raises(CallRejected) as exc:
        h.accept(fid, ids, *tasks)
    assert exc.value.code is Refusal.INVALID_ARGUMENT
    assert reason in exc.value.message
    assert snapshot(h, fid) == before
    # Still whole: the right accept goes through afterwards.
    right = [member(f"m{i}", o.agent_id) for i, o in enumerate(bundle)]
    h.accept(fid, [o.offer_id for o in bundle], *right)
    assert h.core.frameworks[fid].demand_tasks == {"train": 3}


def test_one_agent_gang_tasks_need_no_agent_id() -> None:
    h = Harness()
    fid, _ = h.subscribe(gpu_resources=True)
    h.add_agent("big", resources="cpus:8;mem:8192;gpus:4")
    h.set_demands(fid, demand("train", SHAPE, count=2, min_member=2))
    (offer,) = h.offers_for(fid)
    assert offer.gang_id
    out = h.accept(fid, [offer.offer_id], member("m0"), member("m1"))
    assert [len(c.tasks) for c in of(cmd.SendLaunch, out)] == [2]


def test_declining_one_gang_offer_returns_them_all() -> None:
    h, fid = gang_cluster(3)
    h.set_demands(fid, demand("train", SHAPE, count=3, min_member=3))
    bundle = h.offers_for(fid)
    h.handle(ev.Decline(**h.call_base(fid), offer_ids=(bundle[1].offer_id,), refuse_seconds=0))
    assert h.core.offers == {} and h.core.book.gangs == {}
    assert all(h.core.allocator.charged(fid, a) == (0.0,) * 4 for a in h.core.agents)
    h.now += 1
    again = h.offers_for(fid)
    assert len(again) == 3 and again[0].gang_id != bundle[0].gang_id


def test_an_agent_leaving_rescinds_the_whole_gang() -> None:
    h, fid = gang_cluster(4)
    h.set_demands(fid, demand("train", SHAPE, count=3, min_member=3))
    bundle = h.offers_for(fid)
    out = h.close_agent(bundle[0].agent_id)
    (rescind,) = of(cmd.SendRescind, out)
    assert sorted(rescind.offer_ids) == sorted(o.offer_id for o in bundle)
    assert h.core.offers == {}
    h.now += 1
    assert sorted(o.agent_id for o in h.offers_for(fid)) == ["g1", "g2", "g3"]


def test_the_framework_disconnecting_returns_the_gang() -> None:
    h, fid = gang_cluster(3)
    h.set_demands(fid, demand("train", SHAPE, count=3, min_member=3))
    assert len(h.offers_for(fid)) == 3
    h.handle(ev.FrameworkStreamClosed(**h.base(), framework_id=fid, stream_id=h.streams[fid]))
    assert h.core.offers == {} and h.core.book.gangs == {}
    assert all(h.core.allocator.charged(fid, a) == (0.0,) * 4 for a in h.core.agents)


def test_changing_the_gang_demand_rescinds_its_bundle() -> None:
    h, fid = gang_cluster(4)
    h.set_demands(fid, demand("train", SHAPE, count=3, min_member=3))
    bundle = h.offers_for(fid)
    out = h.set_demands(fid, demand("train", SHAPE, count=4, min_member=4))
    (rescind,) = of(cmd.SendRescind, out)
    assert sorted(rescind.offer_ids) == sorted(o.offer_id for o in bundle)
    assert len(h.offers_for(fid)) == 4
    out = h.set_demands(fid)  # withdrawn
    assert len(of(cmd.SendRescind, out)[0].offer_ids) == 4
    assert h.core.offers == {} and not h.core.gang_frameworks


def test_a_failed_member_is_reported_and_the_gang_waits_again() -> None:
    h, fid = gang_cluster(3)
    h.set_demands(fid, demand("train", SHAPE, count=3, min_member=3))
    bundle = h.offers_for(fid)
    h.accept(
        fid,
        [o.offer_id for o in bundle],
        *[member(f"m{i}", o.agent_id) for i, o in enumerate(bundle)],
    )
    aid = bundle[0].agent_id
    out = h.agent_updates(aid, status("m0", fid, aid, TaskState.FAILED))
    sent = [s for c in of(cmd.SendUpdates, out) for s in c.statuses]
    assert [(s.task_id, s.state) for s in sent] == [("m0", TaskState.FAILED)]
    # The framework decides; until it does, the missing member is offered as a bundle of one.
    h.now += 1
    (again,) = h.offers_for(fid)
    assert again.gang_id and again.agent_id == aid


def test_a_higher_priority_gang_is_cut_first() -> None:
    h, low = gang_cluster(2)
    high, _ = h.subscribe("high", gpu_resources=True)
    h.set_demands(low, demand("train", SHAPE, count=2, min_member=2, priority_class="batch"))
    h.set_demands(high, demand("train", SHAPE, count=2, min_member=2, priority_class="serving"))
    batches = {b.framework_id: b.offers for b in h.allocate()}
    assert len(batches[high]) == 2 and low not in batches


def test_ordinary_offers_of_different_agents_are_still_refused_in_one_accept() -> None:
    h, fid = gang_cluster(0, other_agents=2)
    h.set_demands(fid, demand("train", SHAPE, count=3, min_member=3), demand("x", count=2))
    offers = [o for o in h.offers_for(fid)]
    assert len(offers) == 2 and not any(o.gang_id for o in offers)
    with pytest.raises(CallRejected, match="offers of different agents"):
        h.accept(fid, [o.offer_id for o in offers], task("t1", demand="x"))


def test_a_gangs_offers_carry_their_agents_ports_and_the_unused_come_back() -> None:
    # A trainer's rank 0 listens on a port of its offer, so a bundle carries the ports as any
    # offer does; each port stays in one place (validate() checks it after every event).
    h = Harness()
    fid, _ = h.subscribe("trainer", gpu_resources=True)
    for i in range(2):
        h.add_agent(f"g{i}", resources=f"{GPU_AGENT};ports:[31000-31009]")
    h.set_demands(fid, demand("train", SHAPE, count=2, min_member=2))
    bundle = h.offers_for(fid)
    assert [o.ports for o in bundle] == [((31000, 31009),)] * 2
    rank0 = member("m0", bundle[0].agent_id, f"{SHAPE};ports:[31000-31000]")
    h.accept(fid, [o.offer_id for o in bundle], rank0, member("m1", bundle[1].agent_id))
    assert h.core.agents[bundle[0].agent_id].free_ports == ((31001, 31009),)
    assert h.core.agents[bundle[1].agent_id].free_ports == ((31000, 31009),)
