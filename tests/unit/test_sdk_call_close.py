"""A driver closing its CALLS stream lets the master take what was written before it cancels.

Cancelling at once can overtake batches still on the wire: a stopping driver's last
acknowledgements were lost that way (CI saw it), and the master resent those statuses to the
next subscriber. ``close()`` half-closes, waits for the master's end of the stream (bounded),
then cancels; a call made while it closes fails at once rather than being dropped unsent."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest

from corral.frameworks.sdk.calls import CallStream
from corral.frameworks.sdk.errors import CallError
from corral.v1.scheduler_pb2 import AcknowledgeRequest, DeclineRequest


class _Rpc:
    """The client side of a CALLS stream that logs what the stream does to it."""

    def __init__(self, answers_half_close: bool = True) -> None:
        self.log: list[str] = []
        self.results: asyncio.Queue[Any] = asyncio.Queue()
        self.answers_half_close = answers_half_close

    async def write(self, batch: Any) -> None:
        await asyncio.sleep(0)  # a write takes a loop turn or more, as on a socket
        self.log.append("write " + ",".join(c.WhichOneof("call") for c in batch.calls))

    async def read(self) -> Any:
        return await self.results.get()

    async def done_writing(self) -> None:
        self.log.append("half-close")
        if self.answers_half_close:
            self.log.append("master ends")
            await self.results.put(grpc.aio.EOF)

    def cancel(self) -> bool:
        self.log.append("cancel")
        return True


class _Stub:
    def __init__(self, rpc: _Rpc) -> None:
        self.rpc = rpc

    def Calls(self) -> _Rpc:  # the generated stub's name
        return self.rpc


def _ignore(err: CallError) -> None:
    pass


async def test_close_half_closes_after_the_last_write_and_cancels_after_the_masters_end() -> None:
    rpc = _Rpc()
    stream = CallStream(_Stub(rpc))  # type: ignore[arg-type]
    # A quiet call returns once written: the driver's acknowledgements, just before stopping.
    await stream.call("Acknowledge", "acknowledge", AcknowledgeRequest(), 5.0, _ignore)
    await stream.close()
    assert rpc.log == ["write acknowledge", "half-close", "master ends", "cancel"]


async def test_a_master_that_never_ends_the_stream_costs_close_its_grace_only() -> None:
    rpc = _Rpc(answers_half_close=False)
    stream = CallStream(_Stub(rpc))  # type: ignore[arg-type]
    await stream.call("Acknowledge", "acknowledge", AcknowledgeRequest(), 5.0, _ignore)
    await asyncio.wait_for(stream.close(grace=0.05), 5)
    assert rpc.log == ["write acknowledge", "half-close", "cancel"]


async def test_a_call_made_while_closing_fails_at_once() -> None:
    rpc = _Rpc(answers_half_close=False)
    stream = CallStream(_Stub(rpc))  # type: ignore[arg-type]
    closing = asyncio.create_task(stream.close(grace=5.0))
    await asyncio.sleep(0)
    with pytest.raises(CallError) as raised:
        await stream.call("Decline", "decline", DeclineRequest(), 5.0)
    assert raised.value.code is grpc.StatusCode.CANCELLED
    closing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await closing
    stream.abandon()
