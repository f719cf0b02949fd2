"""Behaviour of the allocator, rule by rule (module docstring of master/allocator/reference.py),
for every implementation kind."""

from __future__ import annotations

import pytest

from corral.master.allocator import KINDS, Allocation, Allocator, make_allocator
from corral.master.allocator.interface import Scalars
from corral.master.allocator.numpy_allocator import DrfAllocator
from corral.master.allocator.options import (
    REASON_DRAINING,
    REASON_FILTER,
    REASON_GPU,
    REASON_HEADROOM,
    REASON_ORDER,
    REASON_SUPPRESSED,
    quota_reason,
    taint_reason,
)
from corral.placement import AttributeConstraint, ConstraintOp, Taint, TaintEffect, Toleration

SPOT = Taint("spot", "true", TaintEffect.NO_SCHEDULE)
SOFT = Taint("old", "yes", TaintEffect.PREFER_NO_SCHEDULE)
AGENT: Scalars = (4.0, 4096.0, 1000.0, 0.0)


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _alloc(kind: str) -> Allocator:
    return make_allocator(kind)


def _pairs(plan: list[Allocation]) -> list[tuple[str, str]]:
    return [(a.framework_id, a.agent_id) for a in plan]


def test_drf_paper_example(kind: str) -> None:
    """Ghodsi et al. 2011, section 4: <9 cpus, 18 GiB>, A's tasks <1, 4>, B's <3, 1>:
    A runs 3 tasks and B 2, both with dominant share 2/3."""
    alloc = make_allocator(kind, fairness_exclude=())
    alloc.add_agent("s1", (9.0, 18.0 * 1024, 0.0, 0.0), {}, [])
    demand = {"A": (1.0, 4096.0), "B": (3.0, 1024.0)}
    tasks = {"A": 0, "B": 0}
    for fid in demand:
        alloc.add_framework(fid, "*")
    for step in range(20):
        plan = alloc.cycle(now=float(step), seed=step)
        if not plan:
            break
        for offer in plan:
            cpus, mem = demand[offer.framework_id]
            o_cpus, o_mem, o_disk, o_gpus = offer.scalars
            if o_cpus >= cpus and o_mem >= mem:
                tasks[offer.framework_id] += 1
                rest = (o_cpus - cpus, o_mem - mem, o_disk, o_gpus)
                alloc.recover(offer.framework_id, offer.agent_id, rest)
            else:
                alloc.recover(offer.framework_id, offer.agent_id, offer.scalars)
                alloc.add_filter(offer.framework_id, offer.agent_id, 1e9)
    assert tasks == {"A": 3, "B": 2}
    for fid in demand:
        share = alloc.explain(fid, 100.0).details["dominant_share"]
        assert share == pytest.approx(2 / 3)


def test_whole_agent_goes_to_lowest_share_and_is_charged(kind: str) -> None:
    alloc = _alloc(kind)
    alloc.add_agent("a1", AGENT, {}, [])
    alloc.add_agent("a2", AGENT, {}, [])
    alloc.add_framework("f1", "*")
    alloc.add_framework("f2", "*")
    plan = alloc.cycle(0.0, seed=1)
    assert sorted(_pairs(plan)) == [("f1", "a1"), ("f2", "a2")] or sorted(_pairs(plan)) == [
        ("f1", "a2"),
        ("f2", "a1"),
    ]
    assert all(a.scalars == AGENT for a in plan)
    assert alloc.cycle(1.0, seed=2) == []  # everything is charged until recovered
    alloc.recover(plan[0].framework_id, plan[0].agent_id, AGENT)
    again = alloc.cycle(2.0, seed=3)
    assert [a.agent_id for a in again] == [plan[0].agent_id]


def test_same_seed_same_plan(kind: str) -> None:
    plans = []
    for _ in range(2):
        alloc = _alloc(kind)
        for i in range(20):
            alloc.add_agent(f"a{i}", AGENT, {}, [])
        for i in range(5):
            alloc.add_framework(f"f{i}", "*")
        plans.append(alloc.cycle(0.0, seed=42))
    assert plans[0] == plans[1]
    assert len(plans[0]) == 20


def test_refuse_filter_expires_at_its_time(kind: str) -> None:
    alloc = _alloc(kind)
    alloc.add_agent("a1", AGENT, {}, [])
    alloc.add_framework("f1", "*")
    alloc.add_filter("f1", "a1", expires_at=10.0)
    assert alloc.cycle(9.999, seed=0) == []
    assert alloc.explain("f1", 9.999).reasons[REASON_FILTER] == 1
    assert _pairs(alloc.cycle(10.0, seed=0)) == [("f1", "a1")]


def test_filtered_framework_lets_the_next_one_have_the_agent(kind: str) -> None:
    alloc = _alloc(kind)
    alloc.add_agent("a1", AGENT, {}, [])
    alloc.add_framework("f1", "*")
    alloc.add_framework("f2", "*")
    alloc.add_filter("f1", "a1", 100.0)
    assert _pairs(alloc.cycle(0.0, seed=0)) == [("f2", "a1")]


def test_revive_clears_filters(kind: str) -> None:
    alloc = _alloc(kind)
    alloc.add_agent("a1", AGENT, {}, [])
    alloc.add_framework("f1", "*")
    alloc.add_filter("f1", "a1", 100.0)
    alloc.clear_filters("f1")
    assert _pairs(alloc.cycle(0.0, seed=0)) == [("f1", "a1")]


def test_suppressed_gets_nothing(kind: str) -> None:
    alloc = _alloc(kind)
    alloc.add_agent("a1", AGENT, {}, [])
    alloc.add_framework("f1", "*")
    alloc.set_suppressed("f1", True)
    assert alloc.cycle(0.0, seed=0) == []
    assert alloc.explain("f1", 0.0).reasons[REASON_SUPPRESSED] == 1
    alloc.set_suppressed("f1", False)
    assert _pairs(alloc.cycle(0.0, seed=0)) == [("f1", "a1")]


@pytest.mark.parametrize(
    ("tolerations", "offered"),
    [
        ((), False),
        ((Toleration("spot", "true"),), True),
        ((Toleration("spot", exists=True),), True),
        ((Toleration("spot", "false"),), False),
        ((Toleration("spot", exists=True, effect=TaintEffect.PREFER_NO_SCHEDULE),), False),
    ],
)
def test_no_schedule_taint_needs_a_toleration(
    kind: str, tolerations: tuple[Toleration, ...], offered: bool
) -> None:
    alloc = _alloc(kind)
    alloc.add_agent("a1", AGENT, {}, [SPOT])
    alloc.add_framework("f1", "*", tolerations=tolerations)
    assert bool(alloc.cycle(0.0, seed=0)) is offered
    if not offered:
        assert alloc.explain("f1", 0.0).reasons[taint_reason(SPOT)] == 1


def test_prefer_no_schedule_only_orders(kind: str) -> None:
    alloc = _alloc(kind)
    alloc.add_agent("a1", AGENT, {}, [SOFT])
    alloc.add_framework("intolerant", "*")
    alloc.add_framework("tolerant", "*", tolerations=[Toleration("old", exists=True)])
    assert _pairs(alloc.cycle(0.0, seed=0)) == [("tolerant", "a1")]
    alloc2 = _alloc(kind)
    alloc2.add_agent("a1", AGENT, {}, [SOFT])
    alloc2.add_framework("intolerant", "*")
    assert _pairs(alloc2.cycle(0.0, seed=0)) == [("intolerant", "a1")]


@pytest.mark.parametrize(
    ("constraint", "offered"),
    [
        (AttributeConstraint("zone", ConstraintOp.EQUALS, ("a",)), True),
        (AttributeConstraint("zone", ConstraintOp.EQUALS, ("b",)), False),
        (AttributeConstraint("zone", ConstraintOp.IN, ("b", "a")), True),
        (AttributeConstraint("rack", ConstraintOp.EXISTS), False),
        (AttributeConstraint("zone", ConstraintOp.EXISTS), True),
    ],
)
def test_attribute_constraints(kind: str, constraint: AttributeConstraint, offered: bool) -> None:
    alloc = _alloc(kind)
    alloc.add_agent("a1", AGENT, {"zone": "a"}, [])
    alloc.add_framework("f1", "*", constraints=[constraint])
    assert bool(alloc.cycle(0.0, seed=0)) is offered


def test_draining_agent_is_not_offered(kind: str) -> None:
    alloc = _alloc(kind)
    alloc.add_agent("a1", AGENT, {}, [])
    alloc.add_framework("f1", "*")
    alloc.set_agent_draining("a1", True)
    assert alloc.cycle(0.0, seed=0) == []
    assert alloc.explain("f1", 0.0).reasons[REASON_DRAINING] == 1


def test_reserved_resources_only_to_their_role(kind: str) -> None:
    alloc = _alloc(kind)
    alloc.add_agent("a1", AGENT, {}, [], reservations={"db": (2.0, 1024.0, 0.0, 0.0)})
    alloc.add_framework("web", "web")
    plan = alloc.cycle(0.0, seed=0)
    assert [(a.framework_id, a.scalars) for a in plan] == [("web", (2.0, 3072.0, 1000.0, 0.0))]
    alloc.add_framework("db", "db")
    plan = alloc.cycle(1.0, seed=0)
    assert [(a.framework_id, a.scalars) for a in plan] == [("db", (2.0, 1024.0, 0.0, 0.0))]


def test_quota_limit_clips_offers_and_is_never_exceeded(kind: str) -> None:
    alloc = _alloc(kind)
    for i in range(3):
        alloc.add_agent(f"a{i}", AGENT, {}, [])
    alloc.add_framework("f1", "capped")
    alloc.set_quota("capped", None, (6.0, 8192.0, 1e9, 0.0))
    plan = alloc.cycle(0.0, seed=0)
    assert sum(a.scalars[0] for a in plan) == 6.0
    assert sorted(a.scalars[0] for a in plan) == [2.0, 4.0]
    assert alloc.cycle(1.0, seed=1) == []
    assert alloc.explain("f1", 1.0).reasons[quota_reason("cpus")] == 3


def test_a_roles_reservations_count_toward_its_quota(kind: str) -> None:
    """As in Mesos, a role's quota consumption is its allocation plus its unallocated
    reservations: a role limited to 4 cpus with 3 reserved is offered its 3 reserved cpus and
    1 unreserved cpu more, whichever agent the walk reaches first (before, an unreserved agent
    walked first took all 4 and the reservation was clipped to nothing)."""
    walked_open_first = False
    for seed in range(8):
        alloc = _alloc(kind)
        alloc.add_agent("reserved", AGENT, {}, [], reservations={"db": (3.0, 1024.0, 0.0, 0.0)})
        alloc.add_agent("open", AGENT, {}, [])
        alloc.add_framework("db", "db")
        alloc.set_quota("db", None, (4.0, 1e9, 1e9, 1e9))
        plan = alloc.cycle(0.0, seed=seed)
        walked_open_first |= plan[0].agent_id == "open"
        offered = {a.agent_id: a.scalars[0] for a in plan}
        assert offered["reserved"] >= 3.0, f"seed {seed}: the reservation was clipped: {offered}"
        assert sum(offered.values()) == 4.0, f"seed {seed}: limit not kept: {offered}"
        assert alloc.explain("db", 0.0).reasons[quota_reason("cpus")] == 2
    assert walked_open_first, "no seed walked the unreserved agent first; the test proves less"


def test_min_allocatable_stops_dust(kind: str) -> None:
    alloc = _alloc(kind)
    alloc.add_agent("a1", (0.005, 16.0, 100.0, 0.0), {}, [])
    alloc.add_framework("f1", "*")
    assert alloc.cycle(0.0, seed=0) == []
    custom = make_allocator(kind, min_allocatable={"disk": 50.0})
    custom.add_agent("a1", (0.005, 16.0, 100.0, 0.0), {}, [])
    custom.add_framework("f1", "*")
    assert _pairs(custom.cycle(0.0, seed=0)) == [("f1", "a1")]


def test_min_allocatable_alternatives_need_all_of_one(kind: str) -> None:
    """Mesos' --min_allocatable_resources: 'cpus:1;mem:128|gpus:1' offers an agent with a cpu
    and 128 MiB, or with a GPU, but not one with a cpu and too little memory."""
    alloc = make_allocator(
        kind, min_allocatable="cpus:1;mem:128|gpus:1", filter_gpu_resources=False
    )
    alloc.add_agent("cpu-only", (2.0, 64.0, 0.0, 0.0), {}, [])
    alloc.add_agent("gpu", (0.0, 0.0, 0.0, 1.0), {}, [])
    alloc.add_agent("both", (1.0, 128.0, 0.0, 0.0), {}, [])
    alloc.add_framework("f1", "*")
    assert sorted(a.agent_id for a in alloc.cycle(0.0, seed=0)) == ["both", "gpu"]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("cpus:x", "'x' is not a number"),
        ("cpus", "is not name:value"),
        ("cpus:1|", "names no resource"),
        ("bogus:1", "unknown resource 'bogus'"),
        ("cpus:-1", "must be a positive number"),
    ],
)
def test_bad_min_allocatable_is_refused_with_the_reason(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        make_allocator("numpy", min_allocatable=text)


def test_guarantee_served_first_and_headroom_kept(kind: str) -> None:
    alloc = _alloc(kind)
    for i in range(4):
        alloc.add_agent(f"a{i}", AGENT, {}, [])
    alloc.add_framework("other", "other")
    alloc.add_framework("prod", "prod")
    alloc.set_quota("prod", (8.0, 0.0, 0.0, 0.0), None)
    alloc.set_suppressed("prod", True)  # prod does not want offers now...
    plan = alloc.cycle(0.0, seed=0)
    # ...but 8 cpus of headroom stay unoffered for it: other gets 2 of the 4 agents.
    assert sum(a.scalars[0] for a in plan) == 8.0
    assert alloc.explain("other", 0.0).reasons[REASON_HEADROOM] == 4
    alloc.set_suppressed("prod", False)
    plan = alloc.cycle(1.0, seed=0)
    assert {a.framework_id for a in plan} == {"prod"}
    assert sum(a.scalars[0] for a in plan) == 8.0


def test_weights_order_roles(kind: str) -> None:
    alloc = _alloc(kind)
    for i in range(4):
        alloc.add_agent(f"a{i}", AGENT, {}, [])
    alloc.add_framework("light", "light")
    alloc.add_framework("heavy", "heavy")
    alloc.set_weight("heavy", 3.0)
    plan = alloc.cycle(0.0, seed=0)
    counts = {"light": 0, "heavy": 0}
    for a in plan:
        counts[a.framework_id] += 1
    assert counts == {"light": 1, "heavy": 3}


def test_explain_counts_frameworks_ahead(kind: str) -> None:
    alloc = _alloc(kind)
    alloc.add_agent("a1", AGENT, {}, [])
    for i in range(3):
        alloc.add_framework(f"f{i}", "*")
    alloc.allocate("f0", "a1", (1.0, 0.0, 0.0, 0.0))
    explanation = alloc.explain("f0", 0.0)
    assert explanation.reasons[REASON_ORDER] == 2
    assert explanation.details["drf_position"] == 2


def test_higher_priority_is_offered_first_across_roles_and_shares(kind: str) -> None:
    alloc = _alloc(kind)
    for i in range(3):
        alloc.add_agent(f"a{i}", AGENT, {}, [])
    alloc.add_framework("batch", "batch")
    alloc.add_framework("serving", "serving")
    # Serving already holds more than batch: by share alone batch would go first everywhere.
    alloc.allocate("serving", "a0", (1.0, 0.0, 0.0, 0.0))
    alloc.set_priority("serving", 1000)
    alloc.set_priority("batch", -100)
    plan = alloc.cycle(0.0, seed=0)
    # Serving's pass comes first and is offered every agent whole: batch's pass finds nothing.
    assert {a.framework_id for a in plan} == {"serving"}
    assert len(plan) == 3
    explanation = alloc.explain("batch", 0.0)
    assert explanation.reasons[REASON_ORDER] == 1  # serving is ahead, though its share is larger
    assert explanation.details["priority"] == -100


def test_a_lower_level_gets_what_the_higher_cannot_take(kind: str) -> None:
    alloc = _alloc(kind)
    alloc.add_agent("a0", AGENT, {}, [SPOT])
    alloc.add_agent("a1", AGENT, {}, [])
    alloc.add_framework("high", "*")
    alloc.add_framework("alow", "*", (Toleration("spot", "true"),))  # first by id
    alloc.set_priority("high", 10)
    plan = alloc.cycle(0.0, seed=0)
    assert sorted(_pairs(plan)) == [("alow", "a0"), ("high", "a1")]
    alloc.set_priority("high", 0)
    assert alloc.explain("high", 0.0).details["priority"] == 0


@pytest.mark.parametrize("bad", [True, 1.5, "1", 2**63])
def test_bad_priority_is_a_value_error(kind: str, bad: object) -> None:
    alloc = _alloc(kind)
    alloc.add_framework("f1", "*")
    with pytest.raises(ValueError):
        alloc.set_priority("f1", bad)  # type: ignore[arg-type]


def test_remove_framework_returns_its_charges(kind: str) -> None:
    alloc = _alloc(kind)
    alloc.add_agent("a1", AGENT, {}, [])
    alloc.add_framework("f1", "*")
    alloc.add_framework("f2", "*")
    assert _pairs(alloc.cycle(0.0, seed=0)) == [("f1", "a1")]
    alloc.remove_framework("f1")
    assert _pairs(alloc.cycle(1.0, seed=0)) == [("f2", "a1")]


def test_a_framework_in_a_removed_framework_s_row_has_none_of_its_filters(kind: str) -> None:
    alloc = _alloc(kind)
    alloc.add_agent("a1", AGENT, {}, [])
    alloc.add_framework("f1", "*")
    alloc.add_filter("f1", "a1", 100.0)
    assert alloc.held_back("f1", 0.0)
    alloc.remove_framework("f1")
    alloc.add_framework("f2", "*")  # the numpy allocator gives it f1's row
    assert alloc.held_back("f2", 0.0) == {}
    assert _pairs(alloc.cycle(0.0, seed=0)) == [("f2", "a1")]


def test_remove_agent_and_readd(kind: str) -> None:
    alloc = _alloc(kind)
    alloc.add_agent("a1", AGENT, {}, [])
    alloc.add_framework("f1", "*")
    alloc.add_filter("f1", "a1", 100.0)
    alloc.remove_agent("a1")
    alloc.add_agent("a1", AGENT, {}, [])
    assert _pairs(alloc.cycle(0.0, seed=0)) == [("f1", "a1")]


@pytest.mark.parametrize(
    "call",
    [
        lambda a: a.add_agent("a1", AGENT, {}, []),
        lambda a: a.add_agent("a2", (-1.0, 0.0, 0.0, 0.0), {}, []),
        lambda a: a.add_agent("a3", (float("nan"), 0.0, 0.0, 0.0), {}, []),
        lambda a: a.add_agent("a4", AGENT, {}, [], reservations={"r": (5.0, 0.0, 0.0, 0.0)}),
        lambda a: a.set_weight("r", 0.0),
        lambda a: a.set_quota("r", (2.0, 0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0)),
        lambda a: a.add_framework("f1", "*"),
    ],
)
def test_bad_input_is_a_value_error(kind: str, call: object) -> None:
    alloc = _alloc(kind)
    alloc.add_agent("a1", AGENT, {}, [])
    alloc.add_framework("f1", "*")
    with pytest.raises(ValueError):
        call(alloc)  # type: ignore[operator]


def test_unknown_ids_are_key_errors(kind: str) -> None:
    alloc = _alloc(kind)
    with pytest.raises(KeyError):
        alloc.remove_agent("nope")
    with pytest.raises(KeyError):
        alloc.explain("nope", 0.0)
    alloc.recover("nope", "nope", AGENT)  # a late recovery is harmless


def test_unknown_kind() -> None:
    with pytest.raises(ValueError, match="unknown allocator kind"):
        make_allocator("magic")


@pytest.mark.parametrize("role_split", [False, True], ids=["one-role", "two-roles"])
def test_equal_shares_take_turns_then_break_ties_by_id(kind: str, role_split: bool) -> None:
    """Mesos' DRF sorter: at equal shares, fewer allocations received first, then the name.
    Two frameworks declining every offer with no filter are offered the agent in turn, not
    the older one every time; at equal counts the smaller id goes first."""
    alloc = _alloc(kind)
    alloc.add_agent("a1", AGENT, {}, [])
    alloc.add_framework("zed", "r2" if role_split else "*")  # registered first, larger id
    alloc.add_framework("amy", "r1" if role_split else "*")
    served = []
    for step in range(6):
        (offer,) = alloc.cycle(float(step), seed=step)
        served.append(offer.framework_id)
        alloc.recover(offer.framework_id, offer.agent_id, offer.scalars)
    assert served == ["amy", "zed"] * 3
    # A charge found at re-registration counts as an allocation received too.
    alloc.allocate("amy", "a1", (0.0, 0.0, 0.0, 0.0))
    alloc.allocate("amy", "a1", (0.0, 0.0, 0.0, 0.0))
    (offer,) = alloc.cycle(10.0, seed=10)
    assert offer.framework_id == "zed"


def test_gpu_agents_go_only_to_gpu_capable_frameworks(kind: str) -> None:
    """Mesos' --filter_gpu_resources: a CPU-only framework is not offered an agent with GPUs,
    however low its share; a GPU_RESOURCES framework is. The option turns it off."""
    alloc = _alloc(kind)
    alloc.add_agent("gpu", (8.0, 4096.0, 0.0, 2.0), {}, [])
    alloc.add_agent("cpu", AGENT, {}, [])
    alloc.add_framework("cpu-only", "*")
    assert _pairs(alloc.cycle(0.0, seed=0)) == [("cpu-only", "cpu")]
    assert alloc.explain("cpu-only", 0.0).reasons[REASON_GPU] == 1
    alloc.add_framework("trainer", "*", gpu_resources=True)
    assert _pairs(alloc.cycle(1.0, seed=0)) == [("trainer", "gpu")]
    unfiltered = make_allocator(kind, filter_gpu_resources=False)
    unfiltered.add_agent("gpu", (8.0, 4096.0, 0.0, 2.0), {}, [])
    unfiltered.add_framework("cpu-only", "*")
    assert _pairs(unfiltered.cycle(0.0, seed=0)) == [("cpu-only", "gpu")]


def test_a_refuse_filter_blocks_only_what_was_refused(kind: str) -> None:
    """Mesos' RefusedOfferFilter: a framework that kept 3 of 4 cpus and refused the last one is
    not offered that one cpu again, but is offered the agent at once when its own task ends
    and 4 cpus are free, long before the filter would expire."""
    alloc = _alloc(kind)
    alloc.add_agent("a1", AGENT, {}, [])
    alloc.add_framework("f1", "*")
    (offer,) = alloc.cycle(0.0, seed=0)
    left = (1.0, 1024.0, 250.0, 0.0)
    alloc.recover("f1", "a1", left)
    alloc.add_filter("f1", "a1", 1000.0, refused=left)
    assert alloc.cycle(1.0, seed=1) == [], "the refused cpu was offered again"
    assert alloc.explain("f1", 1.0).reasons[REASON_FILTER] == 1
    used = tuple(x - y for x, y in zip(offer.scalars, left, strict=True))
    alloc.recover("f1", "a1", used)  # the task ended: more is free than was refused
    (again,) = alloc.cycle(2.0, seed=2)
    assert (again.framework_id, again.scalars) == ("f1", AGENT)
    assert REASON_FILTER not in alloc.explain("f1", 2.0).reasons


def test_a_filter_without_an_amount_refuses_everything_until_it_expires(kind: str) -> None:
    alloc = _alloc(kind)
    alloc.add_agent("a1", AGENT, {}, [])
    alloc.add_framework("f1", "*")
    (offer,) = alloc.cycle(0.0, seed=0)
    alloc.recover("f1", "a1", offer.scalars)
    alloc.add_filter("f1", "a1", 10.0)
    alloc.add_framework("f2", "*")
    (other,) = alloc.cycle(1.0, seed=1)
    alloc.recover("f2", "a1", other.scalars)  # resources come back: f1 stays filtered
    assert _pairs(alloc.cycle(2.0, seed=2)) == [("f2", "a1")]


def _recovered_cluster(alloc: Allocator, reserve: bool) -> list[list[tuple[str, str]]]:
    """Frameworks in first, then 150 agents (more than the arrays start with), as a master
    recovering from its registry adds them; the plans of three cycles with a decline between."""
    if reserve:
        alloc.reserve(150, 3)
    for f in range(3):
        alloc.add_framework(f"f{f}", "*")
    for a in range(150):
        alloc.add_agent(f"a{a}", (1.0 + a % 3, 1024.0, 100.0, 0.0), {}, [])
    plans = []
    for step in range(3):
        plan = alloc.cycle(now=float(step), seed=step)
        plans.append(sorted(_pairs(plan)))
        for offer in plan:
            alloc.recover(offer.framework_id, offer.agent_id, offer.scalars)
            if offer.framework_id == "f0":
                alloc.add_filter(offer.framework_id, offer.agent_id, 1e9)
    return plans


def test_reserving_room_changes_no_decision(kind: str) -> None:
    assert _recovered_cluster(_alloc(kind), reserve=True) == _recovered_cluster(
        _alloc(kind), reserve=False
    )


def test_reserved_rows_are_not_reallocated_as_agents_arrive() -> None:
    """A restarted master's frameworks are in before its agents re-register: each doubling
    of the agent rows would copy the filter and placement matrices at their full width."""
    alloc = make_allocator("numpy")
    assert isinstance(alloc, DrfAllocator)
    alloc.reserve(1000, 40)
    for f in range(40):
        alloc.add_framework(f"f{f}", "*")
    kept = (alloc.filters.until, alloc.placement.ok, alloc.total, alloc.alloc)
    for a in range(1000):
        alloc.add_agent(f"a{a}", AGENT, {}, [])
    assert all(
        now is before
        for now, before in zip(
            (alloc.filters.until, alloc.placement.ok, alloc.total, alloc.alloc), kept, strict=True
        )
    ), "an array grew while fewer agents and frameworks arrived than were reserved"
    assert alloc.filters.until.shape[0] == 1000, "the rows were not made for what was reserved"


def test_reserved_room_takes_memory_only_as_agents_arrive() -> None:
    """A leader taking over reserves rows for every agent of its registry in its ``Recover``,
    with the event loop waiting: the filter expiries and masks of 100,000 agents by 1,024
    frameworks are ~1.2 GB, and writing them whole held a loaded leader seconds. Zero-filled
    room is the system's zero pages until a row is written."""
    import psutil

    alloc = make_allocator("numpy")
    assert isinstance(alloc, DrfAllocator)
    process = psutil.Process()
    before = process.memory_info().rss
    alloc.reserve(100_000, 1024)
    grown = process.memory_info().rss - before
    assert alloc.filters.until.nbytes == 100_000 * 1024 * 8
    assert grown < 64 * 2**20, f"reserving wrote {grown / 2**20:.0f} MiB of the room made"
    for f in range(3):
        alloc.add_framework(f"f{f}", "*")
    alloc.add_agent("a0", AGENT, {}, [])
    alloc.add_filter("f1", "a0", 100.0)
    offered = {a.framework_id for a in alloc.cycle(now=1.0, seed=1)}
    assert offered and "f1" not in offered, "the filter did not hold on a reserved row"
