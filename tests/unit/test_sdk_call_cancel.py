"""A caller cancelled as its answer arrives ends cancelled (the SDK's CALLS stream).

On Python 3.11 ``asyncio.wait_for`` returns the result and drops the cancellation when both
come in the same loop turn; the driver's reader, cancelled that way by ``stop()``, went on and
blocked on a full queue forever (a chaos test hung in CI). The SDK waits with
``asyncio.timeout``, which passes such a cancellation on."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest

from corral.frameworks.sdk.calls import CallStream
from corral.v1.scheduler_pb2 import CallResult, CallResultBatch, DeclineRequest


class _Rpc:
    """The client side of a CALLS stream, driven by the test."""

    def __init__(self) -> None:
        self.written: asyncio.Queue[Any] = asyncio.Queue()
        self.results: asyncio.Queue[Any] = asyncio.Queue()

    async def write(self, batch: Any) -> None:
        await self.written.put(batch)

    async def read(self) -> Any:
        return await self.results.get()

    async def done_writing(self) -> None:
        await self.results.put(grpc.aio.EOF)  # as the master: its end follows a half-close

    def cancel(self) -> bool:
        return True


class _Stub:
    def __init__(self, rpc: _Rpc) -> None:
        self.rpc = rpc

    def Calls(self) -> _Rpc:  # the generated stub's name
        return self.rpc


async def test_a_call_cancelled_as_its_result_arrives_ends_cancelled() -> None:
    rpc = _Rpc()
    stream = CallStream(_Stub(rpc))  # type: ignore[arg-type]
    caller = asyncio.create_task(stream.call("Decline", "decline", DeclineRequest(), 30.0))
    batch = await asyncio.wait_for(rpc.written.get(), 5)
    (call,) = batch.calls
    # The answer is read and the caller cancelled in the same loop turn.
    await rpc.results.put(CallResultBatch(results=[CallResult(id=call.id)]))
    await asyncio.sleep(0)  # the stream's reader takes the batch and sets the call's result
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    await stream.close()


async def test_a_call_answered_in_time_returns() -> None:
    rpc = _Rpc()
    stream = CallStream(_Stub(rpc))  # type: ignore[arg-type]
    caller = asyncio.create_task(stream.call("Decline", "decline", DeclineRequest(), 30.0))
    batch = await asyncio.wait_for(rpc.written.get(), 5)
    await rpc.results.put(CallResultBatch(results=[CallResult(id=batch.calls[0].id)]))
    assert await asyncio.wait_for(caller, 5) is None
    await stream.close()
