"""A large JSON answer written a piece at a time, the event loop let go between pieces.

``/api/v1/state`` at 50,000 agents is ~31 MB of JSON: encoded in one ``json.dumps`` it held the
master's event loop ~0.7 s (the core, every stream and every other request waited), and the
whole text sat in memory beside the objects it was made from (docs/performance.md, "The whole
state streamed"). Written here, the long lists go ``CHUNK`` items per piece, each piece written
before the next is made, with the loop let go in between; the client reads the same document
(chunked transfer encoding, no Content-Length). What is written must not change meanwhile: the
state view's fragments are replaced, never changed in place (master/views.py).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Mapping
from typing import Any

from aiohttp import web

CHUNK = 500  # list items per piece: ~300 KB and a few ms of encoding at the state's sizes


def pieces(value: Mapping[str, Any], chunk: int = CHUNK) -> Iterator[str]:
    """``json.dumps(value)`` as consecutive pieces: the top-level lists longer than ``chunk``
    split every ``chunk`` items; joined, the pieces are exactly ``json.dumps(value)``."""
    yield "{"
    for i, (key, item) in enumerate(value.items()):
        head = ("" if i == 0 else ", ") + json.dumps(key) + ": "
        if isinstance(item, list) and len(item) > chunk:
            yield head + "["
            for start in range(0, len(item), chunk):
                body = json.dumps(item[start : start + chunk])[1:-1]
                yield body if start == 0 else ", " + body
            yield "]"
        else:
            yield head + json.dumps(item)
    yield "}"


async def write_json(request: web.Request, value: Mapping[str, Any]) -> web.StreamResponse:
    """Answer ``request`` with ``value`` as JSON, streamed (``pieces``)."""
    response = web.StreamResponse(headers={"Content-Type": "application/json; charset=utf-8"})
    response.enable_chunked_encoding()
    await response.prepare(request)
    for piece in pieces(value):
        await response.write(piece.encode())
        # write() returns at once while its buffer is below the transport's high-water mark:
        # let the loop run the core and the other streams between pieces either way.
        await asyncio.sleep(0)
    await response.write_eof()
    return response
