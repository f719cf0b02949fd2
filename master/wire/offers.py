"""OFFERS events written straight to protobuf wire bytes, the per-agent part cached.

An offer is a new id and framework on an agent's unchanged description: between two offers of
the same agent only the id, the framework and (when tasks come and go) the resources differ.
Building a ``pb.Offer`` per offer and serializing the batch cost ~3 µs an offer, the largest
single cost of the decline load test after gRPC itself. Here the agent's fields (agent_id,
hostname, resources, attributes, taints) are serialized once by protobuf and kept while they
stay the same; each offer adds only its id and framework id in front of them. Concatenated
fields are a valid message (protobuf parses fields in any order), and
``tests/unit/test_offer_wire.py`` holds the bytes to what protobuf itself makes of the same
offers.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from corral.master.core.offer_columns import OfferColumns
from corral.master.core.records import OfferRecord
from corral.master.core.types import AgentSpec
from corral.master.wire import convert
from corral.master.wire.encoded import delimited, varint
from corral.resources import PortRanges
from corral.v1 import common_pb2 as pb

# Field keys: (field number << 3) | 2, the length-delimited wire type.
_EVENT_OFFERS = b"\x12"  # Event.offers = 2
_OFFERS_OFFER = b"\x0a"  # Offers.offers = 1
_OFFER_ID = b"\x0a"  # Offer.id = 1
_OFFER_FRAMEWORK = b"\x12"  # Offer.framework_id = 2
_OFFER_GANG = b"\x42"  # Offer.gang_id = 8
_OFFER_REVOCABLE = b"\x48\x01"  # Offer.revocable = 9 (varint), true
# Marks a cached agent part made with ports (see OfferEncoder._tails).
_CARRIES_PORTS = b"+ports"

# Agents whose cached part is kept; past this the cache starts over (agents that left).
CACHE_LIMIT = 100_000


# An offer's key and length in Offers, by length, for lengths of up to two varint bytes.
_OFFER_HEADS = [_OFFERS_OFFER + varint(n) for n in range(1 << 14)]


class OfferEncoder:
    """Encodes OFFERS events; one per master, so the agent cache lasts across cycles."""

    def __init__(self) -> None:
        # agent id -> (key, ports, spec, serialized fields 3-7): the key is the scalars as
        # float64 bytes, marked when the part carries ports; the spec as the agent registered it
        # (a re-registration makes a new one): its hostname, attributes and taints.
        self._agents: dict[str, tuple[bytes, object, AgentSpec, bytes]] = {}
        self._frameworks: dict[str, bytes] = {}

    def event(self, batches: Sequence[OfferColumns]) -> bytes:
        """A serialized ``Event{offers}`` holding the offers of ``batches`` (all of one
        framework)."""
        return self.events(batches, max_bytes=None)[0]

    def events(self, batches: Sequence[OfferColumns], max_bytes: int | None) -> list[bytes]:
        """The offers of ``batches`` (all of one framework; every entry, as made) as
        serialized ``Event{offers}``s, as few as hold them with each event's offers at most
        ``max_bytes`` long (one offer larger than that still goes, alone): a framework refuses
        a message past its size limit and loses its stream, and a large cluster's descriptions
        can add up past it in one cycle."""
        if not batches:
            return [delimited(_EVENT_OFFERS, b"")]
        fid = batches[0].framework_id
        fw = self._frameworks.get(fid)
        if fw is None:
            if len(self._frameworks) >= CACHE_LIMIT:
                self._frameworks.clear()
            fw = self._frameworks[fid] = delimited(_OFFER_FRAMEWORK, fid.encode())
        runs: list[_Run] = []
        for batch in batches:
            if batch.framework_id != fid:
                raise ValueError("one OFFERS event holds offers of one framework")
            runs.append(self._run(batch, fw))
        size = sum(r.size for r in runs)
        if max_bytes is None or size <= max_bytes:
            parts = runs[0].parts if len(runs) == 1 else [p for r in runs for p in r.parts]
            return [delimited(_EVENT_OFFERS, b"".join(parts))]
        return _events([piece for r in runs for piece in r.pieces()], max_bytes)

    def _run(self, batch: OfferColumns, fw: bytes) -> _Run:
        """The batch's offers as they go in ``Offers.offers``, each: key, length, then its
        fields: the id (key, length, bytes), the framework, the agent's cached part."""
        tails = self._tails(batch)
        n = len(tails)
        if batch.gang_id:  # per offer, not the agent's: after the cached part
            gang = delimited(_OFFER_GANG, batch.gang_id.encode())
            tails = [t + gang for t in tails]
        if batch.revocable:
            tails = [t + _OFFER_REVOCABLE for t in tails]
        prefix = batch.prefix.encode()
        first, last = b"%d" % batch.base, b"%d" % (batch.base + n - 1)
        digits = len(first)
        oid_head = _OFFER_ID + varint(len(prefix) + digits) + prefix
        fixed = len(oid_head) + digits + len(fw)  # an offer's length but for its tail
        heads = _OFFER_HEADS
        if n and len(last) == digits and fixed + max(map(len, tails)) < len(heads):
            # Ids of one length (the common case: a batch's ids only grow, so the first and
            # the last tell) and every offer's length in the table: the offers are one join
            # of five parts each, with no bytes object made per offer but its id's digits.
            lengths = [fixed + len(t) for t in tails]
            parts = [fw] * (5 * n)
            parts[0::5] = offer_heads = [heads[k] for k in lengths]
            parts[1::5] = [oid_head] * n
            parts[2::5] = [b"%d" % q for q in range(batch.base, batch.base + n)]
            parts[4::5] = tails
            return _Run(parts, 5, sum(lengths) + sum(map(len, offer_heads)))
        oids = [b"%b%d" % (prefix, q) for q in range(batch.base, batch.base + n)]
        pieces = [
            delimited(_OFFERS_OFFER, b"".join((_OFFER_ID, varint(len(o)), o, fw, t)))
            for o, t in zip(oids, tails, strict=True)
        ]
        return _Run(pieces, 1, sum(map(len, pieces)))

    def _tails(self, batch: OfferColumns) -> Sequence[bytes]:
        """Each entry's agent part, from the cache while the agent's scalars, ports and
        description are what was cached. Each entry's scalars are the 32 bytes of its row,
        compared as slices of one bytes object, not a list of floats per offer."""
        agents = self._agents
        aids, specs, ports = batch.agent_ids, batch.specs, batch.ports
        raw = np.ascontiguousarray(batch.scalars, dtype=np.float64).tobytes()
        cached = list(map(agents.get, aids))
        if not ports and cached and None not in cached:
            # The steady state of a busy cluster: every agent as cached, checked with one
            # transpose and two compares. A key is its row's 32 bytes, longer when the
            # entry carried ports, so one join compared with the batch's rows checks both.
            keys, _, made, tails = zip(*cached, strict=True)
            if b"".join(keys) == raw and list(made) == specs:
                return tails  # type: ignore[no-any-return]
        out: list[bytes] = []
        for i, (aid, spec, hit) in enumerate(zip(aids, specs, cached, strict=True)):
            p = ports.get(i, ()) if ports else ()
            key = raw[32 * i : 32 * i + 32] + (_CARRIES_PORTS if p else b"")
            if hit is None or hit[0] != key or hit[1] != p or hit[2] is not spec:
                if hit is None and len(agents) >= CACHE_LIMIT:
                    agents.clear()
                s = batch.scalars[i].tolist()
                hit = agents[aid] = (key, p, spec, _agent_fields(aid, spec, s, p))
            out.append(hit[3])
        return out


class _Run:
    """One batch's offers, encoded: ``parts`` joined are the offers' bytes in
    ``Offers.offers``, ``stride`` parts per offer; ``size`` bytes in all."""

    __slots__ = ("parts", "size", "stride")

    def __init__(self, parts: list[bytes], stride: int, size: int) -> None:
        self.parts, self.stride, self.size = parts, stride, size

    def pieces(self) -> list[bytes]:
        """One bytes object per offer (for splitting by size)."""
        k, parts = self.stride, self.parts
        if k == 1:
            return parts
        return [b"".join(parts[i : i + k]) for i in range(0, len(parts), k)]


def _events(pieces: list[bytes], max_bytes: int | None) -> list[bytes]:
    """The offers' pieces in as few ``Event{offers}``s as keep each at most ``max_bytes`` of
    offers (a piece larger than that still goes, alone)."""
    if max_bytes is None or sum(map(len, pieces)) <= max_bytes:
        return [delimited(_EVENT_OFFERS, b"".join(pieces))]
    out: list[bytes] = []
    start, total = 0, 0
    for i, piece in enumerate(pieces):
        if total + len(piece) > max_bytes and i > start:
            out.append(delimited(_EVENT_OFFERS, b"".join(pieces[start:i])))
            start, total = i, 0
        total += len(piece)
    out.append(delimited(_EVENT_OFFERS, b"".join(pieces[start:])))
    return out


def _agent_fields(
    agent_id: str, spec: AgentSpec, scalars: Sequence[float], ports: PortRanges
) -> bytes:
    """Fields 3-7 of the offer (agent_id, hostname, resources, attributes, taints), by
    protobuf: the offer as ``convert.offer_to_pb`` makes it, without the id and framework
    written per offer."""
    record = OfferRecord(
        "", "", agent_id, spec.hostname, scalars, ports, spec.attributes, 0.0, taints=spec.taints
    )
    msg = convert.offer_to_pb(record, pb.Offer())
    msg.ClearField("id")
    msg.ClearField("framework_id")
    msg.ClearField("gang_id")
    msg.ClearField("revocable")
    return msg.SerializeToString(deterministic=True)
