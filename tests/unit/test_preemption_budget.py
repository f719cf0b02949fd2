"""Preemption is paced per preemptor (master/core/preemption_budget.py; issue #30, item 5): a
demand toggled every 5 s, whose room is never used, cannot turn another tenant's cluster over,
while a demand that uses its room preempts again at once."""

from __future__ import annotations

from corral.master.core import commands as cmd
from corral.master.core import events as ev
from corral.master.core.config import MasterConfig
from corral.master.core.preemption_budget import PreemptionBudget
from corral.master.core.types import TaskState
from tests.unit.core_harness import Harness, demand, of, status, task
from tests.unit.test_master_preemption import full_cluster


def _answer(h: Harness, batch: str, serving: str, out: list[cmd.Command], n: list[int]) -> None:
    """Batch takes whatever it is offered (its demand wants 8 tasks); serving declines all."""
    for sent in of(cmd.SendOffers, out):
        for offer in sent.offers:
            count = int(offer.scalars[0] + 1e-9) if sent.framework_id == batch else 0
            if count <= 0:
                h.handle(ev.Decline(**h.call_base(sent.framework_id), offer_ids=(offer.offer_id,)))
                continue
            tasks = []
            for _ in range(count):
                n[0] += 1
                tasks.append(
                    task(f"r{n[0]}", "cpus:1;mem:128", demand="work", priority_class="batch")
                )
            h.accept(batch, [offer.offer_id], *tasks, refuse=0)
            running = (status(t.task_id, batch, offer.agent_id, TaskState.RUNNING) for t in tasks)
            h.agent_updates(offer.agent_id, *running)


def _toggle_for(h: Harness, batch: str, seconds: float) -> int:
    """The serving framework sets its demand, withdraws it, and sets it again every 5 s for
    ``seconds``, never using what preemption frees; returns the batch tasks killed."""
    serving, _ = h.subscribe("serving")
    killed = 0
    n = [0]
    start = h.now
    on = False
    while h.now < start + seconds:
        on = not on
        web = (demand("web", "cpus:1;mem:128", count=4, priority_class="serving"),)
        h.set_demands(serving, *(web if on else ()))
        for _ in range(5):  # a tick a second; the victims die at once
            h.now += 1
            out = h.handle(ev.AllocationTick(**h.base(), seed=7)) + h.tick()
            for k in of(cmd.SendKill, out):
                killed += 1
                ended = status(k.task_id, k.framework_id, k.agent_id, TaskState.KILLED)
                out += h.agent_updates(k.agent_id, ended)
            _answer(h, batch, serving, out, n)
    return killed


def test_toggling_a_demand_every_5s_kills_a_bounded_number_of_tasks_in_a_minute() -> None:
    h, batch, _ = full_cluster(agents=2)  # 8 batch tasks of 1 cpu on two 4-cpu agents
    killed = _toggle_for(h, batch, 60.0)
    # One nomination of 4 victims, unused: 30 s without preemption; a second, unused: 60 s.
    # Unpaced, every set of the demand preempted again (48 kills in this minute).
    assert 0 < killed <= 8, f"{killed} batch tasks killed in 60 s by a demand that launched nothing"


def test_a_demand_that_uses_its_room_preempts_again_at_once() -> None:
    h, batch, _ = full_cluster(agents=2)
    serving, _ = h.subscribe("serving")
    h.set_demands(serving, demand("web", "cpus:1;mem:128", count=2, priority_class="serving"))
    h.now += 1
    out = h.handle(ev.AllocationTick(**h.base(), seed=7))
    victims = of(cmd.SendKill, out)
    assert len(victims) == 2
    held = []
    for k in victims:  # the hold becomes one offer when the last victim on its agent ends
        ended = h.agent_updates(k.agent_id, status(k.task_id, batch, k.agent_id, TaskState.KILLED))
        held += [
            o for c in of(cmd.SendOffers, ended) if c.framework_id == serving for o in c.offers
        ]
    assert held and sum(o.scalars[0] for o in held) == 2, "the preemptor was not offered the room"
    n = 0
    for o in held:
        tasks = [
            task(f"w{n + i}", "cpus:1;mem:128", demand="web") for i in range(int(o.scalars[0]))
        ]
        n += len(tasks)
        h.accept(serving, [o.offer_id], *tasks)
    h.now += 1
    h.handle(ev.AllocationTick(**h.base(), seed=7))  # sweeps the used nomination
    h.set_demands(serving, demand("web", "cpus:1;mem:128", count=4, priority_class="serving"))
    h.now += 1
    out = h.handle(ev.AllocationTick(**h.base(), seed=7))
    assert len(of(cmd.SendKill, out)) == 2, "a demand that used its room was held back"


def test_a_preemptor_has_a_bucket_of_victims() -> None:
    config = MasterConfig(preemption_victims_burst=3, preemption_victims_per_minute=60.0)
    h, _, _ = full_cluster(config=config, agents=2)
    serving, _ = h.subscribe("serving")
    h.set_demands(serving, demand("web", "cpus:1;mem:128", count=8, priority_class="serving"))
    h.now += 1
    out = h.handle(ev.AllocationTick(**h.base(), seed=7))
    assert len(of(cmd.SendKill, out)) == 3, "more victims than the bucket holds"


def test_the_budget_refills_and_strikes_double_then_are_forgotten() -> None:
    b = PreemptionBudget(burst=4, per_minute=60.0, backoff=30.0)
    assert b.allowance("f", "d", 0.0) == 4
    b.spent("f", 4, 0.0)
    assert b.allowance("f", "d", 0.0) == 0
    assert b.allowance("f", "d", 2.0) == 2  # one a second
    assert b.allowance("f", "d", 100.0) == 4  # never past the burst
    assert b.unused("f", "d", 100.0) == 30.0
    assert b.allowance("f", "d", 129.0) == 0 and b.allowance("f", "other", 129.0) == 4
    assert b.unused("f", "d", 131.0) == 60.0  # again before the first was forgotten: doubled
    assert b.allowance("f", "d", 190.0) == 0 and b.allowance("f", "d", 191.0) == 4
    b.used("f", "d")
    assert b.unused("f", "d", 200.0) == 30.0  # a used room cleared the strikes
    b.sweep(300.0)
    assert b.blocked_until("f", "d") is None
    b.forget("f")
    assert len(b) == 0
