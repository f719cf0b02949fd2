"""Protobuf's wire format written by hand, for what the master sends already encoded (OFFERS
events, master/wire/offers.py; GetState's whole answer, master/views.py ``state_wire``): a
message's fields may come in any order and a repeated field in as many pieces as it likes, so
parts kept between calls are joined as bytes rather than made again."""

from __future__ import annotations

from google.protobuf.message import Message


def varint(n: int) -> bytes:
    if n < 0x80:
        return bytes((n,))
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def delimited(key: bytes, payload: bytes) -> bytes:
    """A length-delimited field: its key (field number and wire type 2), length, payload."""
    return key + varint(len(payload)) + payload


def serialized(msg: Message | bytes) -> bytes:
    """A response serializer for a method whose answers may come already encoded."""
    return msg if isinstance(msg, bytes) else msg.SerializeToString()
