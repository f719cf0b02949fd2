"""The SDK's placement helpers (frameworks/sdk/placement.py), table by table: wire constraints
and tolerations, topology spread's max_skew, Marathon's constraints, binpack and spread
orders, and the Placer that places many tasks over one batch of offers."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from corral.frameworks import sdk
from corral.v1.common_pb2 import (
    ConstraintOperator,
    Range,
    Resources,
    Taint,
    TaintEffect,
    TolerationOperator,
    WhenUnsatisfiable,
)


def offer(name: str, cpus: float = 4, mem: float = 1024, ports: int = 0, **attrs: str) -> sdk.Offer:
    res = Resources(cpus=cpus, mem=mem)
    if ports:
        res.ports.append(Range(begin=31000, end=31000 + ports - 1))
    return sdk.Offer(
        id=f"o-{name}", agent_id=f"a-{name}", hostname=name, resources=res, attributes=attrs
    )


def shape(cpus: float = 1, mem: float = 64) -> sdk.TaskInfo:
    return sdk.task("t", "true", cpus=cpus, mem=mem)


# -- constraints and tolerations ------------------------------------------------------------


@pytest.mark.parametrize(
    ("constraint", "attributes", "matches"),
    [
        (sdk.Constraint.equals("zone", "a"), {"zone": "a"}, True),
        (sdk.Constraint.equals("zone", "a"), {"zone": "b"}, False),
        (sdk.Constraint.equals("zone", "a"), {}, False),
        (sdk.Constraint.one_of("zone", "a", "b"), {"zone": "b"}, True),
        (sdk.Constraint.one_of("zone", "a", "b"), {"zone": "c"}, False),
        (sdk.Constraint.exists("gpu"), {"gpu": ""}, True),
        (sdk.Constraint.exists("gpu"), {"zone": "a"}, False),
    ],
)
def test_constraint_matches(
    constraint: sdk.Constraint, attributes: dict[str, str], matches: bool
) -> None:
    assert constraint.matches(attributes) is matches


def test_constraints_build_the_wire_message() -> None:
    pb = sdk.Constraint.one_of("zone", "a", "b").to_pb()
    assert (pb.attribute, pb.operator, list(pb.values)) == (
        "zone",
        ConstraintOperator.CONSTRAINT_OPERATOR_IN,
        ["a", "b"],
    )
    assert (
        sdk.Constraint.exists("gpu").to_pb().operator
        == ConstraintOperator.CONSTRAINT_OPERATOR_EXISTS
    )


@pytest.mark.parametrize(
    ("toleration", "taint", "tolerated"),
    [
        (sdk.Toleration.equal("spot", "true"), Taint(key="spot", value="true", effect=1), True),
        (sdk.Toleration.equal("spot", "true"), Taint(key="spot", value="no", effect=1), False),
        (sdk.Toleration.exists("spot"), Taint(key="spot", value="no", effect=3), True),
        (sdk.Toleration.exists("spot", "NoSchedule"), Taint(key="spot", effect=3), False),
        (sdk.Toleration.exists("gpu"), Taint(key="spot", effect=1), False),
    ],
)
def test_toleration_tolerates(toleration: sdk.Toleration, taint: Taint, tolerated: bool) -> None:
    assert toleration.tolerates(taint) is tolerated


def test_tolerations_build_the_wire_message() -> None:
    pb = sdk.Toleration.exists("spot", "NoExecute").to_pb()
    assert pb.operator == TolerationOperator.TOLERATION_OPERATOR_EXISTS
    assert pb.effect == TaintEffect.TAINT_EFFECT_NO_EXECUTE
    pb = sdk.Toleration.equal("spot", "true").to_pb()
    assert (pb.operator, pb.value, pb.effect) == (
        TolerationOperator.TOLERATION_OPERATOR_EQUAL,
        "true",
        TaintEffect.TAINT_EFFECT_UNSPECIFIED,
    )


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: sdk.Constraint("zone", "equals"), "needs a value"),
        (lambda: sdk.Constraint("", "exists"), "needs an attribute"),
        (lambda: sdk.Toleration.exists("spot", "Sometimes"), "effect must be one of"),  # type: ignore[arg-type]
        (lambda: sdk.Spread("zone", max_skew=0), "max_skew must be an int >= 1"),
        (lambda: sdk.Spread("zone", when_unsatisfiable="Maybe"), "DoNotSchedule or"),  # type: ignore[arg-type]
        (lambda: sdk.Rule("zone", "MAX_PER"), "needs a number"),
        (lambda: sdk.Rule("zone", "GROUP_BY", "x"), "whole number"),
        (lambda: sdk.Rule("zone", "NEAR"), "operator must be one of"),  # type: ignore[arg-type]
        (lambda: sdk.Rule("zone", "LIKE", "("), "bad regex"),
        (lambda: sdk.Rule.parse(["zone"]), "[field, operator]"),
        (lambda: sdk.Demand("web", 1, cpus=1, mem=1, spread="zone"), "spread must be"),  # type: ignore[arg-type]
    ],
)
def test_bad_placement_rules_are_refused_at_once(build: object, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("(", r"\(")):
        build()  # type: ignore[operator]


def test_demand_carries_constraints_tolerations_and_spread_to_the_wire() -> None:
    d = sdk.Demand(
        "web",
        6,
        cpus=1,
        mem=64,
        constraints=[sdk.Constraint.equals("zone", "a")],
        tolerations=[sdk.Toleration.exists("spot")],
        spread=sdk.Spread("zone", 2, "ScheduleAnyway"),
    )
    pb = d.to_pb()
    assert [c.attribute for c in pb.constraints] == ["zone"]
    assert [t.key for t in pb.tolerations] == ["spot"]
    assert (pb.spread.topology_key, pb.spread.max_skew, pb.spread.when_unsatisfiable) == (
        "zone",
        2,
        WhenUnsatisfiable.WHEN_UNSATISFIABLE_SCHEDULE_ANYWAY,
    )
    assert not sdk.Demand("web", 1, cpus=1, mem=1).to_pb().HasField("spread")
    hash(d)  # still a value


# -- spread ---------------------------------------------------------------------------------

ZONES = [offer("a1", zone="a"), offer("b1", zone="b"), offer("c1", zone="c")]


@pytest.mark.parametrize(
    ("counts", "known", "max_skew", "when", "expected"),
    [
        ({}, (), 1, "DoNotSchedule", ["a1", "b1", "c1"]),
        ({"a": 1}, (), 1, "DoNotSchedule", ["b1", "c1"]),  # a would be 2 against 0
        ({"a": 1, "b": 1}, (), 1, "DoNotSchedule", ["c1"]),
        ({"a": 1, "b": 1, "c": 1}, (), 1, "DoNotSchedule", ["a1", "b1", "c1"]),
        ({"a": 1}, (), 2, "DoNotSchedule", ["b1", "c1", "a1"]),  # emptiest first
        ({"a": 2, "b": 1}, (), 1, "ScheduleAnyway", ["c1", "b1", "a1"]),  # all, emptiest first
        # Zone d has no agent in this batch but is known: it holds the others at 0 + max_skew.
        ({"a": 1, "b": 1, "c": 1}, ("d",), 1, "DoNotSchedule", []),
        ({"a": 1, "b": 1, "c": 1}, ("d",), 2, "DoNotSchedule", ["a1", "b1", "c1"]),
        # Live tasks in a zone not offered count too.
        ({"d": 3}, (), 1, "DoNotSchedule", ["a1", "b1", "c1"]),
    ],
)
def test_spread_candidates(
    counts: dict[str, int], known: tuple[str, ...], max_skew: int, when: str, expected: list[str]
) -> None:
    spread = sdk.Spread("zone", max_skew, when)  # type: ignore[arg-type]
    picks = sdk.spread_candidates(spread, counts, ZONES, known)
    assert [ZONES[i].hostname for i in picks] == expected


def test_spread_by_hostname_and_offers_without_the_key() -> None:
    offers = [offer("h1"), offer("h2", zone="a")]
    assert sdk.spread_candidates(sdk.Spread("hostname"), {"h1": 1}, offers) == [1]
    # No zone on h1: never under DoNotSchedule, last under ScheduleAnyway.
    assert sdk.spread_candidates(sdk.Spread("zone"), {}, offers) == [1]
    assert sdk.spread_candidates(sdk.Spread("zone", 1, "ScheduleAnyway"), {"a": 5}, offers) == [
        1,
        0,
    ]


# -- Marathon constraints -------------------------------------------------------------------


def at(**attrs: str) -> dict[str, str]:
    return attrs


@pytest.mark.parametrize(
    ("rule", "candidate", "placed", "known", "allowed"),
    [
        (["hostname", "UNIQUE"], at(hostname="h1"), [], (), True),
        (["hostname", "UNIQUE"], at(hostname="h1"), [at(hostname="h1")], (), False),
        (["hostname", "UNIQUE"], at(hostname="h2"), [at(hostname="h1")], (), True),
        (["zone", "MAX_PER", "2"], at(zone="a"), [at(zone="a")], (), True),
        (["zone", "MAX_PER", "2"], at(zone="a"), [at(zone="a"), at(zone="a")], (), False),
        (["zone", "CLUSTER", "a"], at(zone="a"), [], (), True),
        (["zone", "CLUSTER", "a"], at(zone="b"), [], (), False),
        (["zone", "CLUSTER"], at(zone="b"), [], (), True),  # the first task picks the value
        (["zone", "CLUSTER"], at(zone="b"), [at(zone="a")], (), False),
        (["zone", "GROUP_BY"], at(zone="a"), [at(zone="a")], ("b",), False),  # b has fewer
        (["zone", "GROUP_BY"], at(zone="b"), [at(zone="a")], ("b",), True),
        (["zone", "GROUP_BY"], at(zone="a"), [at(zone="a"), at(zone="b")], (), True),
        # 3 zones expected, only a seen: the unseen ones are empty, so a waits.
        (["zone", "GROUP_BY", "3"], at(zone="a"), [at(zone="a")], (), False),
        (["zone", "GROUP_BY", "3"], at(zone="a"), [], (), True),
        (["rack", "LIKE", "r[12]"], at(rack="r2"), [], (), True),
        (["rack", "LIKE", "r[12]"], at(rack="r3"), [], (), False),
        (["rack", "UNLIKE", "r[12]"], at(rack="r3"), [], (), True),
        (["rack", "UNLIKE", "r[12]"], at(), [], (), True),
        (["rack", "UNIQUE"], at(zone="a"), [], (), False),  # no such attribute: refused
        (["zone", "max_per", 1], at(zone="a"), [], (), True),  # case and numbers as JSON has them
    ],
)
def test_marathon_rules(
    rule: list[object],
    candidate: dict[str, str],
    placed: list[dict[str, str]],
    known: tuple[str, ...],
    allowed: bool,
) -> None:
    assert sdk.Rule.parse(rule).allows(candidate, placed, known) is allowed


# -- orderings ------------------------------------------------------------------------------


def test_binpack_and_spread_orders() -> None:
    rooms = [
        Resources(cpus=4, mem=1024),
        Resources(cpus=1, mem=1024),
        Resources(cpus=0.5, mem=1024),
        Resources(cpus=2, mem=64),
    ]
    # Room 2 fits no 1-cpu task; room 3 fits one by cpus but only one by mem either way.
    assert sdk.binpack_order(rooms, shape(1, 64)) == [1, 3, 0]
    assert sdk.spread_order(rooms, shape(1, 64)) == [0, 3, 1]
    assert sdk.binpack_order([], shape()) == []


# -- the Placer -----------------------------------------------------------------------------


def test_placer_spreads_six_over_three_zones_two_each() -> None:
    offers = [
        offer("a1", 8, zone="a"),
        offer("a2", 8, zone="a"),
        offer("b1", 8, zone="b"),
        offer("c1", 8, zone="c"),
    ]
    placer = sdk.Placer(offers, spread=sdk.Spread("zone"))
    placed = [placer.place(shape()) for _ in range(6)]
    assert all(p is not None for p in placed)
    assert Counter(p.attributes["zone"] for p in placed if p) == {"a": 2, "b": 2, "c": 2}
    assert {o.hostname for o in placer.unused()} <= {"a1", "a2"}


def test_placer_leaves_pending_what_would_break_max_skew() -> None:
    # Zone c holds one task only: with DoNotSchedule, 2/2/1 and the sixth stays pending.
    offers = [offer("a1", 8, zone="a"), offer("b1", 8, zone="b"), offer("c1", 1, zone="c")]
    placer = sdk.Placer(offers, spread=sdk.Spread("zone"))
    placed = [placer.place(shape()) for _ in range(6)]
    assert placed[-1] is None
    assert Counter(p.attributes["zone"] for p in placed if p) == {"a": 2, "b": 2, "c": 1}
    # ScheduleAnyway places all six, still as even as it can.
    anyway = sdk.Placer(offers, spread=sdk.Spread("zone", 1, "ScheduleAnyway"))
    assert all(anyway.place(shape()) for _ in range(6))
    assert sorted(Counter(p["zone"] for p in anyway.placed).values()) == [1, 2, 3]


def test_placer_counts_live_tasks_and_known_zones() -> None:
    offers = [offer("a1", zone="a"), offer("b1", zone="b")]
    placer = sdk.Placer(
        offers,
        placed=[at(zone="a", hostname="x")],
        spread=sdk.Spread("zone"),
        known={"zone": ["c"]},
    )
    assert placer.place(shape()) is offers[1]  # b: a has one already
    assert placer.place(shape()) is None  # a or b would be 2 against c's 0


def test_placer_rules_constraints_ports_and_binpack() -> None:
    offers = [
        offer("h1", 4, ports=2, zone="a"),
        offer("h2", 2, ports=2, zone="a"),
        offer("h3", 4, ports=2, zone="b"),
    ]
    placer = sdk.Placer(
        offers,
        constraints=[sdk.Constraint.equals("zone", "a")],
        rules=[sdk.Rule.parse(["hostname", "UNIQUE"])],
        order="binpack",
    )
    first = shape()
    assert placer.place(first, ports=1) is offers[1]  # the fullest in zone a
    assert first.command.environment["CORRAL_PORTS"] == "31000"
    assert placer.place(shape(), ports=1) is offers[0]  # UNIQUE: not h2 again
    assert placer.place(shape(), ports=1) is None  # h3 is in zone b
    assert [(o.hostname, len(ts)) for o, ts in placer.launches()] == [("h1", 1), ("h2", 1)]
    assert [o.hostname for o in placer.unused()] == ["h3"]
    # Ports are a resource too: an offer without free ports takes no task asking for one.
    assert sdk.Placer([offer("p", 4)]).place(shape(), ports=1) is None
    with pytest.raises(ValueError, match="order must be"):
        sdk.Placer(offers, order="random")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "toleration"),
    [
        (
            "gpu-sku=inference:NoSchedule",
            sdk.Toleration.equal("gpu-sku", "inference", "NoSchedule"),
        ),
        ("gpu-sku=inference", sdk.Toleration.equal("gpu-sku", "inference")),
        ("spot:PreferNoSchedule", sdk.Toleration.exists("spot", "PreferNoSchedule")),
        ("spot", sdk.Toleration.exists("spot")),
    ],
)
def test_a_toleration_is_written_as_the_taint_it_tolerates(
    text: str, toleration: sdk.Toleration
) -> None:
    assert sdk.Toleration.parse(text) == toleration
    assert str(toleration) == text


@pytest.mark.parametrize(
    ("text", "constraint"),
    [
        ("zone=a", sdk.Constraint.equals("zone", "a")),
        ("zone=a,b", sdk.Constraint.one_of("zone", "a", "b")),
        ("gpu-sku", sdk.Constraint.exists("gpu-sku")),
    ],
)
def test_a_constraint_is_written_as_an_attribute(text: str, constraint: sdk.Constraint) -> None:
    assert sdk.Constraint.parse(text) == constraint
    assert str(constraint) == text


@pytest.mark.parametrize(
    ("kind", "text", "message"),
    [
        (sdk.Toleration, "=x", "write KEY"),
        (sdk.Toleration, "k=v:Sometimes", "the effect must be one of"),
        (sdk.Constraint, "", "write ATTRIBUTE"),
        (sdk.Constraint, "zone=", "an empty value"),
    ],
)
def test_malformed_tolerations_and_constraints_are_named(
    kind: Any, text: str, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        kind.parse(text)
