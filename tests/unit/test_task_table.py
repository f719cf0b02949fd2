"""task_table.py: one ``add`` / ``remove`` moves every index and tally of live tasks together
(rule 1), and ``validate`` finds any tally that drifted from the indexes (rule 4)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from corral.master.core.invariants import InvariantBroken
from corral.master.core.task_table import TaskTable
from corral.master.core.types import TaskState
from corral.resources import parse_resources
from tests.unit.core_harness import Harness, demand, status, task


def _running(h: Harness) -> tuple[str, str]:
    """An agent with two live tasks of one framework, one of them naming demand "d"."""
    aid, _ = h.add_agent(resources="cpus:8;mem:4096;disk:100")
    fid, _ = h.subscribe("web")
    h.set_demands(fid, demand("d", count=3))
    offer = h.offers_for(fid)[0]
    h.accept(
        fid,
        [offer.offer_id],
        task("t1", "cpus:1;mem:64", demand="d"),
        task("t2", "cpus:2;mem:128", priority_class="system"),
    )
    return aid, fid


def test_add_and_remove_move_every_tally_together() -> None:
    h = Harness()
    aid, fid = _running(h)
    table = h.core.tasks
    fw, agent = h.core.frameworks[fid], h.core.agents[aid]
    assert set(fw.tasks) == {"t1", "t2"} and len(agent.tasks) == 2
    assert fw.demand_tasks == {"d": 1}
    assert table.live_classes["system"] == 1
    assert sum(n for n in table.live_classes.values()) == 2
    assert table.validate(h.core.frameworks, h.core.agents) == []

    h.agent_updates(aid, status("t1", fid, aid, TaskState.FINISHED))
    assert set(fw.tasks) == {"t2"} and list(agent.tasks) == [(fid, "t2")]
    assert fw.demand_tasks == {}
    assert table.live_classes["system"] == 1 and sum(table.live_classes.values()) == 1
    assert table.validate(h.core.frameworks, h.core.agents) == []


def test_an_accept_and_a_status_batch_of_mixed_tasks_move_each_kind_by_its_count() -> None:
    # add_many and count_removed move the tallies once per kind (class, resources, demand),
    # not per task: the counts must come out as if each task had been counted on its own
    # (validate recounts the class sums and the principals' holdings from the indexes).
    h = Harness()
    aid, _ = h.add_agent(resources="cpus:16;mem:4096;disk:100")
    fid, _ = h.subscribe("web")
    h.set_demands(fid, demand("d", count=5), demand("e", count=5))
    offer = h.offers_for(fid)[0]
    kinds = [("cpus:1;mem:64", "d", ""), ("cpus:2;mem:64", "d", ""), ("cpus:1;mem:64", "e", "")]
    kinds.append(("cpus:1;mem:64", "d", "system"))
    # A kind's tasks share one resources object, as the wire decoder hands them out.
    shared = {res: parse_resources(res) for res, _, _ in kinds}
    specs = [
        dataclasses.replace(task(f"t{i}-{k}", demand=d, priority_class=cls), resources=shared[res])
        for k, (res, d, cls) in enumerate(kinds)
        for i in range(3)
    ]
    h.accept(fid, [offer.offer_id], *specs)
    fw, table = h.core.frameworks[fid], h.core.tasks
    assert fw.demand_tasks == {"d": 9, "e": 3}
    assert table.live_classes["system"] == 3 and sum(table.live_classes.values()) == 12
    assert table.validate(h.core.frameworks, h.core.agents) == []

    # One batch ends two of each kind but the last, and one of it; a RUNNING in between.
    ended = [f"t{i}-{k}" for k in range(3) for i in range(2)] + ["t0-3"]
    h.agent_updates(
        aid,
        *[status(t, fid, aid, TaskState.FINISHED) for t in ended[:3]],
        status("t2-3", fid, aid, TaskState.RUNNING),
        *[status(t, fid, aid, TaskState.FAILED) for t in ended[3:]],
    )
    assert fw.demand_tasks == {"d": 4, "e": 1}
    assert table.live_classes["system"] == 2 and sum(table.live_classes.values()) == 5
    assert table.validate(h.core.frameworks, h.core.agents) == []


def _break_held(t: TaskTable) -> None:
    t.held.add("someone", (1.0, 0.0, 0.0, 0.0), +1)


def _break_classes(t: TaskTable) -> None:
    t.live_classes["system"] += 1


def _break_sums(t: TaskTable) -> None:
    aid = next(iter(t.sums.rows))
    t.sums.task(aid, 0, (1.0, 0.0, 0.0, 0.0), +1)


@pytest.mark.parametrize(
    ("breaks", "fault"),
    [
        (_break_held, "principal someone's tasks hold"),
        (_break_classes, "live tasks per class counted"),
        (_break_sums, "task sums hold"),
    ],
)
def test_a_tally_that_drifts_from_the_indexes_is_found(
    breaks: Callable[[TaskTable], None], fault: str
) -> None:
    h = Harness()
    _running(h)
    breaks(h.core.tasks)
    faults = h.core.tasks.validate(h.core.frameworks, h.core.agents)
    assert any(fault in f for f in faults), faults
    with pytest.raises(InvariantBroken, match=fault.split("'")[0]):
        h.core.validate()


def test_a_task_in_one_index_only_is_found() -> None:
    h = Harness()
    _, fid = _running(h)
    h.core.frameworks[fid].tasks.pop("t2")
    faults = h.core.tasks.validate(h.core.frameworks, h.core.agents)
    assert any("holds task t2 its framework does not" in f for f in faults), faults
    assert any("counted" in f for f in faults), faults  # and the tallies no longer agree


def test_a_demand_count_that_drifts_is_found() -> None:
    h = Harness()
    _, fid = _running(h)
    h.core.frameworks[fid].demand_tasks["d"] = 2
    faults = h.core.tasks.validate(h.core.frameworks, h.core.agents)
    assert any("tasks per demand" in f for f in faults), faults
