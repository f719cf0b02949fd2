"""Demands that fit nowhere cost a bounded amount per tick (master/core/demand_work.py; issue
#30, item 6), and the bound starves nobody: structure and counts, never speed (the figures are
`corral bench demands --hostile`'s)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from corral.cli.main import main
from corral.master.bench import demands_hostile as demand_bench_hostile
from corral.master.core import demand_work
from corral.master.core import events as ev
from corral.master.core.config import MasterConfig
from tests.unit.core_harness import Harness, demand, task
from tests.unit.test_master_preemption import full_cluster


def test_the_hostile_bench_preempts_nothing_and_the_unrelated_framework_is_offered() -> None:
    result = demand_bench_hostile.run(
        agents=30, frameworks=2, demands_each=40, ticks=3, clock=time.perf_counter
    )
    assert result.offered_unrelated_min > 0
    assert result.frameworks == 2 and result.demands_each == 40


def test_cli_hostile_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "hostile.json"
    code = main(
        ["bench", "demands", "--agents", "20", "--demands", "10", "--hostile", "2",
         "--ticks", "1", "--json", str(out)]
    )  # fmt: skip
    assert code == 0
    assert json.loads(out.read_text())["offered_unrelated_min"] > 0


def test_searches_per_tick_are_bounded_and_a_small_framework_is_not_starved() -> None:
    h = Harness()
    for _ in range(2):
        h.add_agent(resources="cpus:4;mem:4096")
    srv, _ = h.subscribe("srv")
    for i, offer in enumerate(h.offers_for(srv)):  # a serving and a batch task on each agent
        h.accept(
            srv,
            [offer.offer_id],
            task(f"s{i}", priority_class="serving"),
            task(f"b{i}", priority_class="batch"),
            refuse=1e9,
        )
    # Demands of the default class that fit an agent (4 cpus) but not beside its serving task,
    # which they cannot preempt: every search finds nothing.
    big, _ = h.subscribe("big")
    many = [demand(f"d{k}", f"cpus:{3 + (k + 1) / 1000:.3f}", count=1) for k in range(200)]
    h.set_demands(big, *many)
    small, _ = h.subscribe("small")
    h.set_demands(small, demand("one", "cpus:3.5", count=1))
    rotation = h.core.preempt_rotation
    h.now += 1
    h.handle(ev.AllocationTick(**h.base(), seed=1))
    first = dict(rotation.last)
    assert 0 < len(first) <= demand_work.PREEMPTION_SEARCHES
    assert (small, "one") in first, "one framework's 200 demands starved another's one"
    for _ in range(4):  # the rest are searched in turn, none twice before all once
        h.now += 1
        h.handle(ev.AllocationTick(**h.base(), seed=1))
    assert all((big, f"d{k}") in rotation.last for k in range(200))


def test_a_shape_larger_than_every_agent_is_never_searched() -> None:
    h, _, _ = full_cluster(agents=2)
    fw, _ = h.subscribe("huge")
    h.set_demands(fw, demand("huge", "cpus:64", count=1))
    h.now += 1
    h.handle(ev.AllocationTick(**h.base(), seed=1))
    assert h.core.largest.never_fits(h.core, (64.0, 0.0, 0.0, 0.0))
    assert (fw, "huge") not in h.core.preempt_rotation.last


def test_the_task_sums_follow_a_class_whose_value_changes() -> None:
    h = Harness()
    from corral.priority import PriorityClass

    h.handle(ev.SetPriorityClass(**h.base(), priority_class=PriorityClass("gold", 10)))
    h.add_agent()
    fid, _ = h.subscribe()
    (offer,) = h.offers_for(fid)
    h.accept(fid, [offer.offer_id], task("t", priority_class="gold"))
    assert 10 in h.core.tasks.sums.by_value
    # The harness's validate() recounts after every event: a stale value would fail it.
    h.handle(ev.SetPriorityClass(**h.base(), priority_class=PriorityClass("gold", 20)))
    assert h.core.tasks.sums.by_value[20].sum() > 0


def test_the_gang_budget_counts_only_cuts_that_find_nothing() -> None:
    h = Harness(config=MasterConfig(launch_pacing=False))  # no launch window in the way
    for _ in range(4):
        h.add_agent(resources="cpus:64;mem:65536")
    fits, _ = h.subscribe("fits")
    hopeless, _ = h.subscribe("hopeless")
    n = demand_work.GANG_BUDGET + 16
    h.set_demands(
        fits, *(demand(f"g{k}", "cpus:1;mem:64", count=2, min_member=2) for k in range(n))
    )
    h.set_demands(
        hopeless,
        *(demand(f"h{k}", f"cpus:{60 + k / 1000:.3f}", count=8, min_member=8) for k in range(n)),
    )
    h.now += 1
    h.handle(ev.AllocationTick(**h.base(), seed=1))
    tried = [k for k in h.core.gang_rotation.last if k[0] == hopeless]
    assert len(tried) == demand_work.GANG_BUDGET  # then the tick stops cutting
    mine = [g for g in h.core.book.gangs.values() if g.framework_id == fits]
    # The frameworks took turns: as many fitting gangs were cut as hopeless ones tried.
    assert len(mine) >= demand_work.GANG_BUDGET - 1
    h.now += 1
    h.handle(ev.AllocationTick(**h.base(), seed=1))
    mine = [g for g in h.core.book.gangs.values() if g.framework_id == fits]
    assert len(mine) == n, "fitting gangs waited more than a tick behind hopeless ones"
