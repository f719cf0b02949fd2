"""A cycle with a cpus budget (a paced master's allowance) is the full cycle cut short: the
same offers in the same order, up to and including the first agent at which the plan holds the
budget. Checked on both allocators (the numpy one walks in runs, see ``cycle.walk_within``, and
selects its candidates a slice of the walk order at a time, ``cycle._selected``).

With priority levels a cycle is one pass per level (order.py), and an agent is visited once per
pass: the visit at which the budget is reached ends the cycle, and the same agent's offers in a
later pass are not part of it."""

from __future__ import annotations

import copy
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corral.master.allocator import Allocation, DrfAllocator, cycle
from corral.master.allocator.numpy_allocator import KERNELS
from tests.unit.test_allocator_properties import build


def cut(full: list[Allocation], cpus: float, level: dict[str, int]) -> list[Allocation]:
    planned = 0.0
    for i, a in enumerate(full):
        planned += a.scalars[0]
        if planned >= cpus:
            end = i + 1
            while (
                end < len(full)
                and full[end].agent_id == a.agent_id
                and level[full[end].framework_id] == level[a.framework_id]
            ):
                end += 1  # the rest of that visit's offers (split between frameworks)
            return full[:end]
    return full


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_budgeted_cycle_is_the_full_cycle_cut_at_the_budget(data: st.DataObject) -> None:
    twin = build(data)
    cpus = data.draw(st.integers(1, 96).map(lambda n: n / 2) | st.floats(0.1, 60.0))
    seed = data.draw(st.integers(0, 2**32 - 1))
    level = {fid: fw.priority for fid, fw in twin.ref._frameworks.items()}
    # The numpy allocator's first slice of the walk order (cycle._selected) as small as one
    # agent: the budget then spans many slices, each selected after the walk of the last.
    first = data.draw(st.sampled_from([1, 2, 3, cycle.SELECT_FIRST]))
    for alloc in (twin.ref, twin.fast):
        whole = copy.deepcopy(alloc)
        full = list(whole.cycle(1.0, seed))
        with mock.patch.object(cycle, "SELECT_FIRST", first):
            budgeted = list(alloc.cycle(1.0, seed, cpus))
        assert budgeted == cut(full, cpus, level), type(alloc).__name__


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cpus_per_agent=st.lists(st.integers(1, 48).map(lambda n: n / 2), min_size=20, max_size=120),
    frameworks=st.integers(1, 6),
    budget=st.integers(1, 400).map(lambda n: n / 2),
    seed=st.integers(0, 2**32 - 1),
    kernel=st.sampled_from(KERNELS),
    first=st.sampled_from([1, 3, cycle.SELECT_FIRST]),
)
def test_a_budget_that_spans_many_uneven_agents_cuts_at_the_same_agent(
    cpus_per_agent: list[float], frameworks: int, budget: float, seed: int, kernel: str, first: int
) -> None:
    # Wide enough that the budgeted walk reads the agents' free cpus in several chunks and
    # walks several runs (cycle.walk_within), uneven so that a run summed from the wrong
    # agents' cpus stops at the wrong one.
    alloc = DrfAllocator(kernel=kernel)
    for i, cpus in enumerate(cpus_per_agent):
        alloc.add_agent(f"a{i:03}", (cpus, 4096.0, 0.0, 0.0), {}, [])
    for i in range(frameworks):
        alloc.add_framework(f"f{i}", "web")
    whole = copy.deepcopy(alloc)
    full = list(whole.cycle(1.0, seed))
    with mock.patch.object(cycle, "SELECT_FIRST", first):
        budgeted = list(alloc.cycle(1.0, seed, budget))
    assert budgeted == cut(full, budget, {f"f{i}": 0 for i in range(frameworks)})
    assert sum(a.scalars[0] for a in budgeted) >= min(budget, sum(cpus_per_agent))
