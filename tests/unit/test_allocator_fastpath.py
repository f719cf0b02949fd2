"""The allocator's fast path (one role, no quota, no reservations, no PreferNoSchedule) makes the
reference's decisions, over histories that pile up filters and shift shares; and it is taken."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corral.master.allocator import fastpath
from corral.master.allocator.numpy_allocator import KERNELS, DrfAllocator, Kernel
from corral.placement import Taint, TaintEffect, Toleration
from tests.unit.test_allocator_properties import CONSTRAINTS, Twin, budgets

HARD_TAINTS = [
    Taint("spot", "true", TaintEffect.NO_SCHEDULE),
    Taint("gpu", "yes", TaintEffect.NO_EXECUTE),
]
TOLERATIONS = [Toleration("spot", "true"), Toleration("gpu", exists=True)]

sizes = st.tuples(
    st.integers(1, 48).map(lambda n: n / 2),
    st.integers(0, 32).map(lambda n: n * 128.0),
    st.integers(0, 8).map(lambda n: n * 100.0),
    st.integers(0, 2).map(float),
)


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = fastpath.walk

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        out = real(*args, **kwargs)
        calls.append(len(out))
        return out

    monkeypatch.setattr(fastpath, "walk", spy)
    return calls


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@pytest.mark.parametrize("kernel", KERNELS)
@given(st.data())
def test_fast_path_matches_reference(walks: list[int], kernel: Kernel, data: st.DataObject) -> None:
    walks.clear()
    twin = Twin(fast=DrfAllocator(kernel=kernel))
    n_agents = data.draw(st.integers(1, 40))
    for i in range(n_agents):
        total = data.draw(sizes)
        attrs = {"zone": data.draw(st.sampled_from("abc"))} if data.draw(st.booleans()) else {}
        taints = data.draw(st.lists(st.sampled_from(HARD_TAINTS), max_size=1))
        twin.both("add_agent", f"a{i}", total, attrs, taints, None)
        twin.totals[f"a{i}"] = total
    for i in range(data.draw(st.integers(1, 12))):
        tolerations = data.draw(st.lists(st.sampled_from(TOLERATIONS), max_size=2, unique=True))
        constraints = data.draw(st.lists(st.sampled_from(CONSTRAINTS), max_size=1))
        twin.both("add_framework", f"f{i}", "*", tolerations, constraints)
        twin.roles[f"f{i}"] = "*"
        # Priority levels walk as passes, each a fast walk of its own (order.py).
        twin.both("set_priority", f"f{i}", data.draw(st.sampled_from([0, 0, 0, 10, -5])))
    now = 0.0
    offered = False
    for _ in range(data.draw(st.integers(1, 8))):
        now += 1.0
        plan = twin.cycle(now, seed=data.draw(st.integers(0, 2**32 - 1)), cpus=data.draw(budgets))
        offered = offered or bool(plan)
        twin.compare_explain(now)
        batch = []  # declines travel in one recover_many, as the master sends them
        indices = []  # or by handle (recover_handles), as the offer book sends them
        for i, a in enumerate(plan):
            action = data.draw(st.sampled_from(["decline", "filter", "keep", "part"]))
            if action == "decline":
                batch.append((a.framework_id, a.agent_id, a.scalars))
                indices.append(i)
            if action == "filter":
                twin.recover(a.framework_id, a.agent_id, a.scalars)
            if action == "filter":
                twin.both(
                    "add_filter",
                    a.framework_id,
                    a.agent_id,
                    now + data.draw(st.sampled_from([0.5, 3.0, 1e9])),
                )
            if action == "part":
                twin.recover(a.framework_id, a.agent_id, tuple(x / 2 for x in a.scalars))
        how = data.draw(st.sampled_from(["ids", "handles", "handles after an agent came"]))
        if how == "ids":
            twin.both("recover_many", batch)
        else:
            if how == "handles after an agent came":  # the plan's rows may be stale: by ids
                n_agents += 1
                twin.both("add_agent", f"a{n_agents}", (1.0, 128.0, 0.0, 0.0), {}, [], None)
                twin.totals[f"a{n_agents}"] = (1.0, 128.0, 0.0, 0.0)
            twin.recover_handles(indices)
        for fid, aid, amounts in batch:
            c = twin.charges[(fid, aid)]
            twin.charges[(fid, aid)] = [x - min(x, y) for x, y in zip(c, amounts, strict=True)]
        if data.draw(st.integers(0, 4)) == 0:
            fid = data.draw(st.sampled_from(sorted(twin.roles)))
            twin.both("set_suppressed", fid, data.draw(st.booleans()))
    # Every cluster here qualifies: any cycle that offered something took the fast path.
    assert bool(walks) == offered, "the fast path was not taken"


def test_fast_path_not_taken_with_two_roles(walks: list[int]) -> None:
    twin = Twin()
    twin.both("add_agent", "a0", (4.0, 1024.0, 0.0, 0.0), {}, [], None)
    twin.both("add_framework", "f0", "web")
    twin.both("add_framework", "f1", "batch")
    twin.cycle(1.0, seed=1)
    assert walks == []


def test_recover_many_with_a_bad_entry_changes_nothing() -> None:
    twin = Twin()
    twin.both("add_agent", "a0", (4.0, 1024.0, 0.0, 0.0), {}, [], None)
    twin.both("add_framework", "f0", "*")
    [offer] = twin.cycle(1.0, seed=1)
    for alloc in (twin.ref, twin.fast):
        with pytest.raises(ValueError, match="recover"):
            alloc.recover_many([("f0", "a0", offer.scalars), ("f0", "a0", (-1.0, 0.0, 0.0, 0.0))])
    # Nothing was returned: the agent is still fully charged, so nothing is offered.
    assert twin.cycle(2.0, seed=2) == []


def test_recover_handles_after_an_agent_left_and_its_row_was_reused_go_by_ids() -> None:
    twin = Twin()
    for aid in ("a0", "a1"):
        twin.both("add_agent", aid, (4.0, 1024.0, 0.0, 0.0), {}, [], None)
    twin.both("add_framework", "f0", "*")
    plan = twin.cycle(1.0, seed=1)
    old = twin.plans
    assert sorted(a.agent_id for a in plan) == ["a0", "a1"]
    twin.both("remove_agent", "a0")
    twin.both("add_agent", "a2", (2.0, 512.0, 0.0, 0.0), {}, [], None)  # takes a0's row
    assert [a.agent_id for a in twin.cycle(2.0, seed=2)] == ["a2"]  # now charged to f0
    twin.plans = old
    twin.recover_handles(list(range(len(plan))))
    for alloc in (twin.ref, twin.fast):
        # a0's entry went nowhere (not to a2, whose row it had), a1's came back.
        assert alloc.charged("f0", "a2") == (2.0, 512.0, 0.0, 0.0)
        assert alloc.charged("f0", "a1") == (0.0, 0.0, 0.0, 0.0)
    assert [a.agent_id for a in twin.cycle(3.0, seed=3)] == ["a1"]
