"""The array form of "why does no agent fit this demand" (agent_view.py) gives exactly what the
agent-by-agent specification (demands.demand_reasons_reference) gives, on generated clusters:
agents with taints, attributes, tasks and outstanding offers (the framework's own and others'),
frameworks and demands with tolerations and constraints, refuse filters."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corral.master.core import demands
from corral.master.core import events as ev
from corral.master.core.agent_view import AgentView
from corral.placement import (
    AttributeConstraint,
    ConstraintOp,
    Taint,
    TaintEffect,
    Toleration,
    TopologySpread,
)
from tests.unit.core_harness import Harness, demand, task

EFFECTS = [TaintEffect.NO_SCHEDULE, TaintEffect.PREFER_NO_SCHEDULE, TaintEffect.NO_EXECUTE]
taints = st.lists(
    st.builds(
        Taint,
        st.sampled_from(["spot", "gpu"]),
        st.sampled_from(["true", "x"]),
        st.sampled_from(EFFECTS),
    ),
    max_size=2,
    unique_by=lambda t: t.key,
)
zones = st.sampled_from([{}, {"zone": "a"}, {"zone": "b"}, {"zone": "a", "rack": "r1"}])
constraints = st.lists(
    st.sampled_from(
        [
            AttributeConstraint("zone", ConstraintOp.EQUALS, ("a",)),
            AttributeConstraint("zone", ConstraintOp.IN, ("a", "b")),
            AttributeConstraint("rack", ConstraintOp.EXISTS),
        ]
    ),
    max_size=2,
    unique=True,
)
tolerations = st.lists(
    st.sampled_from([Toleration("spot", "true"), Toleration("gpu", exists=True)]),
    max_size=2,
    unique=True,
)

spreads = st.sampled_from(
    [
        None,
        TopologySpread("zone", 1),
        TopologySpread("zone", 2),
        TopologySpread("zone", 1, schedule_anyway=True),
        TopologySpread("hostname", 1),
    ]
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_the_array_form_counts_what_the_specification_counts(data: st.DataObject) -> None:
    h = Harness()
    for _ in range(data.draw(st.integers(1, 8))):
        cpus = data.draw(st.sampled_from([1, 2, 4]))
        gpus = data.draw(st.sampled_from([0, 1]))
        h.add_agent(
            resources=f"cpus:{cpus};mem:1024;disk:100;gpus:{gpus}",
            taints=tuple(data.draw(taints)),
            attributes=data.draw(zones),
        )
    other, _ = h.subscribe("other", tolerations=tuple(data.draw(tolerations)))
    fw, _ = h.subscribe(
        "fw",
        tolerations=tuple(data.draw(tolerations)),
        offer_constraints=tuple(data.draw(constraints)),
        # Without the capability, agents with GPUs are held back from it (masks/gpus.py).
        gpu_resources=data.draw(st.booleans()),
    )
    # Tasks name demand "d", so a spread rule has tasks to count.
    h.set_demands(fw, demand("d", "cpus:1;mem:64", count=50))
    # Some offers taken as tasks, some left outstanding, some declined (refuse filters).
    n = 0
    for batch in h.allocate():
        for offer in batch.offers:
            choice = data.draw(st.sampled_from(["task", "keep", "decline"]))
            if choice == "task" and offer.scalars[0] >= 1:
                n += 1
                h.accept(
                    batch.framework_id,
                    [offer.offer_id],
                    task(f"t{n}", demand="d" if batch.framework_id == fw else ""),
                    refuse=0,
                )
            elif choice == "decline":
                h.handle(
                    ev.Decline(
                        **h.call_base(batch.framework_id),
                        offer_ids=(offer.offer_id,),
                        refuse_seconds=3600,
                    )
                )
    shape = data.draw(st.sampled_from(["cpus:1;mem:128", "cpus:3;mem:128", "cpus:1;mem:64;gpus:1"]))
    d = demand(
        "d",
        shape,
        count=2,
        constraints=tuple(data.draw(constraints)),
        tolerations=tuple(data.draw(tolerations)),
        spread=data.draw(spreads),
    )
    core = h.core
    record = core.frameworks[fw]
    agents = demands.connected_agents(core)
    held = demands.held_back(core, record, h.now)
    fast = demands.demand_reasons(core, record, d, agents, held)
    slow = demands.demand_reasons_reference(core, record, d, agents, held)
    assert fast == slow
    # The scan's form: refuse filters as the allocator's arrays, over the same agents and
    # over a view that lacks one of them (placed by id, not by position).
    masks = demands.held_back_masks(core, record, h.now)
    assert demands.demand_reasons(core, record, d, agents, masks) == slow
    some = agents[1:]
    part = demands.demand_reasons(core, record, d, some, masks)
    assert part == demands.demand_reasons_reference(core, record, d, some, held)
    # A scan keeps the agents' arrays for the next: reused for the same agents, rebuilt from
    # them for others (here: the arrays of a view without the first agent).
    for kept in (AgentView(core, agents).arrays, AgentView(core, some).arrays):
        same = kept.statics.built_from(agents)
        view = AgentView(core, agents, kept)
        assert view.statics.built_from(agents)
        assert (view.arrays is kept) == same
        assert demands.demand_reasons(core, record, d, agents, masks, view) == slow
    assert other  # the second framework's offers are in the view as others' offers
