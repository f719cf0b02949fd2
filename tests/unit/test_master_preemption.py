"""Preemption in the master core (master/core/nominations.py): a demand with no room kills
exactly enough lower-priority tasks, its framework alone is offered what they free, a Never
class and a gang at its minimum are left alone, and a demand does not preempt twice."""

from __future__ import annotations

from corral.master.core import commands as cmd
from corral.master.core import events as ev
from corral.master.core.config import MasterConfig
from corral.master.core.types import TaskReason, TaskState
from corral.priority import PreemptionPolicy, PriorityClass
from tests.unit.core_harness import Harness, demand, of, status, task


def full_cluster(
    config: MasterConfig | None = None, agents: int = 2, task_mem: int = 128, **batch_demand: int
) -> tuple[Harness, str, list[str]]:
    """``agents`` agents of 4 cpus, each full of four 1-cpu tasks of a batch framework."""
    h = Harness(config=config or MasterConfig())
    batch, _ = h.subscribe("batch")
    aids = [h.add_agent()[0] for _ in range(agents)]
    h.set_demands(batch, demand("work", count=4 * agents, priority_class="batch", **batch_demand))
    n = 0
    gang_offers, bundle = [], []
    while n < 4 * agents:
        offers = h.offers_for(batch)
        assert offers, f"only {n} batch tasks placed"
        for offer in offers:
            count = int(offer.scalars[0])  # 1-cpu tasks
            tasks = [
                task(f"b{n + i}", f"cpus:1;mem:{task_mem}", demand="work", priority_class="batch")
                for i in range(count)
            ]
            n += count
            if offer.gang_id:
                # A gang's offers come as one bundle, accepted at once, each task on its agent.
                for t in tasks:
                    t.agent_id = offer.agent_id
                gang_offers.append(offer.offer_id)
                bundle += tasks
            else:
                h.accept(batch, [offer.offer_id], *tasks)
        if bundle:
            h.accept(batch, gang_offers, *bundle)
            gang_offers, bundle = [], []
    for aid in aids:
        running = [
            status(t.task_id, batch, aid, TaskState.RUNNING)
            for t in h.core.agents[aid].tasks.values()
        ]
        h.agent_updates(aid, *running)
    assert sum(len(h.core.agents[a].tasks) for a in aids) == 4 * agents
    return h, batch, aids


def kills(out: list[cmd.Command]) -> list[cmd.SendKill]:
    return of(cmd.SendKill, out)


def preempt_cycle(h: Harness) -> list[cmd.Command]:
    from corral.master.core import events as ev

    h.now += 1
    return h.handle(ev.AllocationTick(**h.base(), seed=7))


def test_exactly_enough_victims_and_the_preemptor_alone_is_offered_what_they_free() -> None:
    h, batch, _ = full_cluster()
    serving, _ = h.subscribe("serving")
    other, _ = h.subscribe("other")  # wants anything, as a plain Mesos framework
    h.set_demands(serving, demand("web", "cpus:2;mem:256", count=3, priority_class="serving"))
    out = preempt_cycle(h)
    killed = kills(out)
    assert len(killed) == 6  # 3 tasks of 2 cpus, victims of 1 cpu: 2 each, no more
    assert {k.framework_id for k in killed} == {batch}
    events = [c for c in of(cmd.ClusterEvent, out) if c.kind == "task_preempted"]
    assert len(events) == 6
    assert f"framework {serving}" in events[0].message and "demand web" in events[0].message
    # The victims still hold their cpus: what the cycle offered (left-over mem) has none.
    assert all(o.scalars[0] == 0 for b in of(cmd.SendOffers, out) for o in b.offers)

    # Victims end one by one: until the last one on an agent, nothing is offered; then the
    # preemptor is offered the agent's freed room in the same event.
    by_agent: dict[str, list[str]] = {}
    for k in killed:
        by_agent.setdefault(k.agent_id, []).append(k.task_id)
    first_agent = sorted(by_agent, key=lambda a: -len(by_agent[a]))[0]
    victims = by_agent[first_agent]
    out = h.agent_updates(first_agent, status(victims[0], batch, first_agent, TaskState.KILLED))
    update = of(cmd.SendUpdates, out)[0].statuses[0]
    assert update.reason is TaskReason.PREEMPTED
    assert f"framework {serving}" in update.message and "demand web" in update.message
    assert not of(cmd.SendOffers, out)
    assert not [o for b in h.allocate() for o in b.offers if o.agent_id == first_agent]
    out = h.agent_updates(
        first_agent, *(status(v, batch, first_agent, TaskState.KILLED) for v in victims[1:])
    )
    offers = of(cmd.SendOffers, out)
    assert [b.framework_id for b in offers] == [serving]
    offer = offers[0].offers[0]
    assert offer.agent_id == first_agent
    assert offer.scalars[0] == len(victims)  # the victims' cpus, 1 each

    # Nobody else is offered that room while the nomination stands.
    h.now += 1
    for b in h.allocate():
        assert b.framework_id != other or all(o.agent_id != first_agent for o in b.offers)
    # The preemptor uses it; its tasks count toward the demand.
    h.accept(
        serving,
        [offer.offer_id],
        *(
            task(f"w{i}", "cpus:2;mem:256", demand="web", priority_class="serving")
            for i in range(len(victims) // 2)
        ),
    )
    assert h.core.frameworks[serving].demand_tasks["web"] == len(victims) // 2


def test_the_hold_is_offered_with_the_free_room_its_tasks_need_beside_it() -> None:
    # Victims of 1 cpu and 64 MiB free 2 cpus and 128 MiB, the preemptor's task wants 256 MiB:
    # the rest was free all along. The offer must hold a whole task, or the preemptor declines
    # it, batch takes the room back and the demand preempts again (a loop seen in
    # `corral scenario batch-wave`).
    h, batch, _ = full_cluster(task_mem=64)
    serving, _ = h.subscribe("serving")
    h.set_demands(serving, demand("web", "cpus:2;mem:256", count=1, priority_class="serving"))
    out = preempt_cycle(h)
    killed = kills(out)
    for b in of(cmd.SendOffers, out):  # the free mem, offered around, is declined
        ids = tuple(o.offer_id for o in b.offers)
        h.handle(ev.Decline(**h.call_base(b.framework_id), offer_ids=ids))
    assert len(killed) == 2
    aid = killed[0].agent_id
    out = h.agent_updates(aid, *(status(k.task_id, batch, aid, TaskState.KILLED) for k in killed))
    (offer,) = of(cmd.SendOffers, out)[0].offers
    assert (offer.scalars[0], offer.scalars[1]) == (2, 256)
    h.core.validate()
    h.accept(serving, [offer.offer_id], task("w", "cpus:2;mem:256", demand="web"))
    assert h.core.frameworks[serving].demand_tasks["web"] == 1
    assert kills(preempt_cycle(h)) == []


def test_the_free_room_the_planned_tasks_need_is_held_from_the_start() -> None:
    # Nobody declines here: the rest of the agent's free mem is offered around and kept, and
    # the preemptor's offer still holds a whole task.
    h, batch, _ = full_cluster(task_mem=64)
    serving, _ = h.subscribe("serving")
    h.subscribe("other")
    h.set_demands(serving, demand("web", "cpus:2;mem:256", count=1, priority_class="serving"))
    out = preempt_cycle(h)
    killed = kills(out)
    aid = killed[0].agent_id
    assert h.core.nominations[(serving, "web", aid)].held[1] == 256 - 2 * 64
    offered = [o for b in of(cmd.SendOffers, out) for o in b.offers if o.agent_id == aid]
    assert sum(o.scalars[1] for o in offered) == 4096 - 4 * 64 - (256 - 2 * 64)
    out = h.agent_updates(aid, *(status(k.task_id, batch, aid, TaskState.KILLED) for k in killed))
    (offer,) = of(cmd.SendOffers, out)[0].offers
    assert (offer.scalars[0], offer.scalars[1]) == (2, 256)


def test_a_demand_does_not_preempt_again_while_its_victims_are_dying() -> None:
    h, _, _ = full_cluster()
    serving, _ = h.subscribe("serving")
    h.set_demands(serving, demand("web", "cpus:2;mem:256", count=1, priority_class="serving"))
    assert len(kills(preempt_cycle(h))) == 2
    for _ in range(3):
        assert kills(preempt_cycle(h)) == []
    assert len(h.core.nominations) == 1


def test_a_never_class_does_not_preempt() -> None:
    cfg = MasterConfig(priority_classes=(PriorityClass("gold", 5000, PreemptionPolicy.NEVER),))
    h, _, _ = full_cluster(cfg)
    gold, _ = h.subscribe("gold")
    h.set_demands(gold, demand("web", "cpus:2;mem:256", count=2, priority_class="gold"))
    assert kills(preempt_cycle(h)) == []


def test_equal_priority_is_never_preempted() -> None:
    h, _, _ = full_cluster()
    rival, _ = h.subscribe("rival")
    h.set_demands(rival, demand("more", "cpus:1;mem:128", count=2, priority_class="batch"))
    assert kills(preempt_cycle(h)) == []


def test_a_gang_at_its_minimum_keeps_its_tasks() -> None:
    h, _, _ = full_cluster(min_member=8)
    serving, _ = h.subscribe("serving")
    h.set_demands(serving, demand("web", "cpus:2;mem:256", count=1, priority_class="serving"))
    assert kills(preempt_cycle(h)) == []


def test_a_gang_above_its_minimum_loses_only_what_it_can_spare() -> None:
    h, _, _ = full_cluster(min_member=6)
    serving, _ = h.subscribe("serving")
    h.set_demands(serving, demand("web", "cpus:2;mem:256", count=3, priority_class="serving"))
    assert len(kills(preempt_cycle(h))) == 2  # room for one task: the gang may lose 2 of 8


def test_an_unused_nomination_goes_back_to_everyone() -> None:
    h, batch, _ = full_cluster(MasterConfig(preemption_nomination_seconds=3.0))
    serving, _ = h.subscribe("serving")
    other, _ = h.subscribe("other")
    h.set_demands(serving, demand("web", "cpus:2;mem:256", count=1, priority_class="serving"))
    killed = kills(preempt_cycle(h))
    aid = killed[0].agent_id
    out = h.agent_updates(aid, *(status(k.task_id, batch, aid, TaskState.KILLED) for k in killed))
    (offer,) = of(cmd.SendOffers, out)[0].offers
    h.set_demands(serving)  # it no longer wants anything, and ignores the offer
    out = preempt_cycle(h)
    assert not of(cmd.SendRescind, out)
    h.now += 3
    out = preempt_cycle(h)
    assert of(cmd.SendRescind, out)[0].offer_ids == (offer.offer_id,)
    assert any(c.kind == "nomination_expired" for c in of(cmd.ClusterEvent, out))
    assert not h.core.nominations
    # Back in the pool before the same cycle: the other framework is offered it at once.
    to_other = [o for b in of(cmd.SendOffers, out) if b.framework_id == other for o in b.offers]
    assert [o.agent_id for o in to_other] == [aid]


def test_preemption_can_be_turned_off() -> None:
    h, _, _ = full_cluster(MasterConfig(preemption=False))
    serving, _ = h.subscribe("serving")
    h.set_demands(serving, demand("web", "cpus:2;mem:256", count=1, priority_class="serving"))
    assert kills(preempt_cycle(h)) == []


def test_a_lost_agent_ends_the_hold_and_the_demand_may_preempt_elsewhere() -> None:
    h, _, _ = full_cluster()
    serving, _ = h.subscribe("serving")
    h.set_demands(serving, demand("web", "cpus:2;mem:256", count=1, priority_class="serving"))
    first = kills(preempt_cycle(h))
    h.close_agent(first[0].agent_id)
    assert not h.core.nominations and not h.core.victim_of
    again = kills(preempt_cycle(h))
    assert len(again) == 2 and again[0].agent_id != first[0].agent_id


def _labelled(h: Harness, aid: str, app: str) -> None:
    from corral.v1 import common_pb2

    for t in h.core.agents[aid].tasks.values():
        t.spec.wire = common_pb2.TaskInfo(labels={"app": app})


def test_preemption_spares_a_budgets_tasks_and_breaks_it_only_if_it_must() -> None:
    from corral.master.core.disruption_budgets import budgets_from_json

    budget = budgets_from_json(
        [{"name": "keep", "selector": {"app": "keep"}, "max_unavailable": 0}]
    )
    # Which agent the rules without budgets pick for one 2-cpu serving task (2 victims)...
    h, _, _ = full_cluster()
    serving, _ = h.subscribe("serving")
    h.set_demands(serving, demand("web", "cpus:2;mem:256", count=1, priority_class="serving"))
    (picked,) = {k.agent_id for k in kills(preempt_cycle(h))}
    # ... holds tasks a budget keeps: the other agent's tasks go instead.
    h, _, aids = full_cluster(MasterConfig(disruption_budgets=budget))
    _labelled(h, picked, "keep")
    serving, _ = h.subscribe("serving")
    h.set_demands(serving, demand("web", "cpus:2;mem:256", count=1, priority_class="serving"))
    killed = kills(preempt_cycle(h))
    (other,) = [a for a in aids if a != picked]
    assert len(killed) == 2 and {k.agent_id for k in killed} == {other}
    # Every agent's tasks kept by the budget: preemption still happens (kube does too), on
    # the agent with the fewest victims past it.
    h, _, aids = full_cluster(MasterConfig(disruption_budgets=budget))
    for aid in aids:
        _labelled(h, aid, "keep")
    serving, _ = h.subscribe("serving")
    h.set_demands(serving, demand("web", "cpus:2;mem:256", count=1, priority_class="serving"))
    assert len(kills(preempt_cycle(h))) == 2
