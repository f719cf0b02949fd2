"""--offer-timeout: an offer outstanding too long is rescinded and its resources go back as
declined ones do, under a refuse filter that doubles while the framework keeps letting its
offers run out (offer_expiry.py; issue #41: hoarding survived Mesos' --offer_timeout)."""

from __future__ import annotations

from corral.master.core import commands as cmd
from corral.master.core import events as ev
from corral.master.core.config import MasterConfig
from tests.unit.core_harness import Harness, of, task


def _harness(offer_timeout: float = 30) -> Harness:
    return Harness(
        MasterConfig(offer_timeout=offer_timeout, agent_timeout=10**6, status_retry_interval=1000)
    )


def test_an_offer_outstanding_past_the_timeout_is_rescinded_as_declined() -> None:
    h = _harness()
    aid, _ = h.add_agent()
    fid, _ = h.subscribe()
    [offer] = h.offers_for(fid)
    assert of(cmd.SendRescind, h.tick(29)) == []
    out = h.tick(2)
    [rescind] = of(cmd.SendRescind, out)
    assert rescind.framework_id == fid and rescind.offer_ids == (offer.offer_id,)
    [event] = [c for c in of(cmd.ClusterEvent, out) if c.kind == "offers_expired"]
    assert event.subject == fid and event.message.startswith("offers of 1 agents")
    assert "not offered to it again for 60s" in event.message  # twice the timeout
    assert h.core.offers == {} and h.core.book.expired == 1
    # A refuse filter for what it held: not offered to it for twice the timeout; then again.
    assert h.offers_for(fid) == []
    h.now += 59
    assert h.offers_for(fid) == []
    h.now += 2
    [again] = h.offers_for(fid)
    assert again.agent_id == aid and list(again.scalars) == list(offer.scalars)
    assert again.offer_id != offer.offer_id


def _expire(h: Harness, fid: str) -> float:
    """Let the framework's outstanding offer run out; the filter's length."""
    assert len(h.offers_for(fid)) == 1
    h.now += 31
    [event] = [c for c in of(cmd.ClusterEvent, h.tick()) if c.kind == "offers_expired"]
    seconds = float(event.message.split("not offered to it again for ")[1].split("s")[0])
    h.now += seconds + 0.5
    return seconds


def test_the_filter_doubles_while_offers_keep_expiring_and_an_answer_resets_it() -> None:
    h = _harness()
    h.add_agent()
    fid, _ = h.subscribe()
    assert [_expire(h, fid) for _ in range(4)] == [60, 120, 240, 480]
    [offer] = h.offers_for(fid)
    h.handle(ev.Decline(**h.call_base(fid), offer_ids=(offer.offer_id,), refuse_seconds=0))
    assert _expire(h, fid) == 60  # it answered: the streak starts again
    assert [_expire(h, fid) for _ in range(8)][-2:] == [60 * 2**6, 60 * 2**6]  # the cap


def test_an_innocent_framework_gets_the_agent_while_a_hoarder_waits() -> None:
    h = _harness()
    aid, _ = h.add_agent()
    hoarder, _ = h.subscribe("hoarder")
    [held] = h.offers_for(hoarder)
    innocent, _ = h.subscribe("innocent")
    assert h.offers_for(innocent) == []  # the hoarder holds it
    h.tick(31)
    for _ in range(5):  # the innocent is offered it, declines briefly, and is offered it again
        [offer] = h.offers_for(innocent)
        assert offer.agent_id == aid
        h.handle(ev.Decline(**h.call_base(innocent), offer_ids=(offer.offer_id,), refuse_seconds=1))
        h.now += 2
    assert held.offer_id not in h.core.offers


def test_a_revive_does_not_lift_the_filters_of_expired_offers() -> None:
    h = _harness()
    h.add_agent()
    fid, _ = h.subscribe()
    h.offers_for(fid)
    h.tick(31)
    h.handle(ev.Revive(**h.call_base(fid)))
    assert h.offers_for(fid) == []  # a hoarder cannot wave its penalty away
    h.now += 61
    h.handle(ev.Revive(**h.call_base(fid)))
    assert len(h.offers_for(fid)) == 1
    assert h.core.expiries.holds == {fid: h.core.expiries.holds[fid]}
    h.tick()
    assert h.core.expiries.holds == {}  # ended holds are dropped


def test_a_removed_frameworks_expiries_are_forgotten() -> None:
    h = _harness()
    h.add_agent()
    fid, _ = h.subscribe()
    h.offers_for(fid)
    h.tick(31)
    assert h.core.expiries.streak == {fid: 1}
    h.handle(ev.Teardown(**h.call_base(fid)))
    assert h.core.expiries.streak == {} and h.core.expiries.holds == {}


def test_only_offers_older_than_the_timeout_expire() -> None:
    h = _harness()
    h.add_agent()
    fid, _ = h.subscribe()
    [first] = h.offers_for(fid)
    h.now += 20
    h.add_agent()
    [second] = h.offers_for(fid)  # the first agent's offer is still out
    [rescind] = of(cmd.SendRescind, h.tick(11))
    assert rescind.offer_ids == (first.offer_id,)
    assert set(h.core.offers) == {second.offer_id}
    [rescind] = of(cmd.SendRescind, h.tick(20))
    assert rescind.offer_ids == (second.offer_id,)


def test_answered_offers_are_not_rescinded_later() -> None:
    h = _harness()
    h.add_agent()
    h.add_agent()
    fid, _ = h.subscribe()
    declined, accepted = h.offers_for(fid)
    h.handle(ev.Decline(**h.call_base(fid), offer_ids=(declined.offer_id,), refuse_seconds=100))
    h.accept(fid, [accepted.offer_id], task("t1"), refuse=100)
    out = h.tick(31)
    assert of(cmd.SendRescind, out) == []
    assert h.core.book.expired == 0


def test_a_disconnected_frameworks_offers_are_taken_back_not_expired() -> None:
    h = _harness()
    h.add_agent()
    fid, _ = h.subscribe()
    h.offers_for(fid)
    h.handle(ev.FrameworkStreamClosed(**h.base(), framework_id=fid, stream_id=h.streams[fid]))
    assert of(cmd.SendRescind, h.tick(31)) == []


def test_a_zero_timeout_never_expires_offers() -> None:
    h = _harness(offer_timeout=0)
    h.add_agent()
    fid, _ = h.subscribe()
    [offer] = h.offers_for(fid)
    assert of(cmd.SendRescind, h.tick(10_000)) == []
    assert set(h.core.offers) == {offer.offer_id}
