"""The Scheduler service: frameworks subscribe (their event stream) and call, one RPC a call
or many calls on the CALLS stream; each call decodes into a core event and is answered with
the core's verdict."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc

from corral.master.core import events as ev
from corral.master.core.refusals import CallRejected
from corral.master.outbox import MAX_BATCH_BYTES, text_bytes
from corral.master.rpc.common import answer, code_of, cut_when_behind, log
from corral.master.runtime import MasterRuntime
from corral.master.security.principals import principal_of
from corral.master.wire import convert
from corral.master.wire.call_events import CallEvents
from corral.master.wire.convert import WireError
from corral.supervise import spawn
from corral.v1 import scheduler_pb2, scheduler_pb2_grpc
from corral.wakeup import Wakeup


class SchedulerServicer(scheduler_pb2_grpc.SchedulerServicer):
    def __init__(self, runtime: MasterRuntime) -> None:
        self.rt = runtime
        self.events = CallEvents(runtime)  # each call's core event (call_events.py)

    async def Subscribe(
        self, request: scheduler_pb2.SubscribeRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[scheduler_pb2.Event | bytes]:
        rt = self.rt
        try:
            spec = convert.framework_spec_from_pb(request.framework_info)
        except WireError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        stream_id = rt.new_secret()  # a credential: calls naming it act for the framework
        framework_id = spec.framework_id or rt.new_framework_id()
        stream = rt.new_stream("framework")
        cut_when_behind(rt, stream, context, "framework")
        rt.framework_streams[stream_id] = stream
        try:
            try:
                await rt.call(
                    ev.FrameworkSubscribe(
                        stimulus_id=rt.stimulus("subscribe"),
                        now=rt.clock(),
                        connection=rt.new_connection(),
                        spec=spec,
                        new_framework_id=framework_id,
                        stream_id=stream_id,
                        principal=principal_of(context),
                    )
                )
            except CallRejected as exc:
                await context.abort(code_of(exc), exc.message)
            async for msg in stream.messages():
                yield msg
        finally:
            rt.framework_stream_closed(stream, framework_id, stream_id)

    async def _unary(
        self,
        context: grpc.aio.ServicerContext[Any, Any],
        build: Callable[[Any], ev.Event],
        request: Any,
    ) -> scheduler_pb2.CallResponse:
        async def work() -> None:
            await self.rt.call(build(request), context.time_remaining())

        return await answer(context, work)

    async def Accept(
        self, request: scheduler_pb2.AcceptRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> scheduler_pb2.CallResponse:
        return await self._unary(context, self.events.accept, request)

    async def Decline(
        self, request: scheduler_pb2.DeclineRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> scheduler_pb2.CallResponse:
        return await self._unary(context, self.events.decline, request)

    async def Suppress(
        self, request: scheduler_pb2.SuppressRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> scheduler_pb2.CallResponse:
        return await self._unary(context, self.events.suppress, request)

    async def Revive(
        self, request: scheduler_pb2.ReviveRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> scheduler_pb2.CallResponse:
        return await self._unary(context, self.events.revive, request)

    async def Kill(
        self, request: scheduler_pb2.KillRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> scheduler_pb2.CallResponse:
        return await self._unary(context, self.events.kill, request)

    async def Acknowledge(
        self,
        request: scheduler_pb2.AcknowledgeRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> scheduler_pb2.CallResponse:
        return await self._unary(context, self.events.acknowledge, request)

    async def Reconcile(
        self, request: scheduler_pb2.ReconcileRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> scheduler_pb2.CallResponse:
        return await self._unary(context, self.events.reconcile, request)

    async def Teardown(
        self, request: scheduler_pb2.TeardownRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> scheduler_pb2.CallResponse:
        return await self._unary(context, self.events.teardown, request)

    async def SetDemands(
        self, request: scheduler_pb2.SetDemandsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> scheduler_pb2.CallResponse:
        return await self._unary(context, self.events.set_demands, request)

    # -- the CALLS stream ------------------------------------------------------------------

    async def Calls(
        self,
        request_iterator: AsyncIterator[scheduler_pb2.CallBatch],
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> AsyncIterator[scheduler_pb2.CallResultBatch]:
        """Calls in batches, answered in batches: what the core answered since the last write
        goes out as one CallResultBatch. The stream ends after the caller half-closes and every
        call it sent has its result."""
        results = _CallResults()
        reader = spawn(
            self._read_calls(request_iterator, results),
            "calls-reader",
            log,
            on_failure=self.rt.task_failed,
        )
        try:
            while (batch := await results.next_batch()) is not None:
                yield batch
        finally:
            reader.cancel()
        # A reader that failed (a bug) stopped reading calls: the caller must not take the
        # stream's end for "every call answered".
        failure = reader.exception() if reader.done() and not reader.cancelled() else None
        if failure is not None:  # logged and counted by spawn's watch
            await context.abort(grpc.StatusCode.INTERNAL, f"internal error: {failure}")

    async def _read_calls(
        self, request_iterator: AsyncIterator[scheduler_pb2.CallBatch], results: _CallResults
    ) -> None:
        # One builder per field of Call's oneof, by name: a call kind added to the proto
        # without its method in CallEvents fails here, not silently as "no known type".
        builders: dict[str, Callable[[Any], ev.Event]] = {
            kind: getattr(self.events, kind) for kind in CALL_KINDS
        }
        submit = self.rt.submit_call
        try:
            async for batch in request_iterator:
                for call in batch.calls:
                    kind = call.WhichOneof("call")
                    build = builders.get(kind) if kind is not None else None
                    if build is None:
                        results.add(call.id, _INVALID, "call has no known type")
                        continue
                    try:
                        event = build(getattr(call, kind))
                    except WireError as exc:
                        results.add(call.id, _INVALID, str(exc))
                        continue
                    timeout = call.timeout_seconds if call.timeout_seconds > 0 else None
                    results.expect(call.id, submit(event, timeout), quiet=call.quiet)
        except grpc.aio.AioRpcError:
            pass  # the caller went away: nobody is left to answer
        finally:
            results.done_reading()


_INVALID = grpc.StatusCode.INVALID_ARGUMENT

# The call kinds of the CALLS stream: the fields of Call's oneof ("accept", "decline", ...).
CALL_KINDS = tuple(f.name for f in scheduler_pb2.Call.DESCRIPTOR.oneofs_by_name["call"].fields)


def _status_code(code: grpc.StatusCode) -> int:
    value: int = code.value[0]
    return value


class _CallResults:
    """The results of one CALLS stream, waiting to be written."""

    def __init__(self) -> None:
        self._ready: list[scheduler_pb2.CallResult] = []
        self._outstanding = 0
        self._reading = True
        self._wake = Wakeup()  # not asyncio.Event: no system call per wait (wakeup.py)

    def add(self, call_id: int, code: grpc.StatusCode, message: str = "") -> None:
        self._ready.append(
            scheduler_pb2.CallResult(id=call_id, code=_status_code(code), message=message)
        )
        self._wake.set()

    @staticmethod
    def _result_bytes(result: scheduler_pb2.CallResult) -> int:
        """At least the result's serialized size (id, code, message, key and length)."""
        return 32 + text_bytes(result.message)

    def expect(self, call_id: int, answer: asyncio.Future[Any], quiet: bool = False) -> None:
        """The core's answer to call ``call_id`` comes as ``answer``; a ``quiet`` call's
        success is not sent (Call.quiet)."""
        self._outstanding += 1

        def done(future: asyncio.Future[Any]) -> None:
            self._outstanding -= 1
            if future.cancelled():
                self.add(call_id, grpc.StatusCode.CANCELLED, "the master is stopping")
                return
            exc = future.exception()
            if exc is None:
                if quiet:
                    self._wake.set()  # the last call answered may end the stream
                else:
                    self.add(call_id, grpc.StatusCode.OK)
            elif isinstance(exc, CallRejected):
                self.add(call_id, code_of(exc), exc.message)
            else:
                self.add(call_id, grpc.StatusCode.INTERNAL, f"internal error: {exc}")

        answer.add_done_callback(done)

    def done_reading(self) -> None:
        self._reading = False
        self._wake.set()

    async def next_batch(self) -> scheduler_pb2.CallResultBatch | None:
        """The results ready now (waiting for one); None once the caller half-closed and
        every call has been answered."""
        while not self._ready:
            if not self._reading and self._outstanding == 0:
                return None
            await self._wake.wait()
            self._wake.clear()
        # A CallBatch of many small calls can have more refusals, with their reasons, than one
        # message may hold: the rest go in the next batch.
        ready = self._ready
        total = 0
        for n, result in enumerate(ready):
            total += self._result_bytes(result)
            if total > MAX_BATCH_BYTES and n > 0:
                self._ready = ready[n:]
                return scheduler_pb2.CallResultBatch(results=ready[:n])
        self._ready = []
        return scheduler_pb2.CallResultBatch(results=ready)
