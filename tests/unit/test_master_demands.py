"""Demands and priority classes in the master core (master/core/demands.py): priority orders
offers, auto-suppress, checks that leave the state as it was, and explain per demand."""

from __future__ import annotations

import pytest

from corral.master.core import commands as cmd
from corral.master.core import events as ev
from corral.master.core.config import MasterConfig
from corral.master.core.refusals import CallRejected, Refusal
from corral.master.core.types import TaskState
from corral.priority import PreemptionPolicy, PriorityClass
from tests.unit.core_harness import Harness, demand, of, status, task


def offered_to(h: Harness) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for batch in h.allocate():
        out.setdefault(batch.framework_id, []).extend(o.agent_id for o in batch.offers)
    return out


def test_a_higher_priority_demand_is_offered_the_agent_first() -> None:
    h = Harness()
    batch, _ = h.subscribe("batch")  # first by id: plain DRF would offer it the agent
    serving, _ = h.subscribe("serving")
    h.add_agent()
    h.set_demands(batch, demand("work", count=4, priority_class="batch"))
    h.set_demands(serving, demand("web", count=2, priority_class="serving"))
    assert list(offered_to(h)) == [serving]


def test_without_demands_the_order_is_plain_drf() -> None:
    h = Harness()
    first, _ = h.subscribe("a")
    h.subscribe("b")
    h.add_agent()
    assert list(offered_to(h)) == [first]


def test_a_satisfied_framework_is_not_offered_until_a_task_ends() -> None:
    h = Harness()
    fid, _ = h.subscribe()
    aid, _ = h.add_agent()
    h.set_demands(fid, demand("web", count=1))
    offers = h.offers_for(fid)
    assert offers
    h.accept(fid, [offers[0].offer_id], task("t1", demand="web"))
    assert h.core.frameworks[fid].demand_tasks == {"web": 1}
    h.now += 10
    assert offered_to(h) == {}  # wants nothing: auto-suppressed
    assert h.core.explain(fid, h.now)["wants_nothing"] is True
    h.agent_updates(aid, status("t1", fid, aid, TaskState.FAILED))
    h.now += 10
    assert list(offered_to(h)) == [fid]  # the demand is unmet again


def test_an_empty_list_withdraws_demands_and_a_framework_that_never_set_any_is_offered() -> None:
    h = Harness()
    quiet, _ = h.subscribe("quiet")
    plain, _ = h.subscribe("plain")
    h.add_agent()
    h.set_demands(quiet, demand("x"))
    h.set_demands(quiet)
    assert h.core.frameworks[quiet].demands == {}
    assert list(offered_to(h)) == [plain]


def test_revive_does_not_lift_auto_suppression() -> None:
    h = Harness()
    fid, _ = h.subscribe()
    h.add_agent()
    h.set_demands(fid)
    h.handle(ev.Revive(**h.call_base(fid)))
    assert offered_to(h) == {}


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (demand("x", count=0), "count must be more than 0"),
        (demand("x", count=2, min_member=3), "min_member must be between 0 and count"),
        (demand("x", priority_class="gold"), "unknown priority class 'gold'"),
        (demand("x", resources="disk:10", count=2, min_member=2), "a gang's task shape asks"),
        (demand("x", resources="cpus:1;ports:[80-80]"), "ports are not part"),
        (demand("", count=1), "empty name"),
        (demand("x", count=10**9), "more than the limit"),
    ],
)
def test_a_bad_demand_is_refused_and_changes_nothing(bad: object, reason: str) -> None:
    h = Harness()
    fid, _ = h.subscribe()
    h.set_demands(fid, demand("keep", count=3))
    with pytest.raises(CallRejected) as exc:
        h.set_demands(fid, demand("ok"), bad)  # type: ignore[arg-type]
    assert exc.value.code is Refusal.INVALID_ARGUMENT
    assert reason in exc.value.message
    assert list(h.core.frameworks[fid].demands) == ["keep"]


def test_a_demand_named_twice_is_refused() -> None:
    h = Harness()
    fid, _ = h.subscribe()
    with pytest.raises(CallRejected, match="appears twice"):
        h.set_demands(fid, demand("x"), demand("x"))


def test_an_unknown_priority_class_refuses_the_accept_before_anything_changes() -> None:
    h = Harness()
    fid, _ = h.subscribe()
    h.add_agent()
    offers = h.offers_for(fid)
    with pytest.raises(CallRejected) as exc:
        h.accept(fid, [offers[0].offer_id], task("t1", priority_class="gold"))
    assert exc.value.code is Refusal.INVALID_ARGUMENT
    assert "unknown priority class 'gold'" in exc.value.message
    assert h.core.frameworks[fid].tasks == {}
    assert offers[0].offer_id in h.core.offers  # still the framework's to use
    h.accept(fid, [offers[0].offer_id], task("t1", priority_class="serving"))
    assert "t1" in h.core.frameworks[fid].tasks


def test_a_task_naming_a_demand_not_set_is_refused() -> None:
    h = Harness()
    fid, _ = h.subscribe()
    h.add_agent()
    offers = h.offers_for(fid)
    with pytest.raises(CallRejected, match="names demand 'nope'"):
        h.accept(fid, [offers[0].offer_id], task("t1", demand="nope"))


def test_priority_classes_set_delete_and_the_global_default() -> None:
    h = Harness()
    core = h.core
    assert [c.name for c in core.priority.sorted()] == ["system", "serving", "default", "batch"]
    assert core.priority.default == "default"
    gold = PriorityClass("gold", 5000, PreemptionPolicy.NEVER, "paying", global_default=True)
    h.handle(ev.SetPriorityClass(**h.base(), priority_class=gold))
    assert core.priority.default == "gold"
    assert not core.priority.classes["default"].global_default
    fid, _ = h.subscribe()
    h.set_demands(fid, demand("x", priority_class="serving"))
    with pytest.raises(CallRejected) as exc:
        h.handle(ev.DeletePriorityClass(**h.base(), name="serving"))
    assert exc.value.code is Refusal.FAILED_PRECONDITION
    assert f"demand 'x' of framework {fid}" in exc.value.message
    with pytest.raises(CallRejected, match="global default") as exc:
        h.handle(ev.DeletePriorityClass(**h.base(), name="gold"))
    with pytest.raises(CallRejected) as exc:
        h.handle(ev.DeletePriorityClass(**h.base(), name="nope"))
    assert exc.value.code is Refusal.NOT_FOUND
    out = h.handle(ev.DeletePriorityClass(**h.base(), name="batch"))
    assert of(cmd.ClusterEvent, out)[0].kind == "priority_class_deleted"
    assert "batch" not in core.priority.classes


def test_a_framework_without_demands_takes_the_default_class_value() -> None:
    gold = PriorityClass("gold", 5000, global_default=True)
    h = Harness(config=MasterConfig(priority_classes=(gold,)))
    low, _ = h.subscribe("low")
    other, _ = h.subscribe("other")
    h.add_agent()
    # "low" is first by id; its demand's class (batch, -100) puts it below "other" at 5000.
    h.set_demands(low, demand("x", priority_class="batch"))
    assert h.core.explain(other, h.now)["priority"] == 5000
    assert list(offered_to(h)) == [other]


def test_explain_counts_agents_per_reason_for_each_pending_demand() -> None:
    h = Harness()
    fid, _ = h.subscribe(gpu_resources=True)
    h.add_agent("a1")
    h.add_agent("a2")
    h.add_agent("a3", resources="cpus:8;mem:8192;gpus:2")
    h.set_demands(
        fid,
        demand("train", "cpus:1;mem:128;gpus:1", count=4, min_member=4),
        demand("done", count=1),
    )
    offers = h.offers_for(fid)
    one = next(o for o in offers if o.agent_id != "a3")
    h.accept(fid, [one.offer_id], task("d1", demand="done"))
    data = h.core.explain(fid, h.now)
    assert [d["name"] for d in data["pending_demands"]] == ["train"]
    train = data["pending_demands"][0]
    assert train["unmet"] == 4 and train["min_member"] == 4 and train["agents"] == 3
    reasons = {r["reason"]: r for r in train["reasons"]}
    assert reasons["insufficient gpus"]["agents"] == 2
    assert sorted(reasons["insufficient gpus"]["sample_agents"]) == ["a1", "a2"]
    # The agent with room is where its tasks can go, not a reason it is pending (issue #40:
    # "1 of 2 agents: fits" read as one).
    assert "fits" not in reasons
    assert train["room"] == {"agents": 1, "sample_agents": ["a3"]}
    assert "2 of 3 agents: insufficient gpus" in train["summary"]
    assert "fits" not in train["summary"]
    assert "room for a task now on 1 of 3 agents" in train["summary"]


def test_a_framework_is_not_offered_an_agent_none_of_its_unmet_demands_fits() -> None:
    # Issue #41: a framework whose only demand fits nowhere held every agent's offer, which
    # could never serve it. It is offered only agents one of its unmet demands fits, empty.
    h = Harness()
    small = h.add_agent("small", resources="cpus:2;mem:1024")[0]
    big = h.add_agent("big", resources="cpus:16;mem:65536")[0]
    fid, _ = h.subscribe()
    h.set_demands(fid, demand("huge", "cpus:1000;mem:128"))
    assert h.offers_for(fid) == []
    reasons = h.core.explain(fid, h.now)["reasons"]
    assert reasons.get("none of its unmet demands fits the agent") == 2, reasons
    h.set_demands(fid, demand("huge", "cpus:1000;mem:128"), demand("large", "cpus:8;mem:1024"))
    assert [o.agent_id for o in h.offers_for(fid)] == [big]  # only where "large" fits
    # Once "large" is met, only "huge" is unmet again: nothing more is offered.
    [offer] = [o for o in h.core.offers.values() if o.framework_id == fid]
    h.accept(fid, [offer.offer_id], task("l1", "cpus:8;mem:1024", demand="large"), refuse=0)
    h.now += 10
    assert h.offers_for(fid) == []
    # Another framework is offered what the first is not.
    other, _ = h.subscribe("other")
    assert {o.agent_id for o in h.offers_for(other)} == {small, big}
