"""The master core's side of QoS (issue #36): agents' usage reports, memory pressure as a
placement rule, evictions as events, and revocable offers. Driven by events, asserted on the
commands and the state (the harness validates the core after every event)."""

from __future__ import annotations

import pytest

from corral.master import paging, state_pages, views
from corral.master.core import commands as cmd
from corral.master.core import events as ev
from corral.master.core.master import CallRejected
from corral.master.core.refusals import Refusal
from corral.master.core.types import (
    AgentUsage,
    TaskReason,
    TaskSpec,
    TaskState,
    TaskUsage,
)
from corral.resources import Resources
from tests.unit.core_harness import Harness, demand, of, status, task

PRESSURE = "agent under memory pressure (no BestEffort work)"


def usage(
    pressure: str = "", used: float = 100.0, rev_cpus: float = 0.0, rev_mem: float = 0.0
) -> AgentUsage:
    return AgentUsage(
        timestamp=1.0,
        mem_total=4096.0,
        mem_used=used,
        mem_available=4096.0 - used,
        cpus_used=0.5,
        pressure=pressure,
        pressure_since=1.0 if pressure else 0.0,
        pressure_message=f"memory pressure ({pressure}): available 90 MiB < 100 MiB"
        if pressure
        else "",
        revocable_cpus=rev_cpus,
        revocable_mem=rev_mem,
        source="cgroup-v1",
    )


def report(h: Harness, aid: str, u: AgentUsage, *tasks: TaskUsage) -> list[cmd.Command]:
    return h.handle(
        ev.AgentUsageReport(
            **h.base(), agent_id=aid, connection=h.connections[aid], usage=u, tasks=tasks
        )
    )


def events(out: list[cmd.Command], kind: str) -> list[cmd.ClusterEvent]:
    return [c for c in of(cmd.ClusterEvent, out) if c.kind == kind]


def besteffort(task_id: str, demand_name: str = "") -> TaskSpec:
    return task(task_id, "disk:1", demand=demand_name)


def revocable_task(task_id: str, cpus: float = 0.5, mem: float = 256.0) -> TaskSpec:
    return TaskSpec(task_id, task_id, Resources(), revocable=Resources(cpus=cpus, mem=mem))


# --- usage reports ------------------------------------------------------------------------


def test_a_report_is_kept_with_each_tasks_usage_and_pressure_changes_are_events() -> None:
    h = Harness()
    aid, _ = h.add_agent()
    fid, _ = h.subscribe()
    [offer] = h.offers_for(fid)
    h.accept(fid, [offer.offer_id], task("t1"))
    out = report(h, aid, usage(), TaskUsage(fid, "t1", 0.2, 90.0), TaskUsage(fid, "ghost", 1, 1))
    assert events(out, "agent_memory_pressure") == []
    agent = h.core.agents[aid]
    assert agent.usage is not None and agent.usage.mem_used == 100.0
    assert agent.tasks[(fid, "t1")].usage == TaskUsage(fid, "t1", 0.2, 90.0)
    (went,) = events(report(h, aid, usage("hard")), "agent_memory_pressure")
    assert went.reason == "MemoryPressure" and "available 90 MiB < 100 MiB" in went.message
    assert events(report(h, aid, usage("soft")), "agent_memory_pressure") == []  # still under
    (back,) = events(report(h, aid, usage()), "agent_memory_pressure_cleared")
    assert back.reason == "MemoryPressureCleared"


def test_a_report_on_a_stale_stream_is_dropped() -> None:
    h = Harness()
    aid, _ = h.add_agent()
    out = h.handle(
        ev.AgentUsageReport(**h.base(), agent_id=aid, connection=999, usage=usage("hard"))
    )
    assert out == [] and h.core.agents[aid].usage is None


# --- pressure as a placement rule ------------------------------------------------------------


def test_pressure_keeps_besteffort_only_frameworks_off_and_explains_it() -> None:
    h = Harness()
    aid, _ = h.add_agent()
    be, _ = h.subscribe("scratch")
    h.set_demands(be, demand("scratch", "cpus:0;mem:0", count=2))
    web, _ = h.subscribe("web")
    h.set_demands(web, demand("web", "cpus:1;mem:128"))
    report(h, aid, usage("hard"))
    out = h.handle(ev.AllocationTick(**h.base(), seed=3))
    batches = of(cmd.SendOffers, out)
    assert {b.framework_id for b in batches} == {web}  # work with a request is still offered
    failed = {c.subject: c.message for c in of(cmd.ClusterEvent, out)}
    assert failed[f"{be}/scratch"] == f"0/1 agents: 1 {PRESSURE}"  # why pending says it too
    ids = tuple(o.offer_id for b in batches for o in b.offers)
    h.handle(ev.Decline(**h.call_base(web), offer_ids=ids, refuse_seconds=60))
    why = h.core.explain(be, h.now)
    assert why["reasons"].get(PRESSURE) == 1
    (pending,) = why["pending_demands"]
    assert pending["summary"] == f"1 of 1 agents: {PRESSURE}"
    # Cleared: the BestEffort framework is offered the agent again.
    report(h, aid, usage())
    h.now += 10
    assert be in {b.framework_id for b in h.allocate()}


def test_a_besteffort_task_on_an_agent_under_pressure_is_refused_and_changes_nothing() -> None:
    h = Harness()
    aid, _ = h.add_agent()
    fid, _ = h.subscribe()
    [offer] = h.offers_for(fid)
    report(h, aid, usage("hard"))
    with pytest.raises(CallRejected) as exc:
        h.accept(fid, [offer.offer_id], task("ok"), besteffort("be"))
    assert exc.value.code is Refusal.FAILED_PRECONDITION
    assert "under memory pressure" in exc.value.message and "'be'" in exc.value.message
    assert h.core.frameworks[fid].tasks == {}
    # Work with a request goes on the same offer.
    assert of(cmd.SendLaunch, h.accept(fid, [offer.offer_id], task("ok")))


def test_a_besteffort_demand_never_preempts_and_is_never_a_gang() -> None:
    h = Harness()
    h.add_agent(resources="cpus:1;mem:128;disk:1000")
    low, _ = h.subscribe("low")
    [offer] = h.offers_for(low)
    h.accept(
        low, [offer.offer_id], task("busy", "cpus:1;mem:128;disk:1000", priority_class="batch")
    )
    fid, _ = h.subscribe()
    with pytest.raises(CallRejected, match="a gang's task shape asks for cpus or mem"):
        h.set_demands(fid, demand("g", "disk:1", count=2, min_member=2))
    h.set_demands(fid, demand("be", "disk:1", count=1, priority_class="system"))
    out = h.handle(ev.AllocationTick(**h.base(), seed=1))
    assert of(cmd.SendKill, out) == []  # nothing preempted for work that needs no room


# --- evictions are the agent's, never preemption -----------------------------------------------


def test_an_evicted_task_is_an_evicted_event_and_keeps_its_reason() -> None:
    h = Harness()
    aid, _ = h.add_agent()
    fid, _ = h.subscribe()
    [offer] = h.offers_for(fid)
    h.accept(fid, [offer.offer_id], task("t1"))
    h.agent_updates(aid, status("t1", fid, aid, TaskState.RUNNING, b"u1"))
    h.core.frameworks[fid].tasks["t1"].preempted_by = "framework F9 for demand web"  # racing
    killed = status("t1", fid, aid, TaskState.KILLED, b"u2")
    killed.reason, killed.message = TaskReason.EVICTED, "evicted: memory pressure (hard)"
    out = h.agent_updates(aid, killed)
    (evicted,) = events(out, "task_evicted")
    assert evicted.reason == "Evicted" and "memory pressure (hard)" in evicted.message
    (sent,) = [s for u in of(cmd.SendUpdates, out) for s in u.statuses]
    assert sent.reason is TaskReason.EVICTED  # the first cause: the agent's, not preemption's


# --- revocable resources ------------------------------------------------------------------------


def revocable_setup() -> tuple[Harness, str, str, str]:
    """An agent lending 2 cpus and 1024 MiB, a capable framework and a regular one."""
    h = Harness()
    aid, _ = h.add_agent()
    capable, _ = h.subscribe("batch", revocable_resources=True)
    regular, _ = h.subscribe("web")
    for fid in (capable, regular):
        h.set_demands(fid, demand("d", count=1))
    report(h, aid, usage(rev_cpus=2.0, rev_mem=1024.0))
    return h, aid, capable, regular


def revocable_offers(batches: list[cmd.SendOffers]) -> dict[str, list[object]]:
    out: dict[str, list[object]] = {}
    for b in batches:
        for o in b.offers:
            if o.revocable:
                out.setdefault(b.framework_id, []).append(o)
    return out


def test_revocable_resources_are_offered_to_capable_frameworks_only() -> None:
    h, _, capable, _ = revocable_setup()
    got = revocable_offers(h.allocate())
    assert list(got) == [capable]
    (offer,) = got[capable]
    assert offer.offer_id.startswith("m1-R")  # type: ignore[attr-defined]
    assert tuple(offer.scalars) == (2.0, 1024.0, 0.0, 0.0)  # type: ignore[attr-defined]
    assert revocable_offers(h.allocate()) == {}  # one at a time per agent


def test_a_revocable_accept_launches_marked_tasks_and_charges_the_allocator_nothing() -> None:
    h, aid, capable, _ = revocable_setup()
    ((offer,),) = revocable_offers(h.allocate()).values()
    oid = offer.offer_id  # type: ignore[attr-defined]
    with pytest.raises(CallRejected, match="must say so"):
        h.accept(capable, [oid], task("plain"))
    with pytest.raises(CallRejected, match="exceed the offered mem"):
        h.accept(capable, [oid], revocable_task("big", mem=4096))
    charged_before = h.core.allocator.charged(capable, aid)
    (launch,) = of(cmd.SendLaunch, h.accept(capable, [oid], revocable_task("r1"), refuse=5))
    assert [t.task_id for t in launch.tasks] == ["r1"]
    assert h.core.allocator.charged(capable, aid) == charged_before
    record = h.core.frameworks[capable].tasks["r1"]
    assert record.spec.revocable == Resources(cpus=0.5, mem=256.0)
    assert record.spec.resources.scalars() == (0.0, 0.0, 0.0, 0.0)
    # What is left is filtered for the framework (refuse 5 s), then offered less what r1 holds.
    assert revocable_offers(h.allocate()) == {}
    h.now += 6
    ((again,),) = revocable_offers(h.allocate()).values()
    assert tuple(again.scalars)[:2] == (1.5, 768.0)  # type: ignore[attr-defined]


def test_a_marked_task_is_refused_on_regular_offers_and_kinds_do_not_mix() -> None:
    h, _, capable, _ = revocable_setup()
    batches = h.allocate()
    regular_ids = [
        o.offer_id
        for b in batches
        if b.framework_id == capable
        for o in b.offers
        if not o.revocable
    ]
    ((rev,),) = revocable_offers(batches).values()
    with pytest.raises(CallRejected, match="marked revocable and the offers are not"):
        h.accept(capable, regular_ids[:1], revocable_task("r"))
    with pytest.raises(CallRejected, match="revocable and regular offers in one accept"):
        h.accept(capable, [rev.offer_id, regular_ids[0]], revocable_task("r"))  # type: ignore[attr-defined]


def test_revocable_offers_are_rescinded_when_the_estimate_shrinks_or_pressure_comes() -> None:
    h, aid, capable, _ = revocable_setup()
    assert revocable_offers(h.allocate())
    out = report(h, aid, usage(rev_cpus=0.5, rev_mem=100.0))
    (rescind,) = of(cmd.SendRescind, out)
    assert rescind.framework_id == capable and rescind.offer_ids[0].startswith("m1-R")
    assert h.core.revocable.out == {}
    report(h, aid, usage(rev_cpus=2.0, rev_mem=1024.0))
    assert revocable_offers(h.allocate())
    out = report(h, aid, usage("hard", rev_cpus=2.0, rev_mem=1024.0))
    assert of(cmd.SendRescind, out)
    assert revocable_offers(h.allocate()) == {}  # nothing lent on an agent under pressure


def test_a_declined_revocable_offer_is_filtered_for_its_framework() -> None:
    h, _, capable, _ = revocable_setup()
    ((offer,),) = revocable_offers(h.allocate()).values()
    h.handle(
        ev.Decline(
            **h.call_base(capable),
            offer_ids=(offer.offer_id,),  # type: ignore[attr-defined]
            refuse_seconds=5,
        )
    )
    assert h.core.revocable.out == {}
    assert revocable_offers(h.allocate()) == {}
    h.now += 6
    assert list(revocable_offers(h.allocate())) == [capable]


def test_the_offer_pages_list_revocable_offers_beside_the_others_once_in_id_order() -> None:
    h, _, _, _ = revocable_setup()
    h.allocate()
    whole = views.state_pb(h.core).offers
    assert {o.revocable for o in whole} == {True, False}
    got: list[str] = []
    token = ""
    while True:
        page = state_pages.list_offers(h.core, 1, token)
        assert page.total == len(whole)
        got += [o.id for o in page.offers]
        token = page.next_page_token
        if not token:
            break
    assert got == sorted(o.id for o in whole)
    assert {o.id: o for o in whole} == {
        o.id: o for o in state_pages.list_offers(h.core, 0, "").offers
    }
    with pytest.raises(paging.BadPage, match="not one of the offers list's"):
        state_pages.list_offers(h.core, 1, paging.token_of(state_pages.AGENTS, ("a",)))
