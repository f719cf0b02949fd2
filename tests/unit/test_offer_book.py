"""The offer book keeps offers as columns found from their ids by arithmetic (offer_book.py):
ids that only look like its own are unknown, and whatever mix of cycles, declines, accepts,
rescinds, expiries and agents and frameworks coming and going, the offers it holds are
exactly those the frameworks were sent and not yet told are gone."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from corral.master.core import commands as cmd
from corral.master.core import events as ev
from corral.master.core.config import MasterConfig
from corral.master.core.master import CallRejected
from corral.master.core.pacing import allowance_cut
from tests.unit.core_harness import Harness, of, task


def _one_offer() -> tuple[Harness, str, str]:
    h = Harness()
    fid, _ = h.subscribe()
    h.add_agent(resources="cpus:4;mem:4096")
    (offer,) = h.offers_for(fid)
    return h, fid, offer.offer_id


@pytest.mark.parametrize(
    "forged",
    [
        "m1-O+1",  # int() takes a sign,
        "m1-O01",  # leading zeros,
        "m1-O 1",  # spaces,
        "m1-O1_0",  # underscores
        "m1-O\u0661",  # and non-ASCII digits (ARABIC-INDIC DIGIT ONE)
        "m1-O",
        "m1-O99",  # past the last batch
        "m1-O" + "9" * 30,  # past int64
        "m1-O0",  # before the first
        "m2-O1",  # another master's
        "",
    ],
)
def test_an_id_that_only_looks_like_an_offer_is_unknown(forged: str) -> None:
    h, fid, real = _one_offer()
    assert real == "m1-O1"
    with pytest.raises(CallRejected, match="unknown, rescinded or already used"):
        h.accept(fid, [forged], task("t1"))
    h.handle(ev.Decline(**h.call_base(fid), offer_ids=(forged,), refuse_seconds=0))
    assert list(h.core.offers) == [real]  # the decline returned nothing
    assert forged not in h.core.offers


def test_an_offer_used_or_declined_is_gone_and_its_id_is_not_reused() -> None:
    h, fid, first = _one_offer()
    h.handle(ev.Decline(**h.call_base(fid), offer_ids=(first,), refuse_seconds=0))
    assert first not in h.core.offers
    (again,) = h.offers_for(fid)
    assert again.offer_id != first
    with pytest.raises(CallRejected, match="unknown"):
        h.accept(fid, [first], task("t1"))
    h.accept(fid, [again.offer_id], task("t1"))
    assert len(h.core.offers) == 0


def test_a_decline_in_any_order_returns_exactly_the_offers_it_names() -> None:
    h = Harness()
    fid, _ = h.subscribe()
    for _ in range(6):
        h.add_agent(resources="cpus:4;mem:4096")
    ids = [o.offer_id for o in h.offers_for(fid)]
    assert len(ids) == 6
    named = [ids[4], ids[0], "m1-O999", ids[3], ids[1]]  # out of order, a gap, an unknown id
    h.handle(ev.Decline(**h.call_base(fid), offer_ids=tuple(named), refuse_seconds=0))
    assert set(h.core.offers) == {ids[2], ids[5]}


def test_another_frameworks_offer_is_not_yours_to_decline() -> None:
    h = Harness()
    a, _ = h.subscribe("a")
    b, _ = h.subscribe("b")
    for _ in range(2):
        h.add_agent(resources="cpus:4;mem:4096")
    batches = h.allocate()
    mine = {c.framework_id: [o.offer_id for o in c.offers] for c in batches}
    assert set(mine) == {a, b}
    h.handle(ev.Decline(**h.call_base(a), offer_ids=tuple(mine[b]), refuse_seconds=0))
    assert set(h.core.offers) == set(mine[a]) | set(mine[b])


class OfferBookMachine(RuleBasedStateMachine):
    """Random cycles, declines, accepts, agents and frameworks coming and going, and the
    offer timeout, against a model: the ids sent in OFFERS less those used, declined or
    RESCINDed. The harness runs the core's validate() (the book's own rules among them)
    after every event."""

    def __init__(self) -> None:
        super().__init__()
        self.h = Harness(config=MasterConfig(offer_timeout=30.0))
        self.h.core.book.bases_slack = 0  # compact the bases as often as it can
        self.model: dict[str, str] = {}  # offer id -> framework id
        self.frameworks: list[str] = []
        self.agents: list[str] = []
        self.tasks = 0
        self.gone: dict[str, str] = {}  # offer id -> framework id, of offers no longer out

    def _apply(self, commands: list[cmd.Command]) -> None:
        for c in of(cmd.SendOffers, commands):
            for o in c.offers:
                assert o.offer_id not in self.model, "an id was handed out twice"
                self.model[o.offer_id] = c.framework_id
        for r in of(cmd.SendRescind, commands):
            for oid in r.offer_ids:
                assert self.model.pop(oid) == r.framework_id
                self.gone[oid] = r.framework_id

    @initialize()
    def a_small_cluster(self) -> None:
        """Three agents and a framework to start from: a cycle then makes a batch of several
        offers, which declines and accepts leave partly outstanding."""
        for _ in range(3):
            self.add_agent(2)
        self.subscribe()

    @rule(cpus=st.sampled_from([1, 2, 4]))
    def add_agent(self, cpus: int) -> None:
        aid, out = self.h.add_agent(resources=f"cpus:{cpus};mem:4096")
        self.agents.append(aid)
        self._apply(out)

    @precondition(lambda self: self.agents)
    @rule(pick=st.integers(0, 100))
    def lose_agent(self, pick: int) -> None:
        aid = self.agents.pop(pick % len(self.agents))
        self._apply(self.h.close_agent(aid))

    @precondition(lambda self: len(self.frameworks) < 4)
    @rule()
    def subscribe(self) -> None:
        fid, out = self.h.subscribe(f"fw{len(self.frameworks)}")
        self.frameworks.append(fid)
        self._apply(out)

    @precondition(lambda self: self.frameworks)
    @rule(pick=st.integers(0, 100))
    def framework_goes(self, pick: int) -> None:
        fid = self.frameworks.pop(pick % len(self.frameworks))
        out = self.h.handle(
            ev.FrameworkStreamClosed(
                **self.h.base(), framework_id=fid, stream_id=self.h.streams[fid]
            )
        )
        self._apply(out)
        for oid in [o for o, f in self.model.items() if f == fid]:
            del self.model[oid]  # taken back without a RESCIND: the stream is gone

    @rule()
    def cycle(self) -> None:
        self._apply(self.h.handle(ev.AllocationTick(**self.h.base(), seed=7)))

    @precondition(lambda self: self.model)
    @rule(data=st.data())
    def decline(self, data: st.DataObject) -> None:
        fid = data.draw(st.sampled_from(sorted(set(self.model.values()))))
        mine = sorted(o for o, f in self.model.items() if f == fid)
        ids = data.draw(st.lists(st.sampled_from(mine), unique=True, min_size=1))
        self._apply(
            self.h.handle(
                ev.Decline(**self.h.call_base(fid), offer_ids=tuple(ids), refuse_seconds=0)
            )
        )
        for oid in ids:
            self.gone[oid] = self.model.pop(oid)
        # Gone at once, however much of its batch is still out.
        with pytest.raises(CallRejected, match="unknown, rescinded or already used"):
            self.h.accept(fid, ids[:1], task("never", "cpus:0.5;mem:16"))

    @precondition(lambda self: self.model)
    @rule(pick=st.integers(0, 1000))
    def accept_one(self, pick: int) -> None:
        oid = sorted(self.model)[pick % len(self.model)]
        fid = self.model[oid]
        self.tasks += 1
        cpus, mem = self.h.core.offers[oid].scalars[:2]  # what is left may be all memory
        shape = f"cpus:{min(cpus, 0.5):g};mem:{min(mem, 16.0):g}"
        self._apply(self.h.accept(fid, [oid], task(f"t{self.tasks}", shape)))
        self.gone[oid] = self.model.pop(oid)

    @precondition(lambda self: self.gone)
    @rule(pick=st.integers(0, 1000))
    def use_a_gone_offer(self, pick: int) -> None:
        oid = sorted(self.gone)[pick % len(self.gone)]
        fid = self.gone[oid]
        if fid not in self.frameworks:
            return
        with pytest.raises(CallRejected, match="unknown, rescinded or already used"):
            self.h.accept(fid, [oid], task("never", "cpus:0.5;mem:16"))
        self._apply(
            self.h.handle(ev.Decline(**self.h.call_base(fid), offer_ids=(oid,), refuse_seconds=0))
        )

    @rule(seconds=st.sampled_from([1.0, 31.0]))
    def time_passes(self, seconds: float) -> None:
        self._apply(self.h.tick(seconds))  # past the offer timeout: rescinded

    @invariant()
    def the_book_holds_what_the_frameworks_were_told(self) -> None:
        assert set(self.h.core.offers) == set(self.model)
        for oid, fid in self.model.items():
            assert self.h.core.offers[oid].framework_id == fid
        for fid in self.frameworks:
            want = sorted(o for o, f in self.model.items() if f == fid)
            assert sorted(o.offer_id for o in self.h.core.book.of_framework(fid)) == want


TestOfferBook = OfferBookMachine.TestCase
TestOfferBook.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)


def test_an_offer_waited_from_when_its_agent_came_back() -> None:
    """The offer latency (freed -> offered) counts from the earliest return not yet offered."""
    h = Harness()
    fid, _ = h.subscribe()
    h.add_agent(resources="cpus:4;mem:4096")  # registered at 1000.0: back in the pool
    h.now += 0.5
    (offer,) = h.offers_for(fid)
    assert h.core.take_offer_waits() == [0.5]
    h.now += 0.25
    h.handle(ev.Decline(**h.call_base(fid), offer_ids=(offer.offer_id,), refuse_seconds=0))
    h.now += 0.125
    h.allocate()
    assert h.core.take_offer_waits() == [0.125]
    h.allocate()  # nothing came back: nothing offered, nothing waited
    assert h.core.take_offer_waits() == []


def _cut_by_loop(cpus: list[float], allowance: float) -> tuple[int, float]:
    cut = 0
    for c in cpus:
        if allowance <= 0:
            break
        allowance -= c
        cut += 1
    return cut, allowance


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.floats(0, 64, allow_nan=False), max_size=40),
    st.one_of(st.floats(-8, 600, allow_nan=False), st.just(float("inf"))),
)
def test_the_allowance_cut_takes_what_a_loop_taking_one_entry_at_a_time_takes(
    cpus: list[float], allowance: float
) -> None:
    # Bit for bit: the remainders are subtracted in the same order as the loop's.
    assert allowance_cut(np.array(cpus, dtype=np.float64), allowance) == _cut_by_loop(
        cpus, allowance
    )
