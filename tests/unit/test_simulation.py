"""The autoscaler's what-if (master/core/simulation.py): pending demands on hypothetical agents,
answered by the master's own placement rules, and which agents could go. Sans-IO: the query
changes nothing, so ``validate()`` holds after it and a second ask answers the same."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from corral.master.core import events as ev
from corral.master.core.config import MasterConfig
from corral.master.core.disruption_budgets import BudgetError, budgets_from_json
from corral.master.core.refusals import CallRejected, Refusal
from corral.master.core.simulation import (
    GROUP_AT_MAX,
    NodeGroupOption,
    SimulationRequest,
    agent_template,
    simulate,
)
from corral.master.core.types import Requester, TaskState
from corral.placement import Taint, TaintEffect, Toleration, TopologySpread
from corral.resources import parse_resources
from corral.v1 import common_pb2
from tests.unit.core_harness import Harness, demand, status, task

GPU_TAINT = Taint("gpu", "true", TaintEffect.NO_SCHEDULE)


def group(
    name: str,
    resources: str = "cpus:4;mem:4096;disk:1000",
    max_new: int = 10,
    attributes: dict[str, str] | None = None,
    taints: tuple[Taint, ...] = (),
) -> NodeGroupOption:
    template = agent_template(name, parse_resources(resources), attributes or {}, taints)
    return NodeGroupOption(name, template, max_new)


def ask(h: Harness, request: SimulationRequest) -> dict[str, Any]:
    """Simulate twice: the answer is the same, and the core is unchanged and valid."""
    first = simulate(h.core, request, h.now)
    h.core.validate()
    assert simulate(h.core, request, h.now) == first
    return first


def option(answer: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((o for o in answer["options"] if o["group"] == name), None)


def pending(answer: dict[str, Any], demand_name: str) -> dict[str, Any]:
    return next(p for p in answer["pending"] if p["demand"] == demand_name)


def test_pending_work_packs_onto_as_few_template_agents_as_it_needs() -> None:
    h = Harness()
    fid, _ = h.subscribe("batch")
    h.set_demands(fid, demand("work", "cpus:2;mem:512", count=3))
    answer = ask(
        h,
        SimulationRequest(
            (group("small"), group("big", "cpus:8;mem:8192"), group("one", max_new=1))
        ),
    )
    assert pending(answer, "work")["schedulable"] is False
    assert pending(answer, "work")["tasks_wanted"] == 3
    small, big, one = option(answer, "small"), option(answer, "big"), option(answer, "one")
    assert small is not None and (small["nodes"], small["tasks"]) == (2, 3)
    assert big is not None and (big["nodes"], big["tasks"]) == (1, 3)
    # A group that may add one agent takes the two tasks it can (not a gang).
    assert one is not None and (one["nodes"], one["tasks"]) == (1, 2)
    assert small["waste_cpus"] == 0.25  # (0/4 + 2/4) / 2
    assert big["waste_cpus"] == 0.25


def test_a_demand_with_room_now_asks_for_nothing() -> None:
    h = Harness()
    h.add_agent(resources="cpus:4;mem:4096")
    fid, _ = h.subscribe("batch")
    h.set_demands(fid, demand("work", "cpus:1;mem:128", count=2))
    answer = ask(h, SimulationRequest((group("small"),)))
    assert pending(answer, "work")["schedulable"] is True
    assert answer["options"] == []


def test_room_in_its_own_offers_or_behind_its_refuse_filters_asks_for_no_node() -> None:
    h = Harness()
    h.add_agent(resources="cpus:4;mem:4096")
    fid, _ = h.subscribe("batch")
    h.set_demands(fid, demand("work", "cpus:1;mem:128", count=2))
    (offer,) = h.offers_for(fid)  # outstanding: the framework's to use
    assert pending(ask(h, SimulationRequest((group("small"),))), "work")["schedulable"] is True
    h.handle(ev.Decline(**h.call_base(fid), offer_ids=(offer.offer_id,), refuse_seconds=3600))
    # Declined for an hour: the scan's fast test sees no room, yet the agent has it.
    answer = ask(h, SimulationRequest((group("small"),)))
    assert pending(answer, "work")["schedulable"] is True
    assert answer["options"] == []
    # Cordoned, it is no room: a node is asked for.
    h.handle(ev.Cordon(**h.base(), agent_id=next(iter(h.core.agents)), requester=Requester("t")))
    answer = ask(h, SimulationRequest((group("small"),)))
    assert pending(answer, "work")["schedulable"] is False
    assert option(answer, "small") is not None


def test_an_untolerated_taint_never_places_and_says_so() -> None:
    h = Harness()
    fid, _ = h.subscribe("batch")
    h.set_demands(fid, demand("work", "cpus:1;mem:128", count=1))
    answer = ask(h, SimulationRequest((group("gpu", taints=(GPU_TAINT,)),)))
    assert answer["options"] == []
    assert pending(answer, "work")["not_placed"] == {"gpu": "taint gpu=true:NoSchedule"}
    # The same demand tolerating it places there.
    h.set_demands(
        fid, demand("work", "cpus:1;mem:128", tolerations=(Toleration("gpu", exists=True),))
    )
    assert option(ask(h, SimulationRequest((group("gpu", taints=(GPU_TAINT,)),))), "gpu")


def test_a_template_too_small_and_a_group_at_max_say_why() -> None:
    h = Harness()
    fid, _ = h.subscribe("batch")
    h.set_demands(fid, demand("work", "cpus:6;mem:128", count=1))
    answer = ask(h, SimulationRequest((group("small"), group("full", "cpus:8;mem:4096", 0))))
    assert answer["options"] == []
    assert pending(answer, "work")["not_placed"] == {
        "small": "insufficient cpus",
        "full": GROUP_AT_MAX,
    }


def test_a_gang_scales_up_by_all_its_members_or_not_at_all() -> None:
    h = Harness()
    fid, _ = h.subscribe("trainer", gpu_resources=True)
    h.set_demands(fid, demand("train", "cpus:1;mem:128;gpus:1", count=4, min_member=4))
    gpu = "cpus:4;mem:4096;gpus:1"
    answer = ask(h, SimulationRequest((group("three", gpu, 3), group("four", gpu, 4))))
    assert pending(answer, "train")["gang"] is True
    assert option(answer, "three") is None  # 3 of 4 would be the oscillation of issue #47
    assert "gang needs more nodes" in pending(answer, "train")["not_placed"]["three"]
    four = option(answer, "four")
    assert four is not None and (four["nodes"], four["tasks"]) == (4, 4)


def test_a_gang_asks_only_for_the_members_the_agents_there_cannot_take() -> None:
    h = Harness()
    fid, _ = h.subscribe("trainer", gpu_resources=True)
    gpu = "cpus:4;mem:4096;gpus:1"
    h.add_agent("g0", resources=gpu)
    h.set_demands(fid, demand("train", "cpus:1;mem:128;gpus:1", count=3, min_member=3))
    answer = ask(h, SimulationRequest((group("gpus", gpu, 5),)))
    assert pending(answer, "train")["tasks_wanted"] == 2
    got = option(answer, "gpus")
    assert got is not None and got["nodes"] == 2


def test_demands_below_the_priority_cutoff_never_scale_up() -> None:
    h = Harness()
    fid, _ = h.subscribe("batch")
    h.set_demands(
        fid,
        demand("cheap", "cpus:1;mem:128", priority_class="batch"),
        demand("dear", "cpus:1;mem:128", priority_class="serving"),
    )
    answer = ask(h, SimulationRequest((group("small"),), priority_cutoff=-10))
    assert pending(answer, "cheap")["expendable"] is True
    got = option(answer, "small")
    assert got is not None
    assert got["demands"] == [{"framework_id": fid, "demand": "dear", "tasks": 1}]


def test_higher_priority_demands_are_packed_first() -> None:
    h = Harness()
    fid, _ = h.subscribe("batch")
    h.set_demands(
        fid,
        demand("a-low", "cpus:4;mem:128", priority_class="batch"),
        demand("z-high", "cpus:4;mem:128", priority_class="serving"),
    )
    got = option(ask(h, SimulationRequest((group("one", max_new=1),))), "one")
    assert got is not None and got["demands"][0]["demand"] == "z-high"


def _spread_cluster() -> tuple[Harness, str]:
    """Zones a, b with 2 tasks each, c with 1 and full: the 6th replica may go only to c."""
    h = Harness()
    agents = {}
    for zone, cpus in (("a", 8), ("b", 8), ("c", 1)):
        aid, _ = h.add_agent(resources=f"cpus:{cpus};mem:4096", attributes={"zone": zone})
        agents[zone] = aid
    fid, _ = h.subscribe("serving")
    h.set_demands(fid, demand("web", "cpus:1;mem:64", count=6, spread=TopologySpread("zone", 1)))
    outstanding = {o.agent_id: o for o in h.offers_for(fid)}
    for n, zone in enumerate("abcab"):
        offer = outstanding.pop(agents[zone])
        h.accept(fid, [offer.offer_id], task(f"{zone}{n}", demand="web"), refuse=0)
        outstanding.update((o.agent_id, o) for o in h.offers_for(fid))
    return h, fid


def test_spread_places_only_in_the_zone_behind() -> None:
    h, _ = _spread_cluster()
    groups = tuple(group(f"zone-{z}", attributes={"zone": z}) for z in "abc")
    answer = ask(h, SimulationRequest(groups))
    web = pending(answer, "web")
    assert web["not_placed"] == {
        "zone-a": "spread: zone=a would exceed max_skew 1",
        "zone-b": "spread: zone=b would exceed max_skew 1",
    }
    got = option(answer, "zone-c")
    assert got is not None and (got["nodes"], got["tasks"]) == (1, 1)
    # Zone c's group at its max: nothing places, and it is named.
    at_max = (*groups[:2], group("zone-c", attributes={"zone": "c"}, max_new=0))
    assert pending(ask(h, SimulationRequest(at_max)), "web")["not_placed"]["zone-c"] == GROUP_AT_MAX


def test_spread_counts_the_tasks_the_option_itself_placed() -> None:
    h = Harness()
    h.add_agent(resources="cpus:1;mem:64", attributes={"zone": "a"})
    fid, _ = h.subscribe("serving")
    h.set_demands(fid, demand("web", "cpus:1;mem:64", count=4, spread=TopologySpread("zone", 1)))
    (offer,) = h.offers_for(fid)
    h.accept(fid, [offer.offer_id], task("w0", "cpus:1;mem:64", demand="web"), refuse=0)
    # a=1; a new zone-b group may take two (b=1 then b=2: 2-1 <= 1), not the third.
    got = option(ask(h, SimulationRequest((group("zone-b", attributes={"zone": "b"}),))), "zone-b")
    assert got is not None and got["tasks"] == 2


def test_removals_move_tasks_elsewhere_and_never_a_gang_member() -> None:
    h = Harness()
    a1, _ = h.add_agent("a1", resources="cpus:4;mem:4096")
    a2, _ = h.add_agent("a2", resources="cpus:4;mem:4096")
    a3, _ = h.add_agent("a3", resources="cpus:4;mem:4096")
    fid, _ = h.subscribe("batch")
    h.set_demands(fid, demand("work", "cpus:1;mem:128", count=1))
    offers = {o.agent_id: o for o in h.offers_for(fid)}
    h.accept(fid, [offers[a1].offer_id], task("t1", demand="work"), refuse=0)
    before = copy.deepcopy(h.core.agents[a1].tasks)
    answer = ask(h, SimulationRequest(remove=(a1, a2, "nope"), utilization_threshold=0.5))
    by = {r["agent_id"]: r for r in answer["removals"]}
    assert by[a1]["removable"] is True and by[a1]["utilization"] == 0.25
    assert by[a2]["removable"] is True
    assert by["nope"] == {"agent_id": "nope", "removable": False, "reason": "unknown agent"}
    assert h.core.agents[a1].tasks.keys() == before.keys()
    # Everything below the threshold, one at a time in increasing utilization (then id): the
    # empty a2 and a3 go first, and then t1 has nowhere left to go.
    answer = ask(h, SimulationRequest(remove=(a1, a2, a3), utilization_threshold=0.5))
    by = {r["agent_id"]: r for r in answer["removals"]}
    assert [by[a]["removable"] for a in (a1, a2, a3)] == [False, True, True]
    assert by[a1]["reason"] == f"task t1 of {fid} fits no other agent"


def test_a_node_holding_a_gang_member_is_unremovable() -> None:
    h = Harness()
    fid, _ = h.subscribe("trainer")
    g0, _ = h.add_agent("g0", resources="cpus:4;mem:4096")
    h.add_agent("g1", resources="cpus:4;mem:4096")
    h.set_demands(fid, demand("train", "cpus:1;mem:128", count=1, min_member=1))
    offers = h.offers_for(fid)
    t = task("m0", "cpus:1;mem:128", demand="train")
    t.agent_id = g0
    h.accept(fid, [o.offer_id for o in offers if o.agent_id == g0], t, refuse=0)
    (r,) = ask(h, SimulationRequest(remove=(g0,)))["removals"]
    assert r["removable"] is False
    assert r["reason"] == f"holds a member of gang {fid}/train (task m0)"


def test_a_gpu_agents_utilization_is_its_gpus() -> None:
    h = Harness()
    fid, _ = h.subscribe("trainer", gpu_resources=True)
    g0, _ = h.add_agent("g0", resources="cpus:8;mem:4096;gpus:2")
    h.set_demands(fid, demand("work", "cpus:1;mem:128;gpus:1", count=1))
    (offer,) = h.offers_for(fid)
    h.accept(fid, [offer.offer_id], task("w0", "cpus:1;mem:128;gpus:1", demand="work"), refuse=0)
    (r,) = ask(h, SimulationRequest(remove=(g0,), utilization_threshold=0.6))["removals"]
    assert r["utilization"] == 0.5  # 1 of 2 GPUs, though 1 of 8 cpus


def test_a_busy_agent_is_above_the_threshold() -> None:
    h = Harness()
    a1, _ = h.add_agent("a1", resources="cpus:2;mem:4096")
    fid, _ = h.subscribe("batch")
    h.set_demands(fid, demand("work", "cpus:2;mem:128", count=1))
    (offer,) = h.offers_for(fid)
    h.accept(fid, [offer.offer_id], task("t1", "cpus:2;mem:128", demand="work"), refuse=0)
    (r,) = ask(h, SimulationRequest(remove=(a1,), utilization_threshold=0.5))["removals"]
    assert r["removable"] is False and r["reason"].startswith("utilization 1.00")


def test_a_task_marked_not_safe_to_evict_keeps_its_node_and_a_drain_still_moves_it() -> None:
    h = Harness()
    fid, _ = h.subscribe("db")
    a0, _ = h.add_agent("a0", resources="cpus:4;mem:4096")
    h.add_agent("a1", resources="cpus:4;mem:4096")
    offers = h.offers_for(fid)
    t = task("pg", "cpus:1;mem:128")
    t.agent_id = a0
    t.wire = common_pb2.TaskInfo(labels={"corral.io/safe-to-evict": "false"})
    h.accept(fid, [o.offer_id for o in offers if o.agent_id == a0], t, refuse=0)
    (r,) = ask(h, SimulationRequest(remove=(a0,)))["removals"]
    assert r["removable"] is False
    assert r["reason"] == (
        f"task pg of {fid} is marked not safe to evict (corral.io/safe-to-evict=false)"
    )
    # Any other value (or none) is Cluster Autoscaler's default: the task may move.
    h.core.agents[a0].tasks[(fid, "pg")].spec.wire = common_pb2.TaskInfo(
        labels={"corral.io/safe-to-evict": "true"}
    )
    (r,) = ask(h, SimulationRequest(remove=(a0,)))["removals"]
    assert r["removable"] is True
    # The marker is the autoscaler's: an operator's drain is not refused for it.
    h.core.agents[a0].tasks[(fid, "pg")].spec.wire = t.wire
    drain(h, a0)  # refused with CallRejected if it were
    assert h.core.agents[a0].maintenance is not None


# --- disruption budgets (rule 6) ------------------------------------------------------------


def _web_cluster(budgets: Any) -> tuple[Harness, str, list[str]]:
    """Three agents with one RUNNING task of app web each (labels app=web)."""
    h = Harness(config=MasterConfig(disruption_budgets=budgets_from_json(budgets)))
    agents = [h.add_agent(f"a{i}", resources="cpus:4;mem:4096")[0] for i in range(3)]
    fid, _ = h.subscribe("serving")
    h.set_demands(fid, demand("web", count=3))
    offers = {o.agent_id: o for o in h.offers_for(fid)}
    for i, aid in enumerate(agents):
        t = task(f"w{i}", demand="web")
        t.wire = common_pb2.TaskInfo(labels={"app": "web"})
        h.accept(fid, [offers[aid].offer_id], t, refuse=0)
        h.agent_updates(aid, status(f"w{i}", fid, aid, TaskState.RUNNING))
    return h, fid, agents


def drain(h: Harness, agent_id: str) -> list[Any]:
    return h.handle(ev.Drain(**h.base(), agent_id=agent_id, requester=Requester("t")))


def test_a_drain_that_would_break_a_budget_is_refused_naming_it() -> None:
    h, _fid, (a0, a1, _a2) = _web_cluster(
        [{"name": "web", "selector": {"app": "web"}, "min_available": 2}]
    )
    drain(h, a0)  # 3 healthy, 2 left: allowed
    with pytest.raises(CallRejected) as exc:
        drain(h, a1)
    assert exc.value.code is Refusal.FAILED_PRECONDITION
    assert str(exc.value.message) == (
        "disruption budget web (min_available 2): 2 of 3 healthy, disrupting 1 would leave 1"
    )
    assert h.core.agents[a1].maintenance is None  # refused: nothing changed
    # Draining again what drains already is no new disruption.
    drain(h, a0)


def test_max_unavailable_and_the_autoscalers_removals_count_together() -> None:
    h, _fid, agents = _web_cluster(
        [{"name": "web", "selector": {"labels": {"app": "web"}}, "max_unavailable": 1}]
    )
    answer = ask(h, SimulationRequest(remove=tuple(agents), utilization_threshold=1.0))
    by = {r["agent_id"]: r for r in answer["removals"]}
    assert by[agents[0]]["removable"] is True
    assert by[agents[1]]["removable"] is False
    assert by[agents[1]]["reason"].startswith("disruption budget web (max_unavailable 1)")


def test_a_budget_of_another_framework_or_label_does_not_hold() -> None:
    h, _fid, (a0, a1, _a2) = _web_cluster(
        [
            {"name": "api", "selector": {"app": "api"}, "min_available": 3},
            {"name": "other", "selector": {"framework": "batch"}, "min_available": 3},
        ]
    )
    drain(h, a0)
    drain(h, a1)


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ([{"name": "x", "selector": {}, "min_available": 1}], "budget x: the selector selects"),
        ([{"name": "x", "selector": {"app": "w"}}], "budget x: exactly one of"),
        ([{"name": "x", "selector": {"app": "w"}, "min_available": -1}], "budget x: min_av"),
        ({"name": "x"}, "disruption budgets must be a list"),
    ],
)
def test_bad_budgets_say_why(doc: Any, message: str) -> None:
    with pytest.raises(BudgetError) as exc:
        budgets_from_json(doc)
    assert str(exc.value).startswith(message)
