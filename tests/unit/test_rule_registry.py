"""Every consumer of the placement rules honours every rule in the registry (issue #31).

A rule only this test knows ("guarded": an agent with the attribute guard=on is closed to every
framework outside the role `trusted`) is registered, and each consumer must change its answer
for it: the allocators' cycles (the walk kernels compiled and uncompiled, the reference), their
rooms (the gang cut) and explain, the master's why-pending reasons (the fast agent view and its
specification), preemption's victim search and the spread domains. A consumer that writes its
own rules instead of iterating the registry fails here.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator

import pytest

from corral.master.allocator import make_allocator, rules
from corral.master.allocator.rules import AgentFacts, FrameworkFacts, RuleOptions
from corral.master.core import commands as cmd
from corral.master.core import demands, spread
from corral.master.core import events as ev
from corral.master.core.agent_view import AgentView
from corral.placement import TopologySpread
from tests.unit.core_harness import Harness, demand, of, task

REASON = "agent guarded: role 'trusted' only"


class Guarded:
    name = "guarded"
    spread_domains = True

    def agent_key(self, agent: AgentFacts) -> Hashable:
        return agent.attributes.get("guard")

    def framework_key(self, framework: FrameworkFacts) -> Hashable:
        return framework.role == "trusted"

    def blocking(
        self, agent: AgentFacts, framework: FrameworkFacts, options: RuleOptions
    ) -> list[str]:
        if agent.attributes.get("guard") == "on" and framework.role != "trusted":
            return [REASON]
        return []

    def prefers_not(self, agent: AgentFacts, framework: FrameworkFacts) -> bool:
        return False


@pytest.fixture(autouse=True)
def guarded() -> Iterator[None]:
    with rules.registered(Guarded()):
        yield


def test_the_registry_lists_each_rule_once_with_its_reasons() -> None:
    names = [r.name for r in rules.STATIC] + [r.name for r in rules.DYNAMIC]
    assert len(names) == len(set(names))
    assert {"taints", "constraints", "gpus", "guarded"} <= set(names)
    assert {"resources", "refuse filters", "draining", "spread"} <= set(names)
    assert all(r.reasons and r.array_form for r in rules.DYNAMIC)


@pytest.mark.parametrize("kind", ["numba", "numpy", "reference"])
def test_the_allocators_cycle_rooms_and_explain_honour_it(kind: str) -> None:
    al = make_allocator(kind)
    al.add_agent("open", (4.0, 1024.0, 0.0, 0.0), {}, ())
    al.add_agent("guarded", (4.0, 1024.0, 0.0, 0.0), {"guard": "on"}, ())
    al.add_framework("untrusted", "*")
    al.add_framework("trusted", "trusted")
    room = al.room("untrusted", 1.0, (1.0, 1.0, 0.0, 0.0))  # the gang cut's view
    assert list(room.agent_ids) == ["open"]
    assert list(al.room("trusted", 1.0, (1.0, 1.0, 0.0, 0.0)).agent_ids) == ["guarded", "open"]
    assert al.explain("untrusted", 1.0).reasons.get(REASON) == 1
    plan = al.cycle(1.0, 7)
    frameworks, agents = plan.ids()
    pairs = set(zip(frameworks, agents, strict=True))
    assert ("untrusted", "guarded") not in pairs and ("untrusted", "open") in pairs
    assert ("trusted", "guarded") in pairs


def _cluster() -> tuple[Harness, str, str]:
    h = Harness()
    open_, _ = h.add_agent(resources="cpus:2;mem:1024", attributes={"zone": "a"})
    guarded, _ = h.add_agent(resources="cpus:2;mem:1024", attributes={"zone": "b", "guard": "on"})
    return h, open_, guarded


def test_why_pending_and_its_specification_honour_it() -> None:
    h, open_, guarded = _cluster()
    fid, _ = h.subscribe("fw")
    h.set_demands(fid, demand("web", "cpus:1;mem:64", count=1))
    fw, d = h.core.frameworks[fid], h.core.frameworks[fid].demands["web"]
    agents = demands.connected_agents(h.core)
    fast = AgentView(h.core, agents).reasons(fw, d, {}, demands.REASON_FITS)
    spec = demands.demand_reasons_reference(h.core, fw, d, agents, {})
    for reasons in (fast, spec):
        by = {r["reason"]: r["sample_agents"] for r in reasons}
        assert by[REASON] == [guarded] and by[demands.REASON_FITS] == [open_]


def test_preemption_does_not_search_an_agent_the_rule_closes() -> None:
    h, open_, _ = _cluster()
    batch, _ = h.subscribe("batch", role="trusted")  # fills both agents
    for offer in h.offers_for(batch):
        tasks = [task(f"b{offer.agent_id}{i}", "cpus:1;mem:64", priority_class="batch")
                 for i in range(2)]  # fmt: skip
        h.accept(batch, [offer.offer_id], *tasks)
    fid, _ = h.subscribe("web")
    h.set_demands(fid, demand("web", "cpus:2;mem:64", count=2, priority_class="serving"))
    h.now += 1
    out = h.handle(ev.AllocationTick(**h.base(), seed=1))
    killed_on = {k.agent_id for k in of(cmd.SendKill, out)}
    assert killed_on == {open_}, "a victim was taken on an agent the demand may not use"


def test_spread_domains_leave_out_an_agent_the_rule_closes() -> None:
    h, _, _ = _cluster()
    fid, _ = h.subscribe("fw")
    rule = TopologySpread("zone", 1)
    h.set_demands(fid, demand("web", "cpus:1;mem:64", count=2, spread=rule))
    fw = h.core.frameworks[fid]
    counts = spread.spread_counts(h.core, fw, fw.demands["web"], demands.connected_agents(h.core))
    assert counts is not None
    # Only zone a is usable: with no task anywhere the fewest is 0 either way, so place one in
    # zone a; were zone b a domain, zone a would be blocked by max_skew 1 (1 + 1 - 0 > 1).
    (offer,) = [o for o in h.offers_for(fid) if o.agent_id in h.core.agents]
    h.accept(fid, [offer.offer_id], task("w0", "cpus:1;mem:64", demand="web"))
    counts = spread.spread_counts(h.core, fw, fw.demands["web"], demands.connected_agents(h.core))
    assert counts is not None and counts.fewest == 1, "the guarded zone counted as a domain"
