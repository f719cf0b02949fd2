"""The general walk (``general_walk`` / ``general_walk_kernel``, the walk when the fast path
does not apply, compiled or run as its own source) makes the reference's decisions on
multi-role, weighted, quota (guarantee and limit), reservation and PreferNoSchedule histories;
and it is the path taken."""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corral.master.allocator import DrfAllocator, ReferenceAllocator
from corral.placement import Taint, TaintEffect, Toleration
from tests.unit.test_allocator_properties import CONSTRAINTS, TOLERATIONS, Twin, budgets

ROLES = ["web", "batch", "ml", "ops"]
SOFT = Taint("old", "yes", TaintEffect.PREFER_NO_SCHEDULE)
HARD = Taint("spot", "true", TaintEffect.NO_SCHEDULE)
OLD = Toleration("old", exists=True)

sizes = st.tuples(
    st.integers(1, 32).map(lambda n: n / 2),
    st.integers(0, 32).map(lambda n: n * 128.0),
    st.integers(0, 8).map(lambda n: n * 100.0),
    st.integers(0, 2).map(float),
)
quarter = st.integers(0, 48).map(lambda n: n / 4)


@st.composite
def quotas(draw: st.DrawFn) -> tuple[tuple[float, ...] | None, tuple[float, ...] | None]:
    kind = draw(st.integers(0, 3))
    g = draw(quarter)
    if kind == 0:
        return None, None
    if kind == 1:
        return (g, draw(st.integers(0, 8)) * 128.0, 0.0, 0.0), None
    if kind == 2:
        return None, (g, draw(st.integers(0, 32)) * 128.0, 1e6, 2.0)
    return (g, 0.0, 0.0, 0.0), (g + draw(quarter), 1e9, 1e9, 4.0)


def build(data: st.DataObject) -> Twin:
    twin = Twin(fast=DrfAllocator(kernel="numba"))
    roles = data.draw(st.lists(st.sampled_from(ROLES), min_size=2, max_size=4, unique=True))
    for role in roles:
        twin.both("set_weight", role, data.draw(st.sampled_from([0.5, 1.0, 2.0, 3.0])))
        guarantee, limit = data.draw(quotas())
        if guarantee or limit:
            twin.both("set_quota", role, guarantee, limit)
            if limit:
                twin.limits[role] = limit
    for i in range(data.draw(st.integers(1, 14))):
        total = data.draw(sizes)
        taints = data.draw(st.lists(st.sampled_from([SOFT, SOFT, HARD]), max_size=2, unique=True))
        attrs = {"zone": data.draw(st.sampled_from("ab"))} if data.draw(st.booleans()) else {}
        res: dict[str, tuple[float, ...]] = {}
        for role in data.draw(st.lists(st.sampled_from(roles), max_size=2, unique=True)):
            share = data.draw(st.sampled_from([0.25, 0.5]))
            res[role] = tuple(x * share for x in total)
        twin.both("add_agent", f"a{i}", total, attrs, taints, res)
        twin.totals[f"a{i}"] = total
        twin.reserved[f"a{i}"] = res
    for i in range(data.draw(st.integers(2, 10))):
        role = data.draw(st.sampled_from(roles))
        tolerations = data.draw(st.lists(st.sampled_from([*TOLERATIONS, OLD]), max_size=2))
        constraints = data.draw(st.lists(st.sampled_from(CONSTRAINTS), max_size=1))
        twin.both("add_framework", f"f{i}", role, tuple(set(tolerations)), constraints)
        twin.roles[f"f{i}"] = role
        twin.both("set_priority", f"f{i}", data.draw(st.sampled_from([0, 0, 0, 10, -5])))
    return twin


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_compiled_general_walk_matches_reference(data: st.DataObject) -> None:
    twin = build(data)
    now = 0.0
    for _ in range(data.draw(st.integers(1, 6))):
        now += 1.0
        plan = twin.cycle(now, seed=data.draw(st.integers(0, 2**32 - 1)), cpus=data.draw(budgets))
        twin.compare_explain(now)
        batch = []
        for a in plan:
            action = data.draw(st.sampled_from(["decline", "filter", "keep", "half"]))
            if action == "decline":
                batch.append((a.framework_id, a.agent_id, a.scalars))
            elif action == "filter":
                twin.recover(a.framework_id, a.agent_id, a.scalars)
                twin.both("add_filter", a.framework_id, a.agent_id, now + 2.0)
            elif action == "half":
                twin.recover(a.framework_id, a.agent_id, tuple(x / 2 for x in a.scalars))
        if batch:
            twin.both("recover_many", batch)
            for fid, aid, amounts in batch:
                c = twin.charges.get((fid, aid))
                if c is not None:
                    twin.charges[(fid, aid)] = [
                        x - min(x, y) for x, y in zip(c, amounts, strict=True)
                    ]
        event = data.draw(st.integers(0, 5))
        fids = sorted(twin.roles)
        if event == 0:
            twin.both("set_suppressed", data.draw(st.sampled_from(fids)), data.draw(st.booleans()))
        elif event == 1:
            twin.both("clear_filters", data.draw(st.sampled_from(fids)))
        elif event == 2:
            aid = data.draw(st.sampled_from(sorted(twin.totals)))
            twin.both("set_agent_draining", aid, data.draw(st.booleans()))
        elif event == 5:
            fid = data.draw(st.sampled_from(fids))
            twin.both("set_priority", fid, data.draw(st.sampled_from([0, 10, -5])))


def _two_roles(alloc: DrfAllocator | ReferenceAllocator) -> None:
    for i in range(6):
        alloc.add_agent(f"a{i}", (8.0, 1024.0, 0.0, 0.0), {}, [SOFT] if i % 2 else [])
    for i in range(4):
        alloc.add_framework(f"f{i}", "web" if i % 2 else "batch", (OLD,) if i == 3 else ())
    alloc.set_weight("web", 2.0)
    alloc.set_quota("batch", (12.0, 0.0, 0.0, 0.0), (20.0, math.inf, math.inf, math.inf))


def test_the_compiled_general_walk_is_taken() -> None:
    ref, fast, slow = (
        ReferenceAllocator(),
        DrfAllocator(kernel="numba"),
        DrfAllocator(kernel="numpy"),
    )
    for alloc in (ref, fast, slow):
        _two_roles(alloc)
    plan = ref.cycle(0.0, 5)
    assert len(plan) > 0
    assert fast.cycle(0.0, 5) == plan
    assert fast.general_walks == 1
    assert slow.cycle(0.0, 5) == plan
    assert slow.general_walks == 1  # the same kernel, run as its own source


def test_many_offers_per_agent_grow_the_output() -> None:
    """Each agent reserves a slice for each of 40 roles limited to nothing else: 40 offers per
    agent, more than the walk's first output holds (it grows and resumes at an agent)."""
    roles = [f"r{i:02d}" for i in range(40)]
    ref, fast = ReferenceAllocator(), DrfAllocator(kernel="numba")
    for alloc in (ref, fast):
        for role in roles:
            alloc.add_framework(f"f-{role}", role)
            alloc.set_quota(role, None, (0.0, 0.0, 0.0, 0.0))
        for i in range(10):
            reserved = {role: (1.0, 64.0, 0.0, 0.0) for role in roles}
            alloc.add_agent(f"a{i}", (48.0, 4096.0, 0.0, 0.0), {}, [], reserved)
    plan = ref.cycle(0.0, 1)
    assert len(plan) == 400
    assert fast.cycle(0.0, 1) == plan
    assert fast.general_walks == 1
