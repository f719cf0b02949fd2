"""--offer-timeout: an offer outstanding too long is rescinded and its resources go back as
after a decline without a filter (Mesos' --offer_timeout)."""

from __future__ import annotations

from corral.master.core import commands as cmd
from corral.master.core import events as ev
from corral.master.core.config import MasterConfig
from tests.unit.core_harness import Harness, of, task


def _harness(offer_timeout: float = 30) -> Harness:
    return Harness(
        MasterConfig(offer_timeout=offer_timeout, agent_timeout=10**6, status_retry_interval=1000)
    )


def test_an_offer_outstanding_past_the_timeout_is_rescinded_and_offered_again() -> None:
    h = _harness()
    aid, _ = h.add_agent()
    fid, _ = h.subscribe()
    [offer] = h.offers_for(fid)
    assert of(cmd.SendRescind, h.tick(29)) == []
    out = h.tick(2)
    [rescind] = of(cmd.SendRescind, out)
    assert rescind.framework_id == fid and rescind.offer_ids == (offer.offer_id,)
    [event] = [c for c in of(cmd.ClusterEvent, out) if c.kind == "offers_expired"]
    assert event.subject == fid and event.message.startswith("1 offers")
    assert h.core.offers == {} and h.core.book.expired == 1
    # No refuse filter: the same resources are offered again in the next cycle.
    [again] = h.offers_for(fid)
    assert again.agent_id == aid and list(again.scalars) == list(offer.scalars)
    assert again.offer_id != offer.offer_id


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
