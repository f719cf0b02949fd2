"""The hand-assembled OFFERS bytes parse to exactly what protobuf builds from the same offers,
whatever the ids, resources, ports, attributes and taints, and however an agent changes between
offers (the encoder caches each agent's part). Offers come as the book's columns
(offer_columns.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corral.master.core.offer_columns import OfferColumns
from corral.master.core.records import OfferRecord
from corral.master.core.types import AgentSpec
from corral.master.wire import convert
from corral.master.wire.encoded import serialized, varint
from corral.master.wire.offers import OfferEncoder
from corral.placement import Taint, TaintEffect
from corral.resources import Resources
from corral.v1 import common_pb2, scheduler_pb2

text = st.text(max_size=300)  # past 127 bytes a length takes two varint bytes
scalars = st.lists(st.floats(min_value=0, max_value=1e12, allow_nan=False), min_size=4, max_size=4)
ports_of = st.lists(
    st.tuples(st.integers(1, 30000), st.integers(0, 30000)).map(lambda r: (r[0], r[0] + r[1])),
    max_size=3,
).map(tuple)
attributes = st.dictionaries(text, text, max_size=3)
taints = st.lists(st.builds(Taint, text, text, st.sampled_from(list(TaintEffect))), max_size=3).map(
    tuple
)


@st.composite
def offer_batches(draw: st.DrawFn) -> list[list[OfferColumns]]:
    """OFFERS messages, each a list of one framework's batches of columns."""
    agents = draw(st.lists(st.tuples(text, text), min_size=1, max_size=4, unique_by=lambda a: a[0]))
    specs = {
        aid: AgentSpec(aid, host, Resources(), draw(attributes), draw(taints))
        for aid, host in agents
    }
    messages = []
    for _ in range(draw(st.integers(1, 4))):
        fid = draw(text)
        message = []
        for _ in range(draw(st.integers(0, 3))):
            aids, made, rows, ports = [], [], [], {}
            for i in range(draw(st.integers(0, 5))):
                aid = draw(st.sampled_from(sorted(specs)))
                if draw(st.booleans()):  # the agent re-registered with new attributes, taints
                    old = specs[aid]
                    specs[aid] = AgentSpec(
                        aid, old.hostname, Resources(), draw(attributes), draw(taints)
                    )
                aids.append(aid)
                made.append(specs[aid])
                rows.append(draw(scalars))
                carried = draw(ports_of)
                if carried:
                    ports[i] = carried
            gang = draw(st.sampled_from(["", "", "m1-G7", draw(text)]))  # gang offers: some
            base = draw(st.integers(1, 2**62))
            table = np.array(rows, dtype=np.float64).reshape(-1, 4)
            revocable = not gang and draw(st.booleans())  # revocable batches: some
            message.append(
                OfferColumns(
                    draw(text), base, fid, aids, made, table, ports, 0.0, gang, revocable=revocable
                )
            )
        messages.append(message)
    return messages


def records(batches: list[OfferColumns]) -> list[OfferRecord]:
    return [r for b in batches for r in b.records()]


def expected(offers: list[OfferRecord]) -> scheduler_pb2.Event:
    event = scheduler_pb2.Event(offers=scheduler_pb2.Offers())
    for o in offers:
        convert.offer_to_pb(o, event.offers.offers.add())
    return event


@settings(max_examples=300, deadline=None)
@given(offer_batches())
def test_encoded_offers_parse_to_what_protobuf_builds(messages: list[list[OfferColumns]]) -> None:
    encoder = OfferEncoder()
    for batches in messages:
        got = scheduler_pb2.Event.FromString(encoder.event(batches))
        assert got == expected(records(batches))
        assert got.WhichOneof("event") == "offers"


@given(st.integers(0, 2**63))
def test_varint_matches_protobuf(n: int) -> None:
    from google.protobuf.internal import encoder  # protobuf's own varint writer

    assert varint(n) == encoder._VarintBytes(n)


def one(
    oid_base: int, fid: str, spec: AgentSpec, row: list[float], ports: object = ()
) -> OfferColumns:
    carried = {0: ports} if ports else {}
    rows = np.array([row], dtype=np.float64)
    return OfferColumns("o", oid_base, fid, [spec.agent_id], [spec], rows, carried, 0.0)  # type: ignore[arg-type]


def test_an_agent_changing_resources_is_encoded_afresh() -> None:
    encoder = OfferEncoder()
    spec = AgentSpec("a", "h", Resources())
    encoder.event([one(1, "f", spec, [24.0, 4096.0, 0.0, 0.0])])
    later = one(2, "f", spec, [23.0, 3968.0, 0.0, 0.0], ((31000, 31005),))
    [offer] = scheduler_pb2.Event.FromString(encoder.event([later])).offers.offers
    assert (offer.id, offer.resources.cpus, offer.resources.mem) == ("o2", 23.0, 3968.0)
    assert [(r.begin, r.end) for r in offer.resources.ports] == [(31000, 31005)]


def test_an_agent_registered_again_is_encoded_afresh() -> None:
    encoder = OfferEncoder()
    row = [1.0, 1.0, 0.0, 0.0]
    encoder.event([one(1, "f", AgentSpec("a", "h", Resources(), {"zone": "a"}), row)])
    moved = AgentSpec("a", "h2", Resources(), {"zone": "b"})
    [offer] = scheduler_pb2.Event.FromString(encoder.event([one(2, "f", moved, row)])).offers.offers
    assert (offer.hostname, dict(offer.attributes)) == ("h2", {"zone": "b"})


def test_an_agent_that_carried_ports_is_encoded_afresh_without_them() -> None:
    # Same scalars and description, ports gone: the cached part with ports must not be reused.
    encoder = OfferEncoder()
    spec = AgentSpec("a", "h", Resources())
    row = [2.0, 64.0, 0.0, 0.0]
    encoder.event([one(1, "f", spec, row, ((31000, 31005),))])
    [offer] = scheduler_pb2.Event.FromString(encoder.event([one(2, "f", spec, row)])).offers.offers
    assert (offer.id, offer.resources.cpus, list(offer.resources.ports)) == ("o2", 2.0, [])


@settings(max_examples=100, deadline=None)
@given(
    st.integers(1, 17).flatmap(lambda k: st.integers(max(1, 10**k - 40), 10**k + 5)),
    st.integers(1, 60),
    st.text(max_size=200),
    st.integers(0, 2),
)
def test_batches_whose_ids_cross_a_power_of_ten_parse_to_what_protobuf_builds(
    base: int, n: int, prefix: str, rounds: int
) -> None:
    """Larger batches than offer_batches() draws, ids of two lengths in one batch, and the
    agents cached from earlier rounds: the encoder's fast and general paths agree with
    protobuf."""
    encoder = OfferEncoder()
    specs = [AgentSpec(f"agent-{i}", f"host-{i}" * (i % 5), Resources()) for i in range(n)]
    table = np.array([[float(i), 2.0 * i, 0.0, 0.0] for i in range(n)], dtype=np.float64)
    for r in range(rounds + 1):
        aids = [s.agent_id for s in specs]
        batch = OfferColumns(prefix, base + r * n, "fw", aids, list(specs), table, {}, 0.0)
        got = scheduler_pb2.Event.FromString(encoder.event([batch]))
        assert got == expected(records([batch]))


def test_one_event_holds_one_frameworks_offers() -> None:
    spec = AgentSpec("a", "h", Resources())
    a = one(1, "f1", spec, [1.0, 1.0, 0.0, 0.0])
    b = one(2, "f2", spec, [1.0, 1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="one framework"):
        OfferEncoder().event([a, b])


def test_the_stream_serializer_passes_bytes_through_and_serializes_events() -> None:
    beat = scheduler_pb2.Event(heartbeat=scheduler_pb2.Heartbeat())
    assert serialized(b"\x12\x00") == b"\x12\x00"
    assert serialized(beat) == beat.SerializeToString()


@settings(max_examples=200, deadline=None)
@given(offer_batches(), st.integers(0, 2000))
def test_offers_split_by_size_parse_to_the_same_offers_each_event_under_the_bound(
    messages: list[list[OfferColumns]], max_bytes: int
) -> None:
    encoder = OfferEncoder()
    for batches in messages:
        events = [scheduler_pb2.Event.FromString(b) for b in encoder.events(batches, max_bytes)]
        got = [o for e in events for o in e.offers.offers]
        assert got == list(expected(records(batches)).offers.offers)
        for event in events:
            # Only an offer larger than the bound on its own may take an event past it.
            assert event.offers.ByteSize() <= max_bytes or len(event.offers.offers) == 1
        assert len(events) == 1 or all(e.offers.offers for e in events)


def test_an_offer_carries_its_agent_taints_and_a_change_is_encoded_afresh() -> None:
    # Issue #40, defect 6: sdk.view(offer).taints was () for a tainted agent.
    encoder = OfferEncoder()
    row = [1.0, 1.0, 0.0, 0.0]
    spot = Taint("spot", "true", TaintEffect.PREFER_NO_SCHEDULE)
    [offer] = scheduler_pb2.Event.FromString(
        encoder.event([one(1, "f", AgentSpec("a", "h", Resources(), {}, (spot,)), row)])
    ).offers.offers
    assert [(t.key, t.value, t.effect) for t in offer.taints] == [
        ("spot", "true", common_pb2.TaintEffect.TAINT_EFFECT_PREFER_NO_SCHEDULE)
    ]
    gpu = Taint("gpu-sku", "inference", TaintEffect.NO_SCHEDULE)
    again = AgentSpec("a", "h", Resources(), {}, (gpu,))  # registered again with another taint
    [offer] = scheduler_pb2.Event.FromString(encoder.event([one(2, "f", again, row)])).offers.offers
    assert [t.key for t in offer.taints] == ["gpu-sku"]
