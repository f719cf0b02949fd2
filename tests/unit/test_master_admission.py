"""Admission control's hard bounds (master/core/admission.py): a framework that accepts
everything cannot push an agent's launches in flight or its own unacknowledged statuses past
their bounds; a refused accept is RESOURCE_EXHAUSTED with a reason and changes nothing; a
held cycle offers nothing. The harness runs validate() after every event, refused or not."""

from __future__ import annotations

import pytest

from corral.master.core import admission
from corral.master.core import commands as cmd
from corral.master.core import events as ev
from corral.master.core.config import MasterConfig
from corral.master.core.refusals import CallRejected, Overloaded, Refusal
from corral.master.core.types import ReportedTask, TaskState
from tests.unit.core_harness import Harness, of, status, task


def _harness(allocator: str = "numpy", **config: object) -> Harness:
    config.setdefault("launch_pacing", False)  # the bounds hold on their own, pacing or not
    return Harness(MasterConfig(**config), allocator=allocator)  # type: ignore[arg-type]


@pytest.mark.parametrize("allocator", ["numba", "numpy", "reference"])
def test_an_agent_at_its_launch_bound_is_offered_to_nobody(allocator: str) -> None:
    h = _harness(allocator, max_agent_launches=4)
    aid, _ = h.add_agent(resources="cpus:16;mem:4096;disk:1000")
    fid, _ = h.subscribe()
    (offer,) = h.offers_for(fid)
    # Four 1-cpu tasks reach the bound; the 12 cpus left go back to the pool ...
    h.accept(fid, [offer.offer_id], *(task(f"t{i}") for i in range(4)), refuse=0)
    assert h.core.holds.held == {aid}
    h.now += 1
    assert h.offers_for(fid) == []  # ... and are not offered while the launches are in flight
    # One launch moves on (RUNNING): below the bound, the agent is offered again.
    h.agent_updates(aid, status("t0", fid, aid, TaskState.RUNNING))
    h.now += 1
    (again,) = h.offers_for(fid)
    assert again.resources.cpus == 12
    assert h.core.holds.held == set()


def test_an_agent_that_comes_back_with_its_launches_at_the_bound_is_held() -> None:
    h = _harness(max_agent_launches=2)
    aid, _ = h.add_agent(resources="cpus:16;mem:4096;disk:1000")
    fid, _ = h.subscribe()
    (offer,) = h.offers_for(fid)
    h.accept(fid, [offer.offer_id], task("t0"), refuse=0)  # one in flight: not held
    assert h.core.holds.held == set()
    h.close_agent(aid)
    # It re-registers reporting t0 and another task still launching (one the master adopts,
    # as after a master restart: its record as read from the registry, whose tasks the master
    # cannot know): two in flight, at the bound, without an accept.
    h.core.agents[aid].tasks_known = False
    known = h.core.frameworks[fid].tasks["t0"].spec
    reported = (
        ReportedTask(fid, known, status("t0", fid, aid, TaskState.STAGING)),
        ReportedTask(fid, task("t9"), status("t9", fid, aid, TaskState.STAGING)),
    )
    h.add_agent(agent_id=aid, resources="cpus:16;mem:4096;disk:1000", tasks=reported)
    assert admission.launching(h.core.agents[aid]) == 2
    assert h.core.holds.held == {aid}
    h.now += 1
    assert h.offers_for(fid) == []


def test_an_accept_past_the_agent_bound_is_refused_and_changes_nothing() -> None:
    h = _harness(max_agent_launches=4)
    aid, _ = h.add_agent(resources="cpus:16;mem:4096;disk:1000")
    fid, _ = h.subscribe()
    (offer,) = h.offers_for(fid)
    with pytest.raises(CallRejected) as info:
        h.accept(fid, [offer.offer_id], *(task(f"t{i}") for i in range(5)))
    exc = info.value
    assert exc.code is Refusal.RESOURCE_EXHAUSTED
    assert isinstance(exc, Overloaded) and exc.bound == admission.AGENT_LAUNCHES
    assert f"agent {aid} has 0 tasks launching; 5 more would pass the bound of 4" in exc.message
    assert offer.offer_id in h.core.offers  # still the framework's: accept less, or decline
    assert h.core.frameworks[fid].tasks == {}
    # Within the bound the same offer is accepted.
    launches = of(cmd.SendLaunch, h.accept(fid, [offer.offer_id], task("t0"), task("t1")))
    assert [t.task_id for t in launches[0].tasks] == ["t0", "t1"]


def test_a_framework_accepting_everything_never_passes_the_agent_bound() -> None:
    h = _harness(max_agent_launches=6)
    agents = [h.add_agent(resources="cpus:8;mem:4096;disk:1000")[0] for _ in range(3)]
    fid, _ = h.subscribe()
    refused = 0
    for cycle in range(6):
        h.now += 1
        for offer in h.offers_for(fid):
            tasks = [
                task(f"c{cycle}-{offer.offer_id}-{i}") for i in range(int(offer.resources.cpus))
            ]
            try:
                h.accept(fid, [offer.offer_id], *tasks, refuse=0)
            except CallRejected as exc:
                assert exc.code is Refusal.RESOURCE_EXHAUSTED
                refused += 1
                take = 6 - admission.launching(h.core.agents[offer.agent_id])
                h.accept(fid, [offer.offer_id], *tasks[:take], refuse=0)
        for aid in agents:
            assert admission.launching(h.core.agents[aid]) <= 6
    assert refused == 3  # one per agent: after that, agents at the bound are not offered


def test_a_framework_at_its_status_bound_is_offered_nothing_until_it_acknowledges() -> None:
    h = _harness(max_framework_pending_statuses=3)
    aid, _ = h.add_agent(resources="cpus:8;mem:4096;disk:1000")
    fid, _ = h.subscribe()
    (offer,) = h.offers_for(fid)
    h.accept(fid, [offer.offer_id], task("t0"), task("t1"), task("t2"), refuse=0)
    uuids = [bytes([i + 1]) * 16 for i in range(3)]
    for i, u in enumerate(uuids):
        h.agent_updates(aid, status(f"t{i}", fid, aid, TaskState.RUNNING, uuid=u))
    assert len(h.core.frameworks[fid].pending) == 3
    h.now += 1
    assert h.offers_for(fid) == []  # 5 cpus free, but it has not acknowledged what it got
    ack = ev.Acknowledge(**h.call_base(fid), acknowledgements=((aid, "t0", uuids[0]),))
    h.handle(ack)
    assert len(h.core.frameworks[fid].pending) == 2
    h.now += 1
    assert h.offers_for(fid)  # below the bound again: offered


def test_an_accept_at_the_status_bound_is_refused() -> None:
    h = _harness(max_framework_pending_statuses=1)
    aid, _ = h.add_agent(resources="cpus:8;mem:4096;disk:1000")
    fid, _ = h.subscribe()
    (first,) = h.offers_for(fid)
    h.accept(fid, [first.offer_id], task("t0"), refuse=0)
    h.now += 1
    (offer,) = h.offers_for(fid)  # the 7 cpus left, offered before the bound is reached
    h.agent_updates(aid, status("t0", fid, aid, TaskState.RUNNING, uuid=b"u" * 16))
    with pytest.raises(CallRejected) as info:
        h.accept(fid, [offer.offer_id], task("t1"))
    exc = info.value
    assert exc.code is Refusal.RESOURCE_EXHAUSTED
    assert isinstance(exc, Overloaded) and exc.bound == admission.FRAMEWORK_STATUSES
    assert f"framework {fid} has 1 status updates not acknowledged (the bound is 1)" in str(exc)
    assert offer.offer_id in h.core.offers and "t1" not in h.core.frameworks[fid].tasks
    # An accept that launches nothing only gives the offer back: never refused for a bound.
    h.accept(fid, [offer.offer_id])
    assert offer.offer_id not in h.core.offers


def test_a_held_cycle_offers_nothing() -> None:
    h = _harness()
    h.add_agent()
    fid, _ = h.subscribe()
    out = h.handle(ev.AllocationTick(**h.base(), seed=7, hold="600 accepts wait"))
    assert of(cmd.SendOffers, out) == []
    h.now += 1
    assert h.offers_for(fid)  # the next cycle, not held, offers as usual


def test_the_waiting_accepts_bound_is_the_cores_rule() -> None:
    from corral.master.core.refusals import Overloaded

    assert admission.waiting_accept(9, 10) is None
    refused = admission.waiting_accept(10, 10)
    assert isinstance(refused, Overloaded) and refused.bound == admission.WAITING_ACCEPTS
    assert "10 accepts already wait" in str(refused)
    assert admission.cycle_hold(4, 10) == ""
    assert admission.cycle_hold(5, 10) == "5 accepts wait for the master (holding at 5)"
