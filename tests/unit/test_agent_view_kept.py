"""The why-pending scan's kept agent view (agent_view.py, "Kept across scans") is the view built
from scratch: random sequences of events (agents coming and going, offers made, used, declined
and expired, tasks launched and ending, demands set, scans) and after each one the kept view,
brought up to date, equals a new ``AgentView`` array for array, and its reasons equal the new
one's and the agent-by-agent specification's. The core's validate() runs after every event
(core_harness), with the kept view in the core, so a change that moved no version fails at the
event that made it (validate.py, ``_kept_view``)."""

from __future__ import annotations

from unittest.mock import patch

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corral.master.core import agent_arrays, demands
from corral.master.core import events as ev
from corral.master.core.agent_arrays import AgentArrays
from corral.master.core.agent_view import AgentView
from corral.master.core.config import MasterConfig
from corral.master.core.types import TaskState
from corral.placement import Taint, TaintEffect, Toleration, TopologySpread
from tests.unit.core_harness import Harness, demand, status, task

STEPS = st.sampled_from(
    ["agent", "agent", "close", "allocate", "accept", "accept", "decline", "finish", "demands",
     "tick", "tick"]
)  # fmt: skip
SHAPES = ["cpus:1;mem:128", "cpus:3;mem:128", "cpus:1;mem:64;gpus:1", "cpus:9;mem:64"]


def check(h: Harness, kept: AgentArrays | None, fws: list[str]) -> AgentArrays:
    core = h.core
    agents = demands.connected_agents(core)
    view = AgentView(core, agents, kept)
    fresh = AgentView(core, agents)
    arrays, new = view.arrays, fresh.arrays
    assert view.ids == fresh.ids
    assert view.statics.rule_sets == fresh.statics.rule_sets
    assert view.statics.attr_sets == fresh.statics.attr_sets
    assert np.array_equal(view.statics.rules_of, fresh.statics.rules_of)
    assert np.array_equal(view.statics.attrs_of, fresh.statics.attrs_of)
    assert np.array_equal(view.statics.totals, fresh.statics.totals)
    assert np.array_equal(arrays.task_use, new.task_use)
    assert np.array_equal(arrays.offered, new.offered)
    assert np.array_equal(arrays.free, new.free)
    for fid in fws:
        assert np.array_equal(arrays.free_for(fid), new.free_for(fid))
        record = core.frameworks[fid]
        held = demands.held_back(core, record, h.now)
        for d in record.demands.values():
            got = demands.demand_reasons(core, record, d, agents, held, view)
            assert got == demands.demand_reasons(core, record, d, agents, held, fresh)
            assert got == demands.demand_reasons_reference(core, record, d, agents, held)
    # Kept in the core from here on: validate() checks its versions after every event.
    core.pending.arrays = arrays
    return arrays


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_the_kept_view_is_the_view_built_from_scratch(data: st.DataObject) -> None:
    _program(data)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_the_kept_view_is_the_view_built_from_scratch_when_ticks_sum_one_task(
    data: st.DataObject,
) -> None:
    """The same with each tick between scans summing at most one task's agent row
    (``FOLLOW_TASKS_PER_TICK``): rows left for later ticks or the scan never show."""
    with patch.object(agent_arrays, "FOLLOW_TASKS_PER_TICK", 1):
        _program(data)


def _program(data: st.DataObject) -> None:
    # Scans every second: the scan keeps its own view too, between the test's refreshes.
    h = Harness(config=MasterConfig(pending_event_interval=1.0, offer_timeout=3.0))
    fws = [
        h.subscribe("a", tolerations=(Toleration("spot", "true"),))[0],
        h.subscribe("b", gpu_resources=True)[0],
    ]
    for fid in fws:  # tasks name d0: every demand set below has one
        h.set_demands(fid, demand("d0", count=20))
    agents: list[str] = []
    offers: list[tuple[str, str, float]] = []  # (framework, offer id, cpus) last offered
    tasks: list[tuple[str, str, str]] = []  # (framework, task id, agent id) launched
    kept: AgentArrays | None = None
    n = 0
    for _ in range(data.draw(st.integers(4, 30))):
        step = data.draw(STEPS)
        if step == "agent" or not agents:
            spot = data.draw(st.booleans())
            aid, _ = h.add_agent(
                resources=f"cpus:{data.draw(st.sampled_from([2, 4, 8]))};mem:1024;disk:100;"
                f"gpus:{data.draw(st.sampled_from([0, 1]))}",
                taints=(Taint("spot", "true", TaintEffect.NO_SCHEDULE),) if spot else (),
                attributes=data.draw(st.sampled_from([{}, {"zone": "a"}, {"zone": "b"}])),
            )
            agents.append(aid)
        elif step == "close":
            h.close_agent(data.draw(st.sampled_from(agents)))
        elif step == "allocate":
            offers = [
                (b.framework_id, o.offer_id, o.scalars[0]) for b in h.allocate() for o in b.offers
            ]
        elif step in ("accept", "decline") and offers:
            # Only offers still outstanding: a closed agent's were rescinded with it.
            offers = [o for o in offers if h.core.book.get(o[1]) is not None]
            if not offers:
                kept = check(h, kept, fws)
                continue
            fid, oid, cpus = offers.pop(data.draw(st.integers(0, len(offers) - 1)))
            if step == "accept" and cpus >= 1:
                n += 1
                h.accept(fid, [oid], task(f"t{n}", demand="d0"), refuse=0)
                launched = h.core.frameworks[fid].tasks.get(f"t{n}")
                if launched is not None:
                    tasks.append((fid, f"t{n}", launched.agent_id))
            else:
                refuse = data.draw(st.sampled_from([0.0, 3600.0]))
                h.handle(ev.Decline(**h.call_base(fid), offer_ids=(oid,), refuse_seconds=refuse))
        elif step == "finish" and tasks:
            fid, tid, aid = tasks.pop(data.draw(st.integers(0, len(tasks) - 1)))
            if aid and aid in h.connections:
                state = data.draw(st.sampled_from([TaskState.RUNNING, TaskState.FINISHED]))
                h.agent_updates(aid, status(tid, fid, aid, state))
        elif step == "demands":
            fid = data.draw(st.sampled_from(fws))
            names = data.draw(st.lists(st.sampled_from(SHAPES), min_size=1, max_size=3))
            spread = data.draw(st.sampled_from([None, TopologySpread("zone", 1)]))
            h.set_demands(
                fid,
                *(demand(f"d{k}", s, count=20, spread=spread) for k, s in enumerate(names)),
            )
        elif step == "tick":
            h.tick(advance=data.draw(st.sampled_from([0.5, 1.0, 4.0])))
            h.allocate()  # the scan runs after a cycle, with the view it keeps
            offers = []  # the cycle's offers are the test's to forget (they expire)
        kept = check(h, kept, fws)


def test_between_scans_each_tick_sums_the_rows_whose_tasks_moved() -> None:
    """pending.py rule 5: while demands wait, a tick that is not a scan sums the task rows of
    the agents whose tasks changed since (so the next scan does not sum a burst of them), and
    keeps ``free`` with them (validate() checks it after every event)."""
    h = Harness(config=MasterConfig(pending_event_interval=5.0))
    aid, _ = h.add_agent(resources="cpus:4;mem:1024;disk:100")
    fid, _ = h.subscribe("a")
    h.set_demands(fid, demand("d0", "cpus:1;mem:128", count=20))
    [offer] = [o for o in h.offers_for(fid) if o.agent_id == aid]  # this tick scans
    arrays = h.core.pending.arrays
    assert arrays is not None
    i = arrays.index[aid]
    assert arrays.task_use[i].tolist() == [0.0, 0.0, 0.0, 0.0]
    h.accept(fid, [offer.offer_id], task("t1", "cpus:1;mem:128", demand="d0"), refuse=0)
    h.allocate()  # not a scan: 5 s have not passed
    assert h.core.pending.arrays is arrays
    assert arrays.task_use[i].tolist() == [1.0, 128.0, 0.0, 0.0]
    assert arrays.free[i].tolist() == (arrays.statics.totals[i] - arrays.task_use[i]
                                       - arrays.offered[i]).tolist()  # fmt: skip


def test_a_tick_between_scans_sums_at_most_its_budget_of_tasks_the_next_the_rest() -> None:
    """agent_arrays.py: a burst of launches is summed over the ticks that follow it, at most
    ``FOLLOW_TASKS_PER_TICK`` tasks a tick (at least one agent's row), the first moved rows
    first; a row not yet summed keeps the version it was summed at, and the scan sums
    whatever is left."""
    h = Harness(config=MasterConfig(pending_event_interval=5.0))
    aids = [h.add_agent(resources="cpus:4;mem:1024;disk:100")[0] for _ in range(3)]
    fid, _ = h.subscribe("a")
    h.set_demands(fid, demand("d0", "cpus:1;mem:128", count=20))
    offers = {o.agent_id: o for o in h.offers_for(fid)}  # this tick scans
    arrays = h.core.pending.arrays
    assert arrays is not None
    rows = [arrays.index[aid] for aid in aids]
    for n, aid in enumerate(aids):
        h.accept(fid, [offers[aid].offer_id], task(f"t{n}", "cpus:1;mem:128", demand="d0"))
    summed = [arrays.task_use[i].tolist() == [1.0, 128.0, 0.0, 0.0] for i in rows]
    assert summed == [False, False, False]
    with patch.object(agent_arrays, "FOLLOW_TASKS_PER_TICK", 1):
        for ticks in (1, 2):
            h.tick(advance=1.0)
            h.allocate()  # not a scan: 5 s have not passed
            assert h.core.pending.arrays is arrays
            summed = [arrays.task_use[i].tolist() == [1.0, 128.0, 0.0, 0.0] for i in rows]
            assert sorted(rows)[:ticks] == [i for i, s in zip(rows, summed, strict=True) if s]
        h.tick(advance=5.0)
        h.allocate()  # the scan: every row summed
    arrays = h.core.pending.arrays
    assert arrays is not None
    assert all(arrays.task_use[arrays.index[aid]].tolist() == [1.0, 128.0, 0.0, 0.0]
               for aid in aids)  # fmt: skip
