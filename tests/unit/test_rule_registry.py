"""Every consumer of the placement rules honours every rule in the registry (issues #31, #42).

A static rule only this test knows ("guarded": an agent with the attribute guard=on is closed to
every framework outside the role `trusted`) is registered, and each consumer must change its
answer for it: the allocators' cycles (the walk kernels compiled and uncompiled, the reference),
their rooms (the gang cut) and explain, the master's why-pending reasons (the fast agent view and
its specification), preemption's victim search and the spread domains. Dynamic rules only this
test knows, one per scope (an agent condition, a framework condition, a pair of conditions), are
registered too: the cycles, rooms, held_back, explain and why-pending must honour them, and the
numpy allocator (both kinds) must agree with the reference over random histories that set and
clear their conditions. A consumer that writes its own rules instead of iterating the registry
fails here.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corral.master.allocator import DrfAllocator, make_allocator, rules
from corral.master.allocator.numpy_allocator import KERNELS
from corral.master.allocator.rules import AgentFacts, DynamicFacts, FrameworkFacts, RuleOptions
from corral.master.allocator.rules.base import DynamicState, Mask, Scope
from corral.master.core import commands as cmd
from corral.master.core import demands, spread
from corral.master.core import events as ev
from corral.master.core.agent_view import AgentView
from corral.placement import TopologySpread
from tests.unit.core_harness import Harness, demand, of, task
from tests.unit.test_allocator_properties import Twin
from tests.unit.test_allocator_properties import build as build_twin

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


# ---- dynamic rules (issue #42) ------------------------------------------------------------

QUARANTINED = "agent quarantined (test rule)"
FROZEN = "framework frozen (test rule)"
NOISY = "noisy framework on a quiet agent (test rule)"


class Quarantine:
    """Agents with the condition "quarantined" are offered to nobody (as draining)."""

    name = "quarantine"
    reasons = (QUARANTINED,)
    scope: Scope = "agent"
    in_rooms = True

    def blocks(self, facts: DynamicFacts) -> bool:
        return "quarantined" in facts.agent_conditions

    def array_form(self, state: DynamicState, now: float) -> Mask:
        return state.agent_condition("quarantined")


class Frozen:
    """A framework with the condition "frozen" is offered nothing, rooms included."""

    name = "frozen"
    reasons = (FROZEN,)
    scope: Scope = "framework"
    in_rooms = True

    def blocks(self, facts: DynamicFacts) -> bool:
        return "frozen" in facts.framework_conditions

    def array_form(self, state: DynamicState, now: float) -> Mask:
        return state.framework_condition("frozen")


class Quiet:
    """A "noisy" framework may not use a "quiet" agent: a pair rule, combined with the
    refuse filters."""

    name = "quiet agents"
    reasons = (NOISY,)
    scope: Scope = "pair"
    in_rooms = True

    def blocks(self, facts: DynamicFacts) -> bool:
        return "quiet" in facts.agent_conditions and "noisy" in facts.framework_conditions

    def array_form(self, state: DynamicState, now: float) -> Mask:
        return np.outer(state.agent_condition("quiet"), state.framework_condition("noisy"))


@pytest.fixture
def dynamic() -> Iterator[None]:
    with rules.registered(Quarantine()), rules.registered(Frozen()), rules.registered(Quiet()):
        yield


@pytest.mark.usefixtures("dynamic")
def test_the_registry_lists_the_registered_dynamic_rules() -> None:
    names = [r.name for r in rules.masks()]
    assert names[:3] == ["suppression", "refuse filters", "draining"]
    assert {"quarantine", "frozen", "quiet agents"} <= set(names)
    assert "suppression" not in [r.name for r in rules.masks(rooms=True)]


@pytest.mark.usefixtures("dynamic")
@pytest.mark.parametrize("kind", ["numba", "numpy", "reference"])
def test_the_allocators_honour_a_dynamic_rule_of_each_scope(kind: str) -> None:
    al = make_allocator(kind)
    al.add_agent("open", (4.0, 1024.0, 0.0, 0.0), {}, ())
    al.add_agent("sick", (8.0, 1024.0, 0.0, 0.0), {}, ())
    al.add_agent("quiet", (4.0, 1024.0, 0.0, 0.0), {}, ())
    for fid in ("calm", "loud", "cold"):
        al.add_framework(fid, "*")
    al.set_agent_condition("sick", "quarantined", True)
    al.set_agent_condition("quiet", "quiet", True)
    al.set_framework_condition("loud", "noisy", True)
    al.set_framework_condition("cold", "frozen", True)
    small, big = (1.0, 64.0, 0.0, 0.0), (8.0, 64.0, 0.0, 0.0)  # big fits the sick agent only
    assert list(al.room("calm", 1.0, small).agent_ids) == ["open", "quiet"]
    assert list(al.room("loud", 1.0, small).agent_ids) == ["open"]
    assert list(al.room("cold", 1.0, small).agent_ids) == []
    assert not al.has_room("calm", 1.0, big) and al.has_room("calm", 1.0, small)
    assert al.held_back("calm", 1.0) == {"sick": QUARANTINED}
    assert al.held_back("loud", 1.0) == {"quiet": NOISY, "sick": QUARANTINED}
    assert al.explain("calm", 1.0).reasons.get(QUARANTINED) == 1
    assert al.explain("loud", 1.0).reasons.get(NOISY) == 1
    assert al.explain("cold", 1.0).reasons.get(FROZEN) == 3
    pairs = set(zip(*al.cycle(1.0, 7).ids(), strict=True))
    assert {a for _, a in pairs} == {"open", "quiet"}  # nobody is offered the sick agent
    assert ("loud", "quiet") not in pairs and not {f for f, _ in pairs} & {"cold"}
    # The state changes between cycles: cleared, the sick agent is offered at once.
    al.set_agent_condition("sick", "quarantined", False)
    al.set_framework_condition("cold", "frozen", False)
    assert set(al.cycle(2.0, 7).ids()[1]) == {"sick"}
    assert al.held_back("calm", 2.0) == {}


@pytest.mark.usefixtures("dynamic")
def test_why_pending_honours_a_dynamic_rule() -> None:
    h, open_, guarded = _cluster()
    fid, _ = h.subscribe("fw", role="trusted")
    h.set_demands(fid, demand("web", "cpus:1;mem:64", count=1))
    h.core.allocator.set_agent_condition(guarded, "quarantined", True)
    fw, d = h.core.frameworks[fid], h.core.frameworks[fid].demands["web"]
    agents = demands.connected_agents(h.core)
    masks = demands.held_back_masks(h.core, fw, h.now)
    fast = AgentView(h.core, agents).reasons(fw, d, masks, demands.REASON_FITS)
    held = demands.held_back(h.core, fw, h.now)
    spec = demands.demand_reasons_reference(h.core, fw, d, agents, held)
    for reasons in (fast, spec):
        by = {r["reason"]: r["sample_agents"] for r in reasons}
        assert by[QUARANTINED] == [guarded] and by[demands.REASON_FITS] == [open_]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_both_kinds_agree_with_the_reference_on_dynamic_rules(data: st.DataObject) -> None:
    """Random clusters and histories (test_allocator_properties.build) with the three test
    rules registered and their conditions set and cleared between cycles: plans, explain,
    rooms, has_room and held_back equal to the reference's (Twin)."""
    with rules.registered(Quarantine()), rules.registered(Frozen()), rules.registered(Quiet()):
        twin: Twin = build_twin(data)
        assert isinstance(twin.fast, DrfAllocator) and twin.fast.kernel in KERNELS
        now = 0.0
        for _ in range(data.draw(st.integers(1, 5))):
            agent_ids, fids = sorted(twin.totals), sorted(twin.roles)
            for _ in range(data.draw(st.integers(1, 3))):
                on = data.draw(st.booleans())
                if data.draw(st.booleans()):
                    aid = data.draw(st.sampled_from(agent_ids))
                    name = data.draw(st.sampled_from(["quarantined", "quiet", "draining"]))
                    twin.both("set_agent_condition", aid, name, on)
                else:
                    fid = data.draw(st.sampled_from(fids))
                    name = data.draw(st.sampled_from(["frozen", "noisy", "suppressed"]))
                    twin.both("set_framework_condition", fid, name, on)
            now += 1.0
            plan = twin.cycle(now, seed=data.draw(st.integers(0, 2**32 - 1)))
            twin.compare_explain(now)
            for a in plan:
                if data.draw(st.booleans()):
                    twin.recover(a.framework_id, a.agent_id, a.scalars)
                    twin.both("add_filter", a.framework_id, a.agent_id, now + 1.5, a.scalars)
