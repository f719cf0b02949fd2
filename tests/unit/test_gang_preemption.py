"""Room preempted for a gang reaches that gang's bundle and nothing else (issue #32, defect 1:
a framework whose gang demand preempted its own lower-priority tasks got the freed room back as
ordinary offers, refilled it with its requeued tasks, and was preempted again: 18 Preempted
events in 5 s)."""

from __future__ import annotations

from corral.master.core import commands as cmd
from corral.master.core import events as ev
from corral.master.core.config import MasterConfig
from corral.master.core.types import TaskState
from tests.unit.core_harness import Harness, demand, of, status, task

WORK = demand("work", "cpus:1;mem:128", count=8, priority_class="batch")
TRAIN = demand("train", "cpus:2;mem:256", count=4, min_member=4, priority_class="serving")


def _one_framework_full_of_its_own_batch_work(
    config: MasterConfig | None = None,
) -> tuple[Harness, str, list[str]]:
    """Two agents of 4 cpus, full of 8 one-cpu batch tasks of framework F."""
    h = Harness(config=config or MasterConfig())
    fw, _ = h.subscribe("trainer")
    aids = [h.add_agent()[0] for _ in range(2)]
    h.set_demands(fw, WORK)
    n = 0
    while n < 8:
        offers = h.offers_for(fw)
        assert offers, f"only {n} batch tasks placed"
        for offer in offers:
            k = int(offer.scalars[0])
            h.accept(fw, [offer.offer_id], *(task(f"b{n + i}", demand="work") for i in range(k)))
            n += k
    for aid in aids:
        h.agent_updates(
            aid,
            *(
                status(t.task_id, fw, aid, TaskState.RUNNING)
                for t in h.core.agents[aid].tasks.values()
            ),
        )
    return h, fw, aids


def _cycle(h: Harness, advance: float = 1.0) -> list[cmd.Command]:
    h.now += advance
    return h.handle(ev.AllocationTick(**h.base(), seed=7))


def _greedy_accepts(h: Harness, fw: str, out: list[cmd.Command], seq: list[int]) -> int:
    """What a framework that refills any ordinary offer with its requeued batch tasks does;
    returns how many it launched."""
    launched = 0
    for batch in of(cmd.SendOffers, out):
        if batch.framework_id != fw:
            continue
        for offer in batch.offers:
            if offer.gang_id:
                continue
            k = int(offer.scalars[0])
            if k <= 0:
                continue
            tasks = [task(f"r{seq[0] + i}", demand="work") for i in range(k)]
            seq[0] += k
            h.accept(fw, [offer.offer_id], *tasks)
            launched += k
    return launched


def test_room_preempted_for_a_gang_comes_back_as_its_bundle_only() -> None:
    h, fw, aids = _one_framework_full_of_its_own_batch_work()
    h.set_demands(fw, WORK, TRAIN)
    out = _cycle(h)
    killed = of(cmd.SendKill, out)
    assert len(killed) == 8, "4 gang members of 2 cpus need all 8 one-cpu batch tasks gone"
    seq = [0]
    # The victims end, one agent after the other; the framework grabs any ordinary offer.
    bundles: list[cmd.SendOffers] = []
    for aid in aids:
        victims = [k for k in killed if k.agent_id == aid]
        out = h.agent_updates(aid, *(status(k.task_id, fw, aid, TaskState.KILLED) for k in victims))
        assert _greedy_accepts(h, fw, out, seq) == 0, "freed room was offered as ordinary offers"
        bundles += [b for b in of(cmd.SendOffers, out) if any(o.gang_id for o in b.offers)]
    (bundle,) = bundles
    offers = bundle.offers
    assert {o.gang_id for o in offers} != {""} and len({o.gang_id for o in offers}) == 1
    assert sorted(o.agent_id for o in offers) == sorted(aids)
    assert sum(o.scalars[0] for o in offers) == 8  # four members of 2 cpus
    gang = h.core.book.gangs[offers[0].gang_id]
    assert (gang.demand, gang.members) == ("train", 4)
    # Meanwhile the cycles offer the framework none of that room for its batch work.
    for _ in range(3):
        assert _greedy_accepts(h, fw, _cycle(h), seq) == 0
    # The framework accepts its bundle: the gang runs, nothing is preempted again.
    members = []
    for o in offers:
        for i in range(int(o.scalars[0]) // 2):
            t = task(f"m-{o.agent_id}-{i}", "cpus:2;mem:256", demand="train")
            t.agent_id = o.agent_id
            members.append(t)
    h.accept(fw, [o.offer_id for o in offers], *members)
    assert h.core.frameworks[fw].demand_tasks["train"] == 4
    for _ in range(5):
        out = _cycle(h, advance=10.0)
        assert not of(cmd.SendKill, out), "the gang's room was preempted again"
    assert not h.core.nominations


def test_no_preemption_loop_when_the_framework_refills_whatever_it_gets() -> None:
    # The loop of the report, run for a simulated minute: before the fix the framework's batch
    # tasks went back into the freed room, and were preempted again every backoff.
    h, fw, _ = _one_framework_full_of_its_own_batch_work()
    h.set_demands(fw, WORK, TRAIN)
    seq = [0]
    preempted = 0
    gang_started = False
    for _ in range(60):
        out = _cycle(h)
        preempted += len(of(cmd.SendKill, out))
        _greedy_accepts(h, fw, out, seq)
        for kill in of(cmd.SendKill, out):
            out2 = h.agent_updates(
                kill.agent_id, status(kill.task_id, fw, kill.agent_id, TaskState.KILLED)
            )
            _greedy_accepts(h, fw, out2, seq)
            for b in of(cmd.SendOffers, out2):
                gang_offers = [o for o in b.offers if o.gang_id]
                if gang_offers and not gang_started:
                    members = []
                    for o in gang_offers:
                        for i in range(int(o.scalars[0]) // 2):
                            t = task(f"m-{o.agent_id}-{i}", "cpus:2;mem:256", demand="train")
                            t.agent_id = o.agent_id
                            members.append(t)
                    h.accept(fw, [o.offer_id for o in gang_offers], *members)
                    gang_started = True
    assert gang_started, "the gang never got its bundle"
    assert preempted == 8, f"{preempted} tasks preempted for one gang of 4 (a loop)"


def test_a_gang_hold_that_is_not_accepted_goes_back_and_strikes() -> None:
    h, fw, aids = _one_framework_full_of_its_own_batch_work(
        MasterConfig(preemption_nomination_seconds=3.0)
    )
    h.set_demands(fw, WORK, TRAIN)
    killed = of(cmd.SendKill, _cycle(h))
    bundle_ids: list[str] = []
    for aid in aids:
        victims = [k for k in killed if k.agent_id == aid]
        out = h.agent_updates(aid, *(status(k.task_id, fw, aid, TaskState.KILLED) for k in victims))
        bundle_ids += [o.offer_id for b in of(cmd.SendOffers, out) for o in b.offers if o.gang_id]
    assert len(bundle_ids) == 2
    out = _cycle(h, advance=3.0)
    (rescind,) = [r for r in of(cmd.SendRescind, out) if r.framework_id == fw]
    assert sorted(rescind.offer_ids) == sorted(bundle_ids), "a gang's bundle goes back whole"
    expired = [c for c in of(cmd.ClusterEvent, out) if c.kind == "nomination_expired"]
    assert len(expired) == 1, "one strike for one unused bundle"
    assert not h.core.nominations
    assert h.core.preemption_budget.allowance(fw, "train", h.now) == 0  # backing off
    # The room is everyone's again: this cycle cut it by the usual rules, and the gang, highest
    # in class and still waiting, got a new bundle from free room, not a nomination's.
    assert all(g.offer_ids != tuple(bundle_ids) for g in h.core.book.gangs.values())
    assert not of(cmd.SendKill, out)
