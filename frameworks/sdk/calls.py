"""The CALLS stream: a driver's calls in batches on one stream, each answered by its result.

A unary call cost the master about four times what a stream message does (gRPC sets up and
tears down a call, a task and its metadata each time), and a busy framework's calls are mostly
small and frequent: a decline per offer batch, an acknowledgement per status batch. Calls made
while a batch is being written go out together in the next one. The master handles a stream's
calls in order and answers each with the status a unary call would have ended with, so a call
fails the same way on either path (``CallError`` with the master's code and reason).

Each call tells the master how long its caller still waits (``Call.timeout_seconds``, set as
the batch is written); the master refuses with DEADLINE_EXCEEDED, without applying it, a call
it could not get to in time, so an overloaded master does not go on launching tasks for
accepts that already failed on the framework's side.

A quiet call (``Call.quiet``, made with ``on_refused``) returns once its batch is written: the
master answers it only if it fails, and that refusal goes to ``on_refused``. The driver's
acknowledgements go so (the master resends a status until it is acknowledged, so nothing waits
on their success), which spares the master a result message, and the framework its read, for
every status batch.

When the stream breaks, the calls still waiting fail with the stream's error, as unary calls
in flight fail when their connection drops (the master may or may not have applied them).
A master without the CALLS method answers UNIMPLEMENTED; the calls then fall back to unary RPCs
(``StreamUnimplemented``), which the driver does from then on.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Callable
from typing import Any

import grpc

from corral.frameworks.sdk.errors import CallError
from corral.v1.scheduler_pb2 import CallBatch, CallResultBatch
from corral.v1.scheduler_pb2_grpc import SchedulerStub
from corral.wakeup import Wakeup

# A batch stays well under the gRPC message limit whatever the calls in it.
BATCH_BYTES = 1 << 20

_CODES = {code.value[0]: code for code in grpc.StatusCode}

# The timeout sent for a call whose caller gave up before it was written (0 would mean none).
EXPIRED = 1e-6

# How many written quiet calls are remembered for their refusals: a refusal comes within the
# call's timeout, behind a few batches at most, and a success never comes.
QUIET_REMEMBERED = 4096

# How long a closing stream waits for the master to take what was written. Cancelling the
# call at once can overtake batches still on the wire, so a driver's last acknowledgements
# would be lost (and the statuses resent to whoever subscribes next); a half-close is answered
# by the master's end of the stream once it has read every call.
CLOSE_GRACE = 2.0


class StreamUnimplemented(Exception):
    """The master has no CALLS stream: the call was not made, send it as a unary RPC."""


class CallStream:
    def __init__(self, stub: SchedulerStub) -> None:
        self._rpc: grpc.aio.StreamStreamCall[CallBatch, CallResultBatch] = stub.Calls()
        self._ids = itertools.count(1)
        # Calls are copied straight into the batch that goes out next (one copy, not two).
        self._open = CallBatch()
        self._open_bytes = 0
        self._batches: list[CallBatch] = []  # full ones, waiting for the writer
        # Per call still waiting: its method, its result, and its deadline (loop time).
        self._waiting: dict[int, tuple[str, asyncio.Future[None], float]] = {}
        # Per quiet call waiting to be written: what to tell of its refusal; then, once
        # written, the same in _quiet_sent (oldest first), where a refusal finds it.
        self._quiet: dict[int, Callable[[CallError], None]] = {}
        self._quiet_sent: dict[int, tuple[str, Callable[[CallError], None]]] = {}
        self._wake = Wakeup()  # the writer's; not asyncio.Event: no system call per wait
        self._closing = False
        self._failure: tuple[grpc.StatusCode, str] | None = None
        self.unimplemented = False
        loop = asyncio.get_running_loop()
        self._tasks = (
            loop.create_task(self._write(), name="sdk-calls-writer"),
            loop.create_task(self._read(), name="sdk-calls-reader"),
        )

    async def call(
        self,
        method: str,
        field: str,
        request: Any,
        timeout: float,
        on_refused: Callable[[CallError], None] | None = None,
    ) -> None:
        """Send ``request`` as the ``field`` call and wait for its result; CallError as a
        unary call would raise it, StreamUnimplemented when it must go as one. With
        ``on_refused`` the call is quiet: it returns once written, and a refusal is told to
        ``on_refused`` when it comes."""
        if self.unimplemented:
            raise StreamUnimplemented
        if self._failure is not None:
            raise CallError(method, *self._failure)
        if self._closing:
            raise CallError(method, grpc.StatusCode.CANCELLED, "the driver is stopping")
        call_id = next(self._ids)
        if self._open_bytes > BATCH_BYTES:
            self._batches.append(self._open)
            self._open, self._open_bytes = CallBatch(), 0
        call = self._open.calls.add(id=call_id)
        if on_refused is not None:
            call.quiet = True
            self._quiet[call_id] = on_refused
        getattr(call, field).CopyFrom(request)
        self._open_bytes += call.ByteSize()
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self._waiting[call_id] = (method, future, loop.time() + timeout)
        self._wake.set()
        try:
            # Not wait_for, which on 3.11 drops the caller's cancellation when the result
            # comes in the same loop turn (see Driver._read_stream).
            async with asyncio.timeout(timeout):
                await future
        except TimeoutError:
            raise CallError(
                method, grpc.StatusCode.DEADLINE_EXCEEDED, f"no answer within {timeout:g} s"
            ) from None
        finally:
            self._waiting.pop(call_id, None)
            self._quiet.pop(call_id, None)

    async def _write(self) -> None:
        rpc = self._rpc
        try:
            while True:
                await self._wake.wait()
                self._wake.clear()
                while self._batches or self._open.calls:
                    if self._batches:
                        batch = self._batches.pop(0)
                    else:
                        batch, self._open, self._open_bytes = self._open, CallBatch(), 0
                    quiet = self._stamp_timeouts(batch)
                    await rpc.write(batch)
                    for call_id in quiet:  # written: all a quiet call waits for
                        on_refused = self._quiet.pop(call_id, None)
                        entry = self._waiting.pop(call_id, None)
                        if entry is not None and on_refused is not None:
                            self._quiet_sent[call_id] = (entry[0], on_refused)
                            if not entry[1].done():
                                entry[1].set_result(None)
                    while len(self._quiet_sent) > QUIET_REMEMBERED:
                        del self._quiet_sent[next(iter(self._quiet_sent))]
                if self._closing:
                    await rpc.done_writing()
                    return
        except (grpc.aio.AioRpcError, grpc.aio.UsageError, asyncio.InvalidStateError):
            rpc.cancel()  # the reader sees why and fails the waiting calls

    def _stamp_timeouts(self, batch: CallBatch) -> list[int]:
        """Tell the master how long each call's caller still waits, so it does not apply a
        call nobody waits for any more (one that already timed out: a moment). Returns the
        batch's quiet calls."""
        now = asyncio.get_running_loop().time()
        waiting = self._waiting
        quiet = []
        for call in batch.calls:
            entry = waiting.get(call.id)
            call.timeout_seconds = max(entry[2] - now, EXPIRED) if entry else EXPIRED
            if call.quiet:
                quiet.append(call.id)
        return quiet

    async def _read(self) -> None:
        code, reason = grpc.StatusCode.UNAVAILABLE, "the master closed the call stream"
        try:
            while True:
                msg = await self._rpc.read()
                if msg is grpc.aio.EOF:
                    break
                assert isinstance(msg, CallResultBatch)
                waiting = self._waiting
                for result in msg.results:
                    entry = waiting.pop(result.id, None)
                    if entry is None or entry[1].done():
                        quiet = self._quiet_sent.pop(result.id, None)
                        if quiet is not None and result.code != 0:
                            status = _CODES.get(result.code, grpc.StatusCode.UNKNOWN)
                            quiet[1](CallError(quiet[0], status, result.message))
                        continue  # a quiet call's refusal, or one that timed out meanwhile
                    method, future, _ = entry
                    if result.code == 0:
                        future.set_result(None)
                    else:
                        status = _CODES.get(result.code, grpc.StatusCode.UNKNOWN)
                        future.set_exception(CallError(method, status, result.message))
        except grpc.aio.AioRpcError as err:
            code, reason = err.code(), err.details() or ""
        except asyncio.CancelledError:
            code, reason = grpc.StatusCode.CANCELLED, "the connection closed"
            raise
        finally:
            self._fail(code, reason)

    def _fail(self, code: grpc.StatusCode, reason: str) -> None:
        if code is grpc.StatusCode.UNIMPLEMENTED:
            self.unimplemented = True
        self._failure = (code, reason)
        waiting, self._waiting = self._waiting, {}
        self._quiet.clear()  # their callers fail below, as other calls do
        self._quiet_sent.clear()
        self._batches.clear()
        self._open = CallBatch()
        for method, future, _ in waiting.values():
            if not future.done():
                future.set_exception(
                    StreamUnimplemented() if self.unimplemented else CallError(method, code, reason)
                )

    @property
    def broken(self) -> bool:
        """The stream has failed; calls on it fail at once."""
        return self._failure is not None

    def abandon(self) -> None:
        """Let a failed stream go without waiting for its tasks (they are ending anyway)."""
        self._rpc.cancel()
        for task in self._tasks:
            task.cancel()

    async def close(self, grace: float = CLOSE_GRACE) -> None:
        """End the stream: what was written reaches the master (a half-close, then the
        master's end of the stream, for at most ``grace`` seconds); calls still waiting then
        fail with CANCELLED."""
        writer, reader = self._tasks
        if self._failure is None and not writer.done():
            self._closing = True
            self._wake.set()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(grace):
                    await asyncio.wait({writer})
                    await asyncio.wait({reader})
        self.abandon()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
