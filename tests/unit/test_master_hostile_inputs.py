"""Input from outside the core that once stopped every allocation cycle (issue #30, items 1, 2
and 7): a task naming a priority class the master does not hold, a demand below the resources'
granularity, tasks reported by an agent that never ran them. Each test checks that an
unrelated framework is still offered resources while the input stands."""

from __future__ import annotations

import math

import numpy as np
import pytest

from corral.master.allocator.interface import MAX_SLOTS, slots, slots_of_one
from corral.master.core import commands as cmd
from corral.master.core import events as ev
from corral.master.core.durable import AgentEntry, RegistryState
from corral.master.core.master import CallRejected
from corral.master.core.types import AgentSpec, ReportedTask, TaskState
from corral.priority import PriorityClass
from corral.resources import parse_resources
from tests.unit.core_harness import Harness, demand, of, status, task
from tests.unit.test_master_core_hardening import _register


def _reported(fid: str, tid: str, aid: str, priority_class: str = "") -> ReportedTask:
    return ReportedTask(
        fid, task(tid, priority_class=priority_class), status(tid, fid, aid, TaskState.RUNNING)
    )


def _kinds(out: list[cmd.Command]) -> list[str]:
    return [c.kind for c in of(cmd.ClusterEvent, out)]


# ---- item 1: an unknown priority class -----------------------------------------------------


def test_a_reported_task_of_an_unknown_class_counts_as_the_default_and_the_tick_goes_on() -> None:
    h = Harness()
    # As after a master restart that forgot every agent: the agent's tasks are taken in.
    out = _register(h, agent_id="X1", tasks=(_reported("G", "rogue", "X1", "nosuch"),))
    assert "priority_class_unknown" in _kinds(out)
    event = next(c for c in of(cmd.ClusterEvent, out) if c.kind == "priority_class_unknown")
    assert "'nosuch'" in event.message and "'default' (0)" in event.message
    h.add_agent(resources="cpus:4;mem:4096")
    fid, _ = h.subscribe("unrelated")
    h.set_demands(fid, demand("web", count=6, priority_class="serving"))
    offers = h.offers_for(fid)
    assert offers, "the unrelated framework was offered nothing while the task stands"
    # The task has the default class's value: a serving demand may preempt it.
    assert h.core.priority.value("nosuch") == 0


def test_a_serving_demand_preempts_a_task_of_an_unknown_class() -> None:
    h = Harness()
    _register(
        h, agent_id="X1", resources="cpus:1;mem:1024", tasks=(_reported("G", "t", "X1", "x"),)
    )
    fid, _ = h.subscribe("web")
    h.set_demands(fid, demand("web", count=1, priority_class="serving"))
    out = h.handle(ev.AllocationTick(**h.base(), seed=1))
    assert [k.task_id for k in of(cmd.SendKill, out)] == ["t"]


def test_a_class_a_live_task_names_cannot_be_deleted() -> None:
    h = Harness()
    h.handle(ev.SetPriorityClass(**h.base(), priority_class=PriorityClass("gold", 500)))
    aid, _ = h.add_agent()
    fid, _ = h.subscribe("owner")
    (offer,) = h.offers_for(fid)
    h.accept(fid, [offer.offer_id], task("t1", priority_class="gold"))
    with pytest.raises(CallRejected, match="in use by 1 live task"):
        h.handle(ev.DeletePriorityClass(**h.base(), name="gold"))
    h.agent_updates(aid, status("t1", fid, aid, TaskState.KILLED, uuid=b"k"))
    h.handle(ev.DeletePriorityClass(**h.base(), name="gold"))  # no task left: it may go
    assert "gold" not in h.core.priority.classes


def test_a_recovered_agents_task_of_a_class_the_registry_forgot_does_not_stop_the_tick() -> None:
    h = Harness()
    spec = AgentSpec(agent_id="R1", hostname="r", resources=parse_resources("cpus:4;mem:4096"))
    h.handle(
        ev.Recover(
            **h.base(),
            state=RegistryState(agents=(AgentEntry(spec, "sec", 1.0),), durable=True),
        )
    )
    out = _register(
        h, agent_id="R1", secret="sec", tasks=(_reported("G", "old", "R1", "made-by-an-operator"),)
    )
    assert "priority_class_unknown" in _kinds(out)
    assert h.core.frameworks["G"].tasks["old"].state is TaskState.RUNNING
    fid, _ = h.subscribe("unrelated")
    h.set_demands(fid, demand("web", count=1, priority_class="serving"))
    assert h.offers_for(fid)


# ---- item 2: quantities below the granularity ----------------------------------------------


@pytest.mark.parametrize("shape", ["cpus:1e-300;mem:0", "cpus:0;mem:1e-300", "cpus:1;gpus:1e-9"])
def test_a_demand_below_the_granularity_is_refused(shape: str) -> None:
    h = Harness()
    h.add_agent(resources="cpus:16;mem:4096")
    fid, _ = h.subscribe("gang")
    d = demand("g", resources=shape, count=100_000, min_member=100_000)
    with pytest.raises(CallRejected, match=r"below the resources' granularity of 0\.001"):
        h.set_demands(fid, d)
    assert h.core.frameworks[fid].demands == {}


def test_a_task_below_the_granularity_is_refused() -> None:
    h = Harness()
    h.add_agent()
    fid, _ = h.subscribe()
    (offer,) = h.offers_for(fid)
    with pytest.raises(CallRejected, match=r"cpus 1e-07 is below"):
        h.accept(fid, [offer.offer_id], task("t", resources="cpus:1e-7;mem:0"))


def test_the_smallest_shape_on_the_largest_agent_cuts_without_overflow() -> None:
    h = Harness()
    h.add_agent(resources="cpus:1e12;mem:1e12")
    fid, _ = h.subscribe("gang")
    h.set_demands(fid, demand("g", resources="cpus:0.001", count=100_000, min_member=100_000))
    other, _ = h.subscribe("unrelated")
    batches = h.allocate()
    gang = [b for b in batches if b.framework_id == fid]
    assert gang and sum(len(b.offers) for b in gang) == 1  # one agent holds the whole bundle
    h.tick(advance=1.0)
    assert h.handle(ev.AllocationTick(**h.base(), seed=3)) is not None
    del other


def test_slot_counts_are_cut_at_max_slots_for_any_quotient() -> None:
    assert slots_of_one([1e12, 0.0, 0.0, 0.0], (1e-300, 0.0, 0.0, 0.0)) == MAX_SLOTS
    free = np.array([[1e12, 1e12, 0.0, 0.0], [3.0, 1.0, 0.0, 0.0]])
    assert slots(free, (1e-300, 1e-300, 0.0, 0.0)).tolist() == [MAX_SLOTS, MAX_SLOTS]
    assert slots(free, (1.0, 0.5, 0.0, 0.0)).tolist() == [MAX_SLOTS, 2]
    assert math.isfinite(float(MAX_SLOTS)) and MAX_SLOTS * 100_000 < 2**62


# ---- item 7: tasks an agent never ran ------------------------------------------------------


def test_a_new_agent_may_report_no_tasks() -> None:
    h = Harness()
    fid, _ = h.subscribe("victim")
    h.set_demands(fid, demand("web", count=3))
    with pytest.raises(CallRejected, match="only an agent re-registering with its id"):
        _register(h, tasks=(_reported(fid, "fake", ""),))
    assert h.core.agents == {} and h.core.frameworks[fid].tasks == {}


def test_a_known_agent_cannot_report_a_task_the_master_never_launched_there() -> None:
    h = Harness()
    aid, _ = h.add_agent()
    fid, _ = h.subscribe("victim")
    h.set_demands(fid, demand("web", count=3))
    h.close_agent(aid)
    fake = ReportedTask(
        fid, task("fake", demand="web"), status("fake", fid, aid, TaskState.RUNNING)
    )
    out = h.add_agent(agent_id=aid, tasks=(fake,))[1]
    assert [k.task_id for k in of(cmd.SendKill, out)] == ["fake"]
    assert "reported_task_refused" in _kinds(out)
    fw = h.core.frameworks[fid]
    assert fw.tasks == {} and fw.demand_tasks == {}, "a task it never launched filled a demand"
    assert h.offers_for(fid), "the demand still wants its 3 tasks"


def test_an_unknown_id_on_a_master_with_a_durable_registry_is_a_new_agent() -> None:
    h = Harness()
    h.handle(ev.Recover(**h.base(), state=RegistryState(durable=True)))
    fid, _ = h.subscribe("victim")
    h.set_demands(fid, demand("web", count=3))
    out = _register(h, agent_id="invented", tasks=(_reported(fid, "fake", "invented"),))
    assert [k.task_id for k in of(cmd.SendKill, out)] == ["fake"]
    assert h.core.frameworks[fid].demand_tasks == {}


def test_a_restored_backup_adopts_unknown_agents_when_told_to() -> None:
    from corral.master.core.config import MasterConfig

    h = Harness(config=MasterConfig(adopt_unknown_agents=True))
    h.handle(ev.Recover(**h.base(), state=RegistryState(durable=True)))
    fid, _ = h.subscribe("owner")
    out = _register(h, agent_id="after-backup", tasks=(_reported(fid, "t", "after-backup"),))
    assert of(cmd.SendKill, out) == []
    assert h.core.frameworks[fid].tasks["t"].state is TaskState.RUNNING
