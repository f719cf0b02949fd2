"""FakeMaster: an in-process Scheduler service for testing frameworks without a cluster.

It speaks the real wire contract on 127.0.0.1 (a free port), assigns framework and stream ids
like the master, checks every call's Caller, records every call (unary or on the CALLS stream,
the same way), and lets a test push any event, refuse the next call of a method, drop the
stream, mute heartbeats, play a master without the CALLS stream (``calls_stream=False``) or
one that never answers on it (``hold_calls``), or restart on the same port. It makes no
scheduling decisions: the test plays the master.

It serves plain text on loopback, in the test's own process: give its ``tls`` (``INSECURE``)
to the Driver, ``Driver(..., master.address, tls=master.tls)``.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import grpc

from corral.tls import INSECURE, Insecure
from corral.v1 import scheduler_pb2 as pb
from corral.v1 import scheduler_pb2_grpc as pb_grpc
from corral.v1.common_pb2 import Offer, TaskStatus


@dataclass(frozen=True, slots=True)
class RecordedCall:
    method: str
    request: Any  # the request message, e.g. pb.AcceptRequest
    quiet: bool = False  # a quiet call on the CALLS stream: answered only if it fails


class _Stream:
    """One open Subscribe stream: a queue of events to send, None ends it."""

    def __init__(self, framework_id: str, stream_id: str) -> None:
        self.framework_id = framework_id
        self.stream_id = stream_id
        self.queue: asyncio.Queue[pb.Event | grpc.StatusCode | None] = asyncio.Queue()


class FakeMaster:
    """``async with FakeMaster() as master: Driver(..., master.address, tls=master.tls)``."""

    def __init__(
        self,
        heartbeat_interval: float = 0.0,
        master_id: str = "fake-master",
        calls_stream: bool = True,
    ) -> None:
        self.heartbeat_interval = heartbeat_interval
        self.calls_stream = calls_stream
        self.call_batches = 0  # CallBatch messages received on CALLS streams
        self.call_results = 0  # CallResult messages sent on CALLS streams
        self.hold_calls = False  # record CALLS-stream calls but never answer them
        self.call_timeouts: list[float] = []  # Call.timeout_seconds, per CALLS-stream call
        # Set to a code: the next CALLS-stream batch ends its stream with it instead.
        self.break_calls_stream: grpc.StatusCode | None = None
        self.master_id = master_id
        self.mute_heartbeats = False
        self.heartbeats_sent = 0
        self.port = 0
        self.calls: list[RecordedCall] = []
        self.subscriptions: list[pb.SubscribeRequest] = []
        self._failures: dict[str, list[tuple[grpc.StatusCode, str]]] = {}
        self._ids = itertools.count(1)
        self._stream: _Stream | None = None
        self._server: grpc.aio.Server | None = None
        self._changed = asyncio.Condition()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def tls(self) -> Insecure:
        """What a Driver connects with: plain text (an in-process fake on loopback)."""
        return INSECURE

    async def __aenter__(self) -> FakeMaster:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    async def start(self) -> None:
        """Serve on the same port as before, or a free one the first time."""
        server = grpc.aio.server()
        pb_grpc.add_SchedulerServicer_to_server(_Servicer(self), server)  # type: ignore[no-untyped-call]  # generated, unannotated
        self.port = server.add_insecure_port(f"127.0.0.1:{self.port}")
        await server.start()
        self._server = server

    async def stop(self) -> None:
        """Go away abruptly, as a crashed master would: open streams break."""
        if self._stream is not None:
            self._stream.queue.put_nowait(None)
            self._stream = None
        if self._server is not None:
            await self._server.stop(grace=None)
            self._server = None

    async def restart(self) -> None:
        await self.stop()
        await self.start()

    # -- what the test does as the master ---------------------------------------------------

    def refuse(self, method: str, code: grpc.StatusCode, message: str) -> None:
        """Refuse the next call of ``method`` ("Accept", ..., or "Subscribe") with this status."""
        self._failures.setdefault(method, []).append((code, message))

    async def send(self, event: pb.Event) -> None:
        if self._stream is None:
            raise RuntimeError("no framework is subscribed")
        await self._stream.queue.put(event)

    async def send_offers(self, offers: Sequence[Offer]) -> None:
        await self.send(pb.Event(offers=pb.Offers(offers=offers)))

    async def send_update(self, statuses: Sequence[TaskStatus]) -> None:
        await self.send(pb.Event(update=pb.Update(statuses=statuses)))

    async def send_rescind(self, offer_ids: Sequence[str]) -> None:
        await self.send(pb.Event(rescind=pb.Rescind(offer_ids=offer_ids)))

    async def send_error(self, message: str) -> None:
        """Send ERROR and end the stream, as the master does when it removes a framework."""
        await self.send(pb.Event(error=pb.Error(message=message)))
        await self.drop_stream()

    async def drop_stream(self, code: grpc.StatusCode | None = None) -> None:
        """End the open stream: cleanly (None) or with an error status."""
        if self._stream is not None:
            await self._stream.queue.put(code)
            self._stream = None

    def calls_of(self, method: str) -> list[Any]:
        return [c.request for c in self.calls if c.method == method]

    async def wait_for(
        self, predicate: Callable[[], bool], timeout: float = 5.0, what: str = "condition"
    ) -> None:
        """Wait until ``predicate()`` holds (re-checked whenever a call or stream arrives)."""

        async def _wait() -> None:
            async with self._changed:
                await self._changed.wait_for(predicate)

        try:
            # asyncio.timeout, not wait_for, which on 3.11 drops a cancellation that comes as
            # the wait ends (see Driver._read_stream).
            async with asyncio.timeout(timeout):
                await _wait()
        except TimeoutError:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}") from None

    async def wait_for_calls(self, method: str, count: int = 1, timeout: float = 5.0) -> list[Any]:
        await self.wait_for(
            lambda: len(self.calls_of(method)) >= count, timeout, f"{count} {method} call(s)"
        )
        return self.calls_of(method)

    async def wait_for_subscriptions(self, count: int = 1, timeout: float = 5.0) -> None:
        await self.wait_for(
            lambda: len(self.subscriptions) >= count and self._stream is not None,
            timeout,
            f"{count} subscription(s)",
        )

    # -- called by the servicer ---------------------------------------------------------------

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    def _open_stream(self, request: pb.SubscribeRequest) -> _Stream:
        framework_id = request.framework_info.id or f"framework-{next(self._ids)}"
        if self._stream is not None:  # a new subscription replaces the old one (failover)
            self._stream.queue.put_nowait(None)
        self._stream = _Stream(framework_id, f"stream-{next(self._ids)}")
        return self._stream

    def _check(self, method: str, request: Any) -> tuple[grpc.StatusCode, str] | None:
        failures = self._failures.get(method)
        if failures:
            return failures.pop(0)
        stream = self._stream
        caller = request.caller
        if stream is None or caller.framework_id != stream.framework_id:
            return grpc.StatusCode.NOT_FOUND, f"unknown framework {caller.framework_id!r}"
        if caller.stream_id != stream.stream_id:
            return grpc.StatusCode.FAILED_PRECONDITION, f"stale stream {caller.stream_id!r}"
        return None


class _Servicer(pb_grpc.SchedulerServicer):
    def __init__(self, master: FakeMaster) -> None:
        self.master = master

    async def Subscribe(
        self, request: pb.SubscribeRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.Event]:
        m = self.master
        m.subscriptions.append(request)
        failures = m._failures.get("Subscribe")
        if failures:
            await m._notify()
            await context.abort(*failures.pop(0))
        stream = m._open_stream(request)
        await m._notify()
        yield pb.Event(
            subscribed=pb.Subscribed(
                framework_id=stream.framework_id,
                stream_id=stream.stream_id,
                heartbeat_interval_seconds=m.heartbeat_interval,
                master_id=m.master_id,
            )
        )
        heartbeat = m.heartbeat_interval or None
        while True:
            try:
                async with asyncio.timeout(heartbeat):  # not wait_for: see wait_for above
                    item = await stream.queue.get()
            except TimeoutError:
                if not m.mute_heartbeats:
                    yield pb.Event(heartbeat=pb.Heartbeat())
                    m.heartbeats_sent += 1
                    await m._notify()
                continue
            if item is None:
                return
            if isinstance(item, grpc.StatusCode):
                await context.abort(item, "dropped by the test")
            yield item

    async def _call(self, method: str, request: Any, context: grpc.aio.ServicerContext) -> Any:
        m = self.master
        m.calls.append(RecordedCall(method, request))
        await m._notify()
        refusal = m._check(method, request)
        if refusal is not None:
            await context.abort(*refusal)
        return pb.CallResponse()

    async def Accept(self, request: pb.AcceptRequest, context: grpc.aio.ServicerContext) -> Any:
        return await self._call("Accept", request, context)

    async def Decline(self, request: pb.DeclineRequest, context: grpc.aio.ServicerContext) -> Any:
        return await self._call("Decline", request, context)

    async def Suppress(self, request: pb.SuppressRequest, context: grpc.aio.ServicerContext) -> Any:
        return await self._call("Suppress", request, context)

    async def Revive(self, request: pb.ReviveRequest, context: grpc.aio.ServicerContext) -> Any:
        return await self._call("Revive", request, context)

    async def Kill(self, request: pb.KillRequest, context: grpc.aio.ServicerContext) -> Any:
        return await self._call("Kill", request, context)

    async def Acknowledge(
        self, request: pb.AcknowledgeRequest, context: grpc.aio.ServicerContext
    ) -> Any:
        return await self._call("Acknowledge", request, context)

    async def Reconcile(
        self, request: pb.ReconcileRequest, context: grpc.aio.ServicerContext
    ) -> Any:
        return await self._call("Reconcile", request, context)

    async def Teardown(self, request: pb.TeardownRequest, context: grpc.aio.ServicerContext) -> Any:
        return await self._call("Teardown", request, context)

    async def SetDemands(
        self, request: pb.SetDemandsRequest, context: grpc.aio.ServicerContext
    ) -> Any:
        return await self._call("SetDemands", request, context)

    async def Calls(
        self, request_iterator: AsyncIterator[pb.CallBatch], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.CallResultBatch]:
        m = self.master
        if not m.calls_stream:
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, "Method not implemented!")
        async for batch in request_iterator:
            if m.break_calls_stream is not None:
                code, m.break_calls_stream = m.break_calls_stream, None
                await context.abort(code, "broken by the test")
            m.call_batches += 1
            results = []
            for call in batch.calls:
                kind = call.WhichOneof("call")
                if kind is None:
                    code, message = grpc.StatusCode.INVALID_ARGUMENT, "call has no known type"
                else:
                    method = _METHODS[kind]
                    request = getattr(call, kind)
                    m.calls.append(RecordedCall(method, request, call.quiet))
                    m.call_timeouts.append(call.timeout_seconds)
                    code, message = m._check(method, request) or (grpc.StatusCode.OK, "")
                if call.quiet and code is grpc.StatusCode.OK:
                    continue  # as the master: a quiet call is answered only if it fails
                results.append(pb.CallResult(id=call.id, code=code.value[0], message=message))
            await m._notify()
            if results and not m.hold_calls:
                m.call_results += len(results)
                yield pb.CallResultBatch(results=results)


# The method of each Call field ("decline": "Decline", "set_demands": "SetDemands", ...), from
# the proto; the driver names the field the other way round.
_METHODS = {
    f.name: "".join(part.capitalize() for part in f.name.split("_"))
    for f in pb.Call.DESCRIPTOR.oneofs_by_name["call"].fields
}
