"""A demand's topology spread in explain (master/core/spread.py, corral.placement.TopologySpread):
the rule table, and a pending demand whose only room is in a domain that is full."""

from __future__ import annotations

import pytest

from corral.master.core import demands
from corral.master.wire.convert import WireError, demand_from_pb, demand_to_pb
from corral.placement import AttributeConstraint, ConstraintOp, TopologySpread
from corral.v1 import common_pb2 as pb
from tests.unit.core_harness import Harness, demand, task

ZONE = TopologySpread("zone", max_skew=1)


@pytest.mark.parametrize(
    ("rule", "value", "counts", "fewest", "reason"),
    [
        (ZONE, "a", {"a": 1, "b": 1}, 1, ""),  # 2 - 1 = 1 <= 1
        (ZONE, "a", {"a": 2, "b": 1}, 1, "spread: zone=a would exceed max_skew 1"),
        (ZONE, "c", {"a": 2, "b": 2}, 0, ""),  # the domain behind may always take one
        (TopologySpread("zone", 2), "a", {"a": 2}, 1, ""),  # 3 - 1 = 2 <= 2
        (ZONE, None, {}, 0, "spread: no attribute zone"),
        (TopologySpread("zone", 1, schedule_anyway=True), "a", {"a": 9}, 0, ""),
    ],
)
def test_the_rule(
    rule: TopologySpread, value: str | None, counts: dict[str, int], fewest: int, reason: str
) -> None:
    assert rule.blocked(value, counts, fewest) == reason


def test_hostname_is_a_key_every_agent_has() -> None:
    rule = TopologySpread("hostname", 1)
    assert rule.value_of("h1", {}) == "h1"
    assert rule.value_of("h1", {"hostname": "x"}) == "x"
    assert TopologySpread("zone").value_of("h1", {}) is None


def _cluster() -> tuple[Harness, str, dict[str, str]]:
    """Zones a and b with room; zone c with room for one task only."""
    h = Harness()
    agents = {}
    for zone, cpus in (("a", 8), ("b", 8), ("c", 1)):
        aid, _ = h.add_agent(resources=f"cpus:{cpus};mem:4096", attributes={"zone": zone})
        agents[zone] = aid
    fw, _ = h.subscribe("serving")
    return h, fw, agents


def _place(h: Harness, fw: str, agents: dict[str, str], zones: str) -> None:
    outstanding = {o.agent_id: o for o in h.offers_for(fw)}
    for n, zone in enumerate(zones):
        offer = outstanding.pop(agents[zone])
        h.accept(fw, [offer.offer_id], task(f"{zone}{n}", demand="web"), refuse=0)
        h.core.validate()
        outstanding.update((o.agent_id, o) for o in h.offers_for(fw))


def test_a_demand_pending_on_spread_says_which_domains_are_ahead() -> None:
    h, fw, agents = _cluster()
    h.set_demands(fw, demand("web", "cpus:1;mem:64", count=6, spread=ZONE))
    _place(h, fw, agents, "abcab")  # 2/2/1: zone c is full, a and b may not go further
    (pending,) = demands.explain(h.core, h.core.frameworks[fw], h.now)
    assert pending["unmet"] == 1
    assert pending["spread"] == "max_skew 1 over zone (DoNotSchedule)"
    reasons = {r["reason"]: r["sample_agents"] for r in pending["reasons"]}
    assert reasons == {
        "spread: zone=a would exceed max_skew 1": [agents["a"]],
        "spread: zone=b would exceed max_skew 1": [agents["b"]],
        "insufficient cpus": [agents["c"]],
    }


def test_schedule_anyway_is_no_reason_to_be_pending() -> None:
    h, fw, agents = _cluster()
    rule = TopologySpread("zone", 1, schedule_anyway=True)
    h.set_demands(fw, demand("web", "cpus:1;mem:64", count=6, spread=rule))
    _place(h, fw, agents, "abcab")
    (pending,) = demands.explain(h.core, h.core.frameworks[fw], h.now)
    fits = {r["reason"]: r["agents"] for r in pending["reasons"]}
    assert fits == {"insufficient cpus": 1} and pending["room"]["agents"] == 2


def test_domains_are_the_agents_the_demand_may_use() -> None:
    # Constrained to zones a and b, zone c's empty domain does not hold a and b back.
    h, fw, agents = _cluster()
    only_ab = AttributeConstraint("zone", ConstraintOp.IN, ("a", "b"))
    h.set_demands(fw, demand("web", "cpus:1;mem:64", count=6, spread=ZONE, constraints=(only_ab,)))
    _place(h, fw, agents, "ab")
    (pending,) = demands.explain(h.core, h.core.frameworks[fw], h.now)
    reasons = {r["reason"]: r["agents"] for r in pending["reasons"]}
    assert pending["room"]["agents"] == 2
    assert not any(r.startswith("spread") for r in reasons)


def test_the_wire_form_round_trips_and_bad_rules_are_refused() -> None:
    d = demand("web", count=3, spread=TopologySpread("zone", 2, schedule_anyway=True))
    assert demand_from_pb(demand_to_pb(d, pb.Demand())) == d
    assert demand_from_pb(demand_to_pb(demand("web"), pb.Demand())).spread is None
    bad = pb.Demand(name="web", count=1)
    bad.resources.cpus = 1
    bad.spread.topology_key = "zone"
    with pytest.raises(WireError, match="needs max_skew >= 1"):
        demand_from_pb(bad)
    bad.spread.topology_key, bad.spread.max_skew = "", 1
    with pytest.raises(WireError, match="no topology_key"):
        demand_from_pb(bad)
