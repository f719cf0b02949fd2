"""A lower-priority gang cannot hold back higher-priority work (gangs.py rule 5; issue #30,
item 4: a 16-member batch gang that ignored or declined its bundles on a 16-cpu cluster kept a
serving demand of 8 at 0 tasks for 140 s)."""

from __future__ import annotations

from corral.master.core import commands as cmd
from corral.master.core import events as ev
from tests.unit.core_harness import Harness, demand, of, task

GANG = demand("train", "cpus:1;mem:128", count=16, min_member=16, priority_class="batch")
WEB = demand("web", "cpus:1;mem:128", count=8, priority_class="serving")


def _cluster() -> tuple[Harness, str, str]:
    h = Harness()
    for _ in range(2):
        h.add_agent(resources="cpus:8;mem:8192")
    gang, _ = h.subscribe("gang")
    serving, _ = h.subscribe("serving")
    return h, gang, serving


def _tick(h: Harness) -> list[cmd.Command]:
    h.now += 1
    return h.handle(ev.AllocationTick(**h.base(), seed=5)) + h.tick()


def _cpus_to(fid: str, out: list[cmd.Command]) -> float:
    return sum(
        o.scalars[0] for c in of(cmd.SendOffers, out) if c.framework_id == fid for o in c.offers
    )


def test_an_ignored_lower_bundle_is_rescinded_for_a_higher_demand_with_no_room() -> None:
    h, gang, serving = _cluster()
    h.set_demands(serving, demand("web", "cpus:1;mem:128", count=1, priority_class="serving"))
    h.set_demands(gang, GANG)
    h.core.frameworks[serving].suppressed = True  # (as if asleep while the gang is cut)
    h.core.sync_allocator(h.core.frameworks[serving])
    out = _tick(h)
    assert _cpus_to(gang, out) == 16  # alone, the gang gets its bundle; it never answers
    h.handle(ev.Revive(**h.call_base(serving)))
    h.set_demands(serving, WEB)
    out = _tick(h)
    rescinds = [c for c in of(cmd.SendRescind, out) if c.framework_id == gang]
    assert len(rescinds) == 1 and len(rescinds[0].offer_ids) == 2
    assert _cpus_to(serving, out) == 16, "serving waited behind the batch gang's bundle"
    assert not h.core.book.gangs, "the gang was cut again before serving was offered"
    events = [c for c in of(cmd.ClusterEvent, out) if c.kind == "offers_rescinded"]
    assert events and "demand web" in events[0].message


def test_a_lower_gang_is_cut_after_the_regular_cycle_from_what_it_left() -> None:
    h, gang, serving = _cluster()
    h.set_demands(serving, WEB)
    h.set_demands(gang, GANG)
    out = _tick(h)
    assert not h.core.book.gangs and _cpus_to(serving, out) == 16
    # Serving takes 8 and returns the rest: the gang's 16 do not fit in 8, nothing is held.
    for c in of(cmd.SendOffers, out):
        for o in c.offers:
            tasks = [task(f"w{o.agent_id}{i}", "cpus:1;mem:128", demand="web") for i in range(4)]
            h.accept(serving, [o.offer_id], *tasks, refuse=0)
    out = _tick(h)
    assert not h.core.book.gangs
    # A gang of 8 fits what serving left, after serving's demand is met.
    h.set_demands(
        gang, demand("train", "cpus:1;mem:128", count=8, min_member=8, priority_class="batch")
    )
    out = _tick(h)
    assert _cpus_to(gang, out) == 8 and len(h.core.book.gangs) == 1


def test_a_declined_bundle_is_held_back_for_its_refuse_time() -> None:
    """(Held by the decline's refuse filters, which room honours whatever their amounts: a
    guard for rule 5's last sentence.)"""
    h = Harness()
    h.add_agent(resources="cpus:32;mem:8192")  # the bundle is a slice of the agent
    gang, _ = h.subscribe("gang")
    h.set_demands(gang, GANG)
    out = _tick(h)
    ids = tuple(o.offer_id for c in of(cmd.SendOffers, out) for o in c.offers if o.gang_id)
    assert ids
    h.handle(ev.Decline(**h.call_base(gang), offer_ids=ids, refuse_seconds=10.0))
    for _ in range(9):
        out = _tick(h)
        assert not any(o.gang_id for c in of(cmd.SendOffers, out) for o in c.offers), (
            "a declined bundle was cut again within its refuse time"
        )
    out = _tick(h)
    out += _tick(h)
    assert any(o.gang_id for c in of(cmd.SendOffers, out) for o in c.offers)
