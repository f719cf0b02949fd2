"""One TLS connection per master and credential in a process, as gRPC gives plain text.

gRPC shares one connection among a process's insecure channels to the same address (its global
subchannel pool), but gives every secure channel a connection of its own: the load test's 50
frameworks in one process, or 1,000 simulated agents, would hold 50 or 16 TLS connections where
plain text holds one, and a master spends its time on many connections' small reads rather than
on few large ones (docs/performance.md, "The cost of security"). ``shared`` keeps the plain-text
behaviour: channels with the same address, credential and options in one event loop are one
channel, closed when the last user closes it. The credential is the same certificate, so the
same principal: sharing its connection grants nobody anything.
"""

from __future__ import annotations

import asyncio
import os
import weakref
from collections.abc import Callable, Hashable
from types import TracebackType
from typing import Any

import grpc
import grpc.aio

_Key = Hashable
# Per event loop (a grpc.aio channel belongs to the loop it was made in): key -> channel, users.
_open: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[_Key, list[Any]]] = (
    weakref.WeakKeyDictionary()
)


def stamp(*paths: os.PathLike[str]) -> tuple[int, ...]:
    """The files' modification times: a rotated certificate makes a new connection."""
    out = []
    for path in paths:
        try:
            out.append(os.stat(path).st_mtime_ns)
        except OSError:
            out.append(0)
    return tuple(out)


def shared(key: _Key, make: Callable[[], grpc.aio.Channel]) -> grpc.aio.Channel:
    """The loop's channel for ``key`` (made with ``make`` the first time), one more user."""
    loop = asyncio.get_running_loop()
    channels = _open.setdefault(loop, {})
    entry = channels.get(key)
    if entry is None:
        entry = channels[key] = [make(), 0]
    entry[1] += 1
    return _SharedChannel(key, entry[0], channels)


class _SharedChannel(grpc.aio.Channel):  # type: ignore[misc]  # grpc has no type stubs
    """One user's handle on a shared channel: everything goes to the channel; ``close``
    closes it only when no other user holds it."""

    def __init__(self, key: _Key, channel: grpc.aio.Channel, registry: dict[_Key, list[Any]]):
        self._key = key
        self._channel = channel
        self._registry = registry
        self._closed = False

    async def close(self, grace: float | None = None) -> None:
        if self._closed:
            return
        self._closed = True
        entry = self._registry.get(self._key)
        if entry is None or entry[0] is not self._channel:
            return
        entry[1] -= 1
        if entry[1] <= 0:
            del self._registry[self._key]
            await self._channel.close(grace)

    async def __aenter__(self) -> _SharedChannel:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def get_state(self, try_to_connect: bool = False) -> grpc.ChannelConnectivity:
        return self._channel.get_state(try_to_connect)

    async def wait_for_state_change(self, last_observed_state: grpc.ChannelConnectivity) -> None:
        await self._channel.wait_for_state_change(last_observed_state)

    async def channel_ready(self) -> None:
        await self._channel.channel_ready()

    def unary_unary(self, *args: Any, **kwargs: Any) -> Any:
        return self._channel.unary_unary(*args, **kwargs)

    def unary_stream(self, *args: Any, **kwargs: Any) -> Any:
        return self._channel.unary_stream(*args, **kwargs)

    def stream_unary(self, *args: Any, **kwargs: Any) -> Any:
        return self._channel.stream_unary(*args, **kwargs)

    def stream_stream(self, *args: Any, **kwargs: Any) -> Any:
        return self._channel.stream_stream(*args, **kwargs)
