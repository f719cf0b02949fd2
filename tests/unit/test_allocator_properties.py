"""Property tests: on random clusters and random histories the numpy allocator makes exactly the
reference's decisions (plans and explanations), and the invariants hold.

Quantities are multiples of 1/4, so sums are exact in float64 and "identical decisions" can be
asked for bit for bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corral.master.allocator import Allocation, Allocator, DrfAllocator, ReferenceAllocator
from corral.master.allocator.interface import Plan
from corral.master.allocator.numpy_allocator import KERNELS
from corral.master.core import gangs
from corral.placement import AttributeConstraint, ConstraintOp, Taint, TaintEffect, Toleration

TAINTS = [
    Taint("spot", "true", TaintEffect.NO_SCHEDULE),
    Taint("gpu", "yes", TaintEffect.NO_EXECUTE),
    Taint("old", "yes", TaintEffect.PREFER_NO_SCHEDULE),
]
TOLERATIONS = [
    Toleration("spot", "true"),
    Toleration("gpu", exists=True),
    Toleration("old", exists=True),
]
CONSTRAINTS = [
    AttributeConstraint("zone", ConstraintOp.EQUALS, ("a",)),
    AttributeConstraint("zone", ConstraintOp.IN, ("a", "b")),
    AttributeConstraint("rack", ConstraintOp.EXISTS),
]
ROLES = ["web", "batch", "ml"]
# Task shapes the rooms are compared for: small, cpus-heavy, GPU (agents hold 0-2 GPUs).
ROOM_SHAPES = [(0.25, 0.0, 0.0, 0.0), (2.0, 512.0, 100.0, 0.0), (0.5, 256.0, 0.0, 1.0)]
# Unmet demands' shapes: some fit most agents, one fits none (rules/demand_fit.py).
DEMAND_SHAPES = [*ROOM_SHAPES, (4.0, 8.0, 0.0, 0.0), (1000.0, 0.0, 0.0, 0.0)]

quarter = st.integers(0, 32).map(lambda n: n / 4)
scalars = st.tuples(
    st.integers(0, 16).map(lambda n: n / 2),
    st.integers(0, 16).map(lambda n: n * 256.0),
    st.integers(0, 8).map(lambda n: n * 100.0),
    st.integers(0, 2).map(float),
)


@st.composite
def agents(draw: st.DrawFn) -> tuple[tuple[float, ...], dict[str, str], list[Taint], dict]:
    total = draw(scalars)
    attrs: dict[str, str] = {}
    if draw(st.booleans()):
        attrs["zone"] = draw(st.sampled_from("abc"))
    if draw(st.booleans()):
        attrs["rack"] = "r1"
    taints = draw(st.lists(st.sampled_from(TAINTS), max_size=2, unique=True))
    reservations = {}
    if draw(st.integers(0, 3)) == 0:
        share = draw(st.sampled_from([0.25, 0.5, 1.0]))
        reservations[draw(st.sampled_from(ROLES))] = tuple(x * share for x in total)
    return total, attrs, taints, reservations


@st.composite
def frameworks(draw: st.DrawFn) -> tuple[str, list[Toleration], list[AttributeConstraint]]:
    role = draw(st.sampled_from(ROLES))
    tolerations = draw(st.lists(st.sampled_from(TOLERATIONS), max_size=2, unique=True))
    constraints = draw(st.lists(st.sampled_from(CONSTRAINTS), max_size=1))
    return role, tolerations, constraints


@st.composite
def role_settings(draw: st.DrawFn) -> dict[str, tuple]:
    out = {}
    for role in ROLES:
        weight = draw(st.sampled_from([1.0, 1.0, 2.0, 0.5]))
        guarantee = limit = None
        kind = draw(st.integers(0, 4))
        if kind == 1:
            guarantee = (draw(quarter), 0.0, 0.0, 0.0)
        elif kind == 2:
            limit = (draw(quarter), draw(st.integers(0, 32)) * 256.0, 1e6, draw(quarter))
        elif kind == 3:
            g = draw(quarter)
            guarantee, limit = (g, 0.0, 0.0, 0.0), (g + draw(quarter), 1e9, 1e9, 4.0)
        out[role] = (weight, guarantee, limit)
    return out


# Priority levels (order.py's key 1): mostly one level, as clusters without demands are, and
# sometimes two or three, so passes (and several roles within a pass) are exercised.
priorities = st.sampled_from([0, 1000, 0, -100, 2_000_000_000])

# A paced master's cycle budget in cpus (``cycle(cpus=...)``), or none.
budgets = st.one_of(
    st.just(math.inf), st.integers(1, 96).map(lambda n: n / 2), st.floats(0.1, 60.0)
)


@dataclass
class Twin:
    """Both allocators fed the same calls, plus the charges the test itself tracks."""

    ref: ReferenceAllocator = field(default_factory=ReferenceAllocator)
    fast: DrfAllocator = field(default_factory=DrfAllocator)
    charges: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    totals: dict[str, tuple[float, ...]] = field(default_factory=dict)
    roles: dict[str, str] = field(default_factory=dict)
    limits: dict[str, tuple[float, ...]] = field(default_factory=dict)
    reserved: dict[str, dict[str, tuple[float, ...]]] = field(default_factory=dict)  # by agent
    plans: tuple[Plan, Plan] | None = None  # the last cycle's (reference, fast) plans

    def recover_handles(self, indices: list[int]) -> None:
        """Return the last cycle's entries at ``indices`` by handle, as the offer book does."""
        assert self.plans is not None
        for alloc, plan in zip((self.ref, self.fast), self.plans, strict=True):
            _, _, scalars = plan.columns()
            if plan.source is None:  # the reference's plans name ids only
                alloc.recover_many(
                    [(plan[i].framework_id, plan[i].agent_id, scalars[i]) for i in indices]
                )
            else:
                handles = plan.handles()
                alloc.recover_handles(
                    plan.source, [handles[i] for i in indices], [scalars[i] for i in indices]
                )

    def both(self, method: str, *args: object, **kwargs: object) -> None:
        for alloc in (self.ref, self.fast):
            getattr(alloc, method)(*args, **kwargs)

    def cycle(self, now: float, seed: int, cpus: float = math.inf) -> list[Allocation]:
        before = {r: self.role_total(r) for r in self.limits}
        plan = self.ref.cycle(now, seed, cpus)
        fast_plan = self.fast.cycle(now, seed, cpus)
        assert fast_plan == plan
        self.plans = (plan, fast_plan)
        pairs = [(a.framework_id, a.agent_id) for a in plan]
        assert len(pairs) == len(set(pairs)), "an agent offered twice to one framework"
        for a in plan:
            c = self.charges.setdefault((a.framework_id, a.agent_id), [0.0] * 4)
            key = (a.framework_id, a.agent_id)
            self.charges[key] = [x + y for x, y in zip(c, a.scalars, strict=True)]
        for agent_id, total in self.totals.items():
            used = [0.0] * 4
            for (_, aid), c in self.charges.items():
                if aid == agent_id:
                    used = [u + x for u, x in zip(used, c, strict=True)]
            over = [u > t + 1e-9 for u, t in zip(used, total, strict=True)]
            assert not any(over), "more offered than free"
        for role, limit in self.limits.items():
            after = self.role_total(role)
            # Quota consumption is the allocation plus the unallocated reservations, and lies
            # between the allocation and allocation + all the role's reservations: a role whose
            # consumption was within its limit stays within it (a reservation larger than the
            # limit is the one way past it: the role is always offered its own reservations).
            reserved = self.role_reserved(role)
            for k in range(4):
                if before[role][k] + reserved[k] <= limit[k]:
                    assert after[k] <= limit[k] + 1e-9, f"quota limit of {role} exceeded"
        return plan

    def role_reserved(self, role: str) -> list[float]:
        out = [0.0] * 4
        for pools in self.reserved.values():
            out = [o + x for o, x in zip(out, pools.get(role, (0.0,) * 4), strict=True)]
        return out

    def role_total(self, role: str) -> list[float]:
        out = [0.0] * 4
        for (fid, _), c in self.charges.items():
            if self.roles.get(fid) == role:
                out = [o + x for o, x in zip(out, c, strict=True)]
        return out

    def recover(self, fid: str, aid: str, amounts: tuple[float, ...]) -> None:
        self.both("recover", fid, aid, amounts)
        c = self.charges.get((fid, aid))
        if c is not None:
            left = [x - min(x, y) for x, y in zip(c, amounts, strict=True)]
            self.charges[(fid, aid)] = left

    def compare_explain(self, now: float) -> None:
        for fid in list(self.roles):
            assert self.fast.explain(fid, now) == self.ref.explain(fid, now)
            # The view gang bundles are cut from (Allocator.room): the same in both.
            for shape in ROOM_SHAPES:
                fast, ref = self.fast.room(fid, now, shape), self.ref.room(fid, now, shape)
                assert list(fast.agent_ids) == list(ref.agent_ids)
                assert fast.unreserved.tolist() == ref.unreserved.tolist()
                assert fast.reserved.tolist() == ref.reserved.tolist()
                assert fast.headroom == ref.headroom
                # The scan's fast test is whether that room holds anyone, in both.
                has = self.fast.has_room(fid, now, shape)
                assert has == bool(len(ref.agent_ids)) == self.ref.has_room(fid, now, shape)
            # Many shapes at once (the scan's form): what has_room says of each.
            shapes = list(DEMAND_SHAPES)
            many = [self.ref.has_room(fid, now, s) for s in shapes]
            assert self.fast.has_room_many(fid, now, shapes) == many
            # held_back as arrays says what the dict says, in both.
            held = self.ref.held_back(fid, now)
            assert self.fast.held_back(fid, now) == held
            for al in (self.fast, self.ref):
                masks = al.held_back_masks(fid, now)
                assert list(masks.agent_ids) == sorted(list(masks.agent_ids))
                assert not (masks.filtered & masks.draining).any()
                assert not ((masks.filtered | masks.draining) & masks.kept_for_gpus).any()
                assert masks.as_dict() == held

    def compare_cuts(self, now: float) -> None:
        """A gang cut from the head of the numpy room (``want``) is the cut from the whole
        reference room."""
        for fid in list(self.roles):
            for shape in ROOM_SHAPES:
                for want in (1, 3, 8):
                    whole = gangs.fit(self.ref.room(fid, now, shape), shape, want)
                    head = self.fast.room(fid, now, shape, want=want)
                    cut = gangs.fit(head, shape, want)
                    if head.partial:
                        assert cut.found or not whole.found or whole.over_headroom
                        if cut.found:
                            assert cut.slots == whole.slots
                    else:
                        assert cut == whole


def build(data: st.DataObject) -> Twin:
    # Either kernel: they differ in how candidates are selected and the fast path is walked.
    twin = Twin(fast=DrfAllocator(kernel=data.draw(st.sampled_from(KERNELS))))
    for role, (weight, guarantee, limit) in data.draw(role_settings()).items():
        twin.both("set_weight", role, weight)
        if guarantee or limit:
            twin.both("set_quota", role, guarantee, limit)
            if limit:
                twin.limits[role] = limit
    for i, (total, attrs, taints, res) in enumerate(
        data.draw(st.lists(agents(), min_size=1, max_size=8))
    ):
        twin.both("add_agent", f"a{i}", total, attrs, taints, res)
        twin.totals[f"a{i}"] = total
        twin.reserved[f"a{i}"] = res
    for i, (role, tolerations, constraints) in enumerate(
        data.draw(st.lists(frameworks(), min_size=1, max_size=5))
    ):
        twin.both("add_framework", f"f{i}", role, tolerations, constraints)
        twin.roles[f"f{i}"] = role
        twin.both("set_priority", f"f{i}", data.draw(priorities))
    return twin


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_numpy_matches_reference_over_a_history(data: st.DataObject) -> None:
    twin = build(data)
    now = 0.0
    for step in range(data.draw(st.integers(1, 6))):
        now += data.draw(st.sampled_from([0.5, 1.0, 5.0]))
        plan = twin.cycle(now, seed=data.draw(st.integers(0, 2**32 - 1)), cpus=data.draw(budgets))
        twin.compare_explain(now)
        for a in plan:
            action = data.draw(
                st.sampled_from(["decline", "filter", "refuse-all", "keep", "half", "half-filter"])
            )
            if action in ("decline", "filter", "refuse-all"):
                twin.recover(a.framework_id, a.agent_id, a.scalars)
            if action in ("half", "half-filter"):
                twin.recover(a.framework_id, a.agent_id, tuple(x / 2 for x in a.scalars))
            until = now + 2.0 * (step % 3 + 1)
            if action == "filter":  # refused what was offered (a decline)
                twin.both("add_filter", a.framework_id, a.agent_id, until, a.scalars)
            elif action == "half-filter":  # refused the unused half (an accept's leftover)
                half = tuple(x / 2 for x in a.scalars)
                twin.both("add_filter", a.framework_id, a.agent_id, until, half)
            elif action == "refuse-all":
                twin.both("add_filter", a.framework_id, a.agent_id, until)
        event = data.draw(st.integers(0, 10))
        agent_ids = sorted(twin.totals)
        fids = sorted(twin.roles)
        if event == 0 and fids:
            twin.both("set_suppressed", data.draw(st.sampled_from(fids)), data.draw(st.booleans()))
        elif event == 1 and fids:
            twin.both("clear_filters", data.draw(st.sampled_from(fids)))
        elif event == 2 and agent_ids:
            aid = data.draw(st.sampled_from(agent_ids))
            twin.both("set_agent_draining", aid, data.draw(st.booleans()))
        elif event == 3 and len(fids) > 1:
            fid = data.draw(st.sampled_from(fids))
            twin.both("remove_framework", fid)
            del twin.roles[fid]
            twin.charges = {k: v for k, v in twin.charges.items() if k[0] != fid}
        elif event == 4 and len(agent_ids) > 1:
            aid = data.draw(st.sampled_from(agent_ids))
            twin.both("remove_agent", aid)
            del twin.totals[aid]
            del twin.reserved[aid]
            twin.charges = {k: v for k, v in twin.charges.items() if k[1] != aid}
        elif event == 5:
            role, tolerations, constraints = data.draw(frameworks())
            fid = f"f{len(fids) + step + 10}"
            twin.both("add_framework", fid, role, tolerations, constraints)
            twin.roles[fid] = role
        elif event == 6:
            total, attrs, taints, res = data.draw(agents())
            aid = f"a{len(agent_ids) + step + 10}"
            twin.both("add_agent", aid, total, attrs, taints, res)
            twin.totals[aid] = total
            twin.reserved[aid] = res
        elif event == 7:
            role = data.draw(st.sampled_from(ROLES))
            twin.both("set_weight", role, data.draw(st.sampled_from([0.5, 1.0, 3.0])))
        elif event == 8 and fids:
            # A demand met or added moves a framework between levels at any time.
            twin.both("set_priority", data.draw(st.sampled_from(fids)), data.draw(priorities))
        elif event == 9 and fids:
            # Gang cuts: rooms asked, slots charged, rooms asked again. The numpy allocator
            # keeps its fit test and slot order across the charges (fit_cache.py); the head of
            # the room a cut of k members takes from gives the cut the whole room gives.
            for _ in range(data.draw(st.integers(1, 3))):
                twin.compare_explain(now)
                twin.compare_cuts(now)
                fid = data.draw(st.sampled_from(fids))
                room = twin.fast.room(fid, now, ROOM_SHAPES[0])
                if not len(room.agent_ids):
                    break
                i = data.draw(st.integers(0, len(room.agent_ids) - 1))
                aid = str(room.agent_ids[i])
                part = data.draw(st.sampled_from([0.25, 0.5, 1.0]))
                take = tuple(float(x) * part for x in room.unreserved[i] + room.reserved[i])
                twin.both("allocate", fid, aid, take)
                c = twin.charges.setdefault((fid, aid), [0.0] * 4)
                twin.charges[(fid, aid)] = [x + y for x, y in zip(c, take, strict=True)]
            twin.compare_explain(now)
            twin.compare_cuts(now)
        elif event == 10 and agent_ids and fids:
            # Memory pressure (rules/pressure.py): an agent's condition and a framework's
            # wish for BestEffort work change at any time.
            aid = data.draw(st.sampled_from(agent_ids))
            twin.both("set_agent_pressure", aid, data.draw(st.booleans()))
            twin.both("set_besteffort", data.draw(st.sampled_from(fids)), data.draw(st.booleans()))
            # Demand fit (rules/demand_fit.py): a framework's unmet demands' shapes change as
            # demands are set and met; an agent none fits is not offered to it.
            shapes = data.draw(
                st.none()
                | st.lists(st.sampled_from(DEMAND_SHAPES), min_size=1, max_size=2).map(
                    lambda xs: tuple(sorted(set(xs)))
                )
            )
            twin.both("set_demand_shapes", data.draw(st.sampled_from(fids)), shapes)


@settings(max_examples=60, deadline=None)
@given(
    n_agents=st.integers(1, 12),
    cpus=st.integers(1, 8).map(float),
    guarantee=st.integers(1, 40).map(float),
    others=st.integers(1, 4),
    seed=st.integers(0, 1000),
)
def test_guarantee_met_when_resources_exist(
    n_agents: int, cpus: float, guarantee: float, others: int, seed: int
) -> None:
    for alloc in (ReferenceAllocator(), DrfAllocator()):
        a: Allocator = alloc
        for i in range(n_agents):
            a.add_agent(f"a{i}", (cpus, 1024.0, 0.0, 0.0), {}, [])
        for i in range(others):
            a.add_framework(f"greedy{i}", f"r{i}")
            a.allocate(f"greedy{i}", "a0", (0.0, 0.0, 0.0, 0.0))
        a.add_framework("prod", "prod")
        a.set_quota("prod", (guarantee, 0.0, 0.0, 0.0), None)
        plan = a.cycle(0.0, seed)
        got = sum(x.scalars[0] for x in plan if x.framework_id == "prod")
        assert got >= min(guarantee, cpus * n_agents)
