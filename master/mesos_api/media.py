"""The Mesos API's two media types, as Mesos accepts them both ways: ``application/json`` and
``application/x-protobuf``. A protobuf call is read into the same dict a JSON call is
(protobuf's JSON mapping of Corral's copy of Mesos' messages, proto/corral/v1/mesos.proto), so
one path handles both; an event goes out as JSON, or through that mapping as protobuf bytes."""

from __future__ import annotations

import json
from typing import Any

from google.protobuf.json_format import MessageToDict, ParseDict
from google.protobuf.message import DecodeError

from corral.master.mesos_api.wire import BadCall
from corral.v1 import mesos_pb2

JSON = "application/json"
PROTOBUF = "application/x-protobuf"
TYPES = (JSON, PROTOBUF)


def decode_call(body: bytes, media: str) -> Any:
    """A call's body as Mesos' JSON shape; BadCall if it does not decode."""
    if media == JSON:
        try:
            return json.loads(body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise BadCall(f"the body is not JSON: {exc}") from None
    try:
        call = mesos_pb2.Call.FromString(body)
    except DecodeError as exc:
        raise BadCall(f"the body is not a mesos.v1.scheduler.Call: {exc}") from None
    return MessageToDict(call, preserving_proto_field_name=True)


def encode_event(event: dict[str, Any], media: str) -> bytes:
    if media == JSON:
        return json.dumps(event, separators=(",", ":")).encode()
    # Fields Corral's copy of the messages leaves out are dropped, as a Mesos peer of an older
    # version would drop them.
    message = ParseDict(event, mesos_pb2.Event(), ignore_unknown_fields=True)
    return message.SerializeToString()


def stream_media(accept: str, content_type: str) -> str | None:
    """The event stream's media type for a SUBSCRIBE: the first of Mesos' two that ``Accept``
    names (a wildcard, or no Accept: the request's own type); None when it allows neither."""
    if not accept.strip():
        return content_type
    for part in accept.split(","):
        kind = part.split(";")[0].strip().lower()
        if kind in TYPES:
            return kind
        if kind in ("*/*", "application/*"):
            return content_type
    return None
