"""A unit of the allocation tick that raises quarantines its demand, and the tick goes on for
everyone else (master/core/quarantine.py; issue #30, item 3). Faults are injected into the
pure parts each pass runs (a gang's cut, a preemption search, a why-pending test)."""

from __future__ import annotations

import pytest

from corral.master.core import allocation_tick, nominations, pending, quarantine
from corral.master.core import commands as cmd
from corral.master.core import events as ev
from corral.master.core.config import MasterConfig
from tests.unit.core_harness import Harness, demand, of
from tests.unit.test_master_preemption import full_cluster


def _tick(h: Harness) -> list[cmd.Command]:
    h.now += 1
    return h.handle(ev.AllocationTick(**h.base(), seed=3))


def _quarantined(out: list[cmd.Command]) -> list[cmd.ClusterEvent]:
    return [c for c in of(cmd.ClusterEvent, out) if c.kind == "demand_quarantined"]


def test_a_gang_cut_that_raises_quarantines_its_demand_and_others_are_offered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    h = Harness()
    h.add_agent(resources="cpus:16;mem:8192")
    bad, _ = h.subscribe("bad")
    good, _ = h.subscribe("good")
    h.set_demands(bad, demand("poison", "cpus:1;mem:64", count=4, min_member=4))
    h.set_demands(good, demand("fine", "cpus:1;mem:64", count=4, min_member=4))
    real = allocation_tick._cut

    def cut(core, fw, d, members, now):  # type: ignore[no-untyped-def]
        if d.name == "poison":
            raise KeyError("a bug the tick cannot handle")
        return real(core, fw, d, members, now)

    monkeypatch.setattr(allocation_tick, "_cut", cut)
    out = _tick(h)
    (event,) = _quarantined(out)
    assert event.subject == f"{bad}/poison" and "gang cut failed (KeyError" in event.message
    assert any(c.framework_id == good for c in of(cmd.SendOffers, out)), "the tick stopped"
    assert h.core.quarantine.take_failures() == {"gang cut": 1}
    # Skipped for its backoff, then tried again: still failing, the backoff doubles.
    for _ in range(int(quarantine.BACKOFF) - 1):
        assert not _quarantined(_tick(h))
    again = _quarantined(_tick(h) + _tick(h))
    assert len(again) == 1 and "for 60s (failure 2 in a row)" in again[0].message
    # Fixed (the input changed): tried after its backoff and the record is cleared.
    monkeypatch.setattr(allocation_tick, "_cut", real)
    h.now += 2 * quarantine.BACKOFF
    out = _tick(h)
    assert not _quarantined(out) and len(h.core.quarantine) == 0
    assert any(c.framework_id == bad for c in of(cmd.SendOffers, out))


def test_a_preemption_search_that_raises_quarantines_only_its_demand(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    h, _, _ = full_cluster(agents=2)
    bad, _ = h.subscribe("bad")
    good, _ = h.subscribe("good")
    h.set_demands(bad, demand("poison", "cpus:1;mem:64", count=1, priority_class="serving"))
    h.set_demands(good, demand("web", "cpus:1;mem:64", count=1, priority_class="serving"))
    real = nominations._search

    def search(core, fw, d, *rest):  # type: ignore[no-untyped-def]
        if d.name == "poison":
            raise OverflowError("int too big to convert")
        return real(core, fw, d, *rest)

    monkeypatch.setattr(nominations, "_search", search)
    out = _tick(h)
    assert [e.subject for e in _quarantined(out)] == [f"{bad}/poison"]
    assert len(of(cmd.SendKill, out)) == 1, "the other demand did not preempt"


def test_a_why_pending_test_that_raises_quarantines_its_demand(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    h = Harness(config=MasterConfig(pending_event_interval=1.0))
    h.add_agent(resources="cpus:2;mem:1024")
    fw, _ = h.subscribe("fw")
    h.set_demands(fw, demand("big", "cpus:1.5;mem:64", count=5), demand("odd", "cpus:1.7", count=1))
    real = pending._test

    def test(core, f, d, *rest):  # type: ignore[no-untyped-def]
        if d.name == "odd":
            raise ValueError("bad data")
        return real(core, f, d, *rest)

    monkeypatch.setattr(pending, "_test", test)
    out = _tick(h)
    assert [e.subject for e in _quarantined(out)] == [f"{fw}/odd"]
    assert of(cmd.SendOffers, out), "the tick stopped"
