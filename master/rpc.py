"""gRPC servicers: decode wire messages into core events, await the answer, encode it back.

Decoding errors and refused calls become INVALID_ARGUMENT / NOT_FOUND / FAILED_PRECONDITION
with the reason; nothing reaches the core from a call that does not decode.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

from corral import events as cluster_events
from corral import limits
from corral.logging import get_logger
from corral.master import convert, views
from corral.master.convert import WireError
from corral.master.core import commands as cmd
from corral.master.core import events as ev
from corral.master.core.refusals import CallRejected
from corral.master.offer_wire import event_wire
from corral.master.outbox import MAX_BATCH_BYTES, text_bytes
from corral.master.rpc_checked import add_servicer
from corral.master.runtime import MasterRuntime, OutStream
from corral.supervise import spawn
from corral.v1 import (
    agent_pb2,
    agent_pb2_grpc,
    operator_pb2,
    operator_pb2_grpc,
    scheduler_pb2,
    scheduler_pb2_grpc,
)

log = get_logger("corral.master.rpc")


def _code_of(exc: CallRejected) -> grpc.StatusCode:
    """The status a refused call ends with, on the unary RPCs and on the CALLS stream: each
    Refusal is named after its gRPC status (tests/unit/test_refusals.py checks every one)."""
    return grpc.StatusCode[exc.code.value]


OK = scheduler_pb2.CallResponse()


# Aborts under way (a task must be referenced until it is done).
_aborting: set[asyncio.Task[None]] = set()


def _cut_when_behind(
    rt: MasterRuntime, stream: OutStream, context: grpc.aio.ServicerContext[Any, Any], kind: str
) -> None:
    """When ``stream`` fails (its peer fell too far behind), end the call from here, with
    RESOURCE_EXHAUSTED and the reason. The handler cannot: it is usually stuck writing to a
    peer that stopped reading, and gRPC's flow control holds that write until the peer reads.
    The status is set first (``abort``), then the handler is cancelled; its ``finally`` tells
    the core the stream closed (a framework is then DISCONNECTED: it keeps its tasks for its
    failover timeout and gets its pending statuses when it subscribes again)."""
    handler = asyncio.current_task()

    def cut(reason: str) -> None:
        rt.metrics.streams_cut.labels(kind).inc()
        log.warning("stream_cut", kind=kind, reason=reason)
        task = asyncio.ensure_future(_abort(context, reason))
        _aborting.add(task)
        task.add_done_callback(_aborting.discard)
        if handler is not None:
            handler.cancel()

    stream.on_fail = cut


async def _abort(context: grpc.aio.ServicerContext[Any, Any], reason: str) -> None:
    # abort() ends by raising AbortError, and refuses a call that already ended: either way
    # there is nothing left to do.
    with contextlib.suppress(Exception):
        await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, reason)


def add_servicers(runtime: MasterRuntime, server: grpc.aio.Server) -> None:
    """The master's three services on ``server``."""
    scheduler = SchedulerServicer(runtime)
    # Subscribe writes OFFERS as the pre-encoded bytes master/offer_wire.py makes.
    subscribe = grpc.unary_stream_rpc_method_handler(
        scheduler.Subscribe,
        request_deserializer=scheduler_pb2.SubscribeRequest.FromString,
        response_serializer=event_wire,
    )
    add_servicer(
        scheduler_pb2_grpc.add_SchedulerServicer_to_server,
        scheduler,
        server,
        {"Subscribe": subscribe},
    )
    add_servicer(
        agent_pb2_grpc.add_AgentServiceServicer_to_server,
        AgentServicer(runtime),
        server,
    )
    add_servicer(
        operator_pb2_grpc.add_OperatorServicer_to_server,
        OperatorServicer(runtime),
        server,
    )


async def _answer(
    context: grpc.aio.ServicerContext[Any, Any], work: Callable[[], Awaitable[None]]
) -> scheduler_pb2.CallResponse:
    try:
        await work()
    except WireError as exc:
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
    except CallRejected as exc:
        await context.abort(_code_of(exc), exc.message)
    return OK


def _refuse(filters: scheduler_pb2.Filters) -> float | None:
    return filters.refuse_seconds if filters.HasField("refuse_seconds") else None


class SchedulerServicer(scheduler_pb2_grpc.SchedulerServicer):
    def __init__(self, runtime: MasterRuntime) -> None:
        self.rt = runtime

    def _call_fields(self, caller: scheduler_pb2.Caller, kind: str) -> dict[str, Any]:
        if not caller.framework_id:
            raise WireError("caller.framework_id is empty")
        return {
            "stimulus_id": self.rt.stimulus(kind),
            "now": self.rt.clock(),
            "framework_id": convert.ident(caller.framework_id, "caller.framework_id"),
            "stream_id": convert.ident(caller.stream_id, "caller.stream_id"),
        }

    async def Subscribe(
        self, request: scheduler_pb2.SubscribeRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[scheduler_pb2.Event | bytes]:
        rt = self.rt
        try:
            spec = convert.framework_spec_from_pb(request.framework_info)
        except WireError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        stream_id = rt.new_secret()  # a credential: calls naming it act for the framework
        framework_id = spec.framework_id or rt.new_id("F")
        stream = rt.new_stream("framework")
        _cut_when_behind(rt, stream, context, "framework")
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
                    )
                )
            except CallRejected as exc:
                await context.abort(_code_of(exc), exc.message)
            async for msg in stream.messages():
                yield msg
        finally:
            rt.stream_ended("framework", stream)
            rt.forget_framework_stream(stream_id)
            rt.submit(
                ev.FrameworkStreamClosed(
                    stimulus_id=rt.stimulus("disconnect"),
                    now=rt.clock(),
                    framework_id=framework_id,
                    stream_id=stream_id,
                )
            )

    # Each call's core event, decoded from its request (WireError for what does not decode).
    # The unary RPCs and the CALLS stream share them.

    def _accept_event(self, request: scheduler_pb2.AcceptRequest) -> ev.Event:
        tasks = convert.accept_tasks(request)  # its errors first, as they always came
        return ev.Accept(
            **self._call_fields(request.caller, "accept"),
            offer_ids=convert.idents(request.offer_ids, "offer_ids", limits.MAX_OFFERS_PER_CALL),
            tasks=tasks,
            refuse_seconds=_refuse(request.filters),
        )

    def _decline_event(self, request: scheduler_pb2.DeclineRequest) -> ev.Event:
        return ev.Decline(
            **self._call_fields(request.caller, "decline"),
            offer_ids=convert.idents(request.offer_ids, "offer_ids", limits.MAX_OFFERS_PER_CALL),
            refuse_seconds=_refuse(request.filters),
        )

    def _suppress_event(self, request: scheduler_pb2.SuppressRequest) -> ev.Event:
        return ev.Suppress(**self._call_fields(request.caller, "suppress"))

    def _revive_event(self, request: scheduler_pb2.ReviveRequest) -> ev.Event:
        return ev.Revive(**self._call_fields(request.caller, "revive"))

    def _kill_event(self, request: scheduler_pb2.KillRequest) -> ev.Event:
        if not request.task_id:
            raise WireError("task_id is empty")
        return ev.Kill(
            **self._call_fields(request.caller, "kill"),
            task_id=convert.ident(request.task_id, "task_id"),
            agent_id=convert.ident(request.agent_id, "agent_id"),
            grace_seconds=request.kill_grace_period_seconds,
        )

    def _acknowledge_event(self, request: scheduler_pb2.AcknowledgeRequest) -> ev.Event:
        return ev.Acknowledge(
            **self._call_fields(request.caller, "ack"),
            acknowledgements=convert.acknowledgements(request),
        )

    def _reconcile_event(self, request: scheduler_pb2.ReconcileRequest) -> ev.Event:
        convert.count(request.tasks, "tasks to reconcile", limits.MAX_IDS_PER_CALL)
        return ev.Reconcile(
            **self._call_fields(request.caller, "reconcile"),
            tasks=tuple(
                (
                    convert.ident(t.task_id, "a reconciled task_id"),
                    convert.ident(t.agent_id, "a reconciled agent_id"),
                )
                for t in request.tasks
            ),
        )

    def _teardown_event(self, request: scheduler_pb2.TeardownRequest) -> ev.Event:
        return ev.Teardown(**self._call_fields(request.caller, "teardown"))

    def _set_demands_event(self, request: scheduler_pb2.SetDemandsRequest) -> ev.Event:
        convert.count(request.demands, "demands", limits.MAX_DEMANDS)
        return ev.SetDemands(
            **self._call_fields(request.caller, "set-demands"),
            demands=tuple(convert.demand_from_pb(d) for d in request.demands),
        )

    async def _unary(
        self,
        context: grpc.aio.ServicerContext[Any, Any],
        build: Callable[[Any], ev.Event],
        request: Any,
    ) -> scheduler_pb2.CallResponse:
        async def work() -> None:
            await self.rt.call(build(request), context.time_remaining())

        return await _answer(context, work)

    async def Accept(
        self, request: scheduler_pb2.AcceptRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> scheduler_pb2.CallResponse:
        return await self._unary(context, self._accept_event, request)

    async def Decline(
        self, request: scheduler_pb2.DeclineRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> scheduler_pb2.CallResponse:
        return await self._unary(context, self._decline_event, request)

    async def Suppress(
        self, request: scheduler_pb2.SuppressRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> scheduler_pb2.CallResponse:
        return await self._unary(context, self._suppress_event, request)

    async def Revive(
        self, request: scheduler_pb2.ReviveRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> scheduler_pb2.CallResponse:
        return await self._unary(context, self._revive_event, request)

    async def Kill(
        self, request: scheduler_pb2.KillRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> scheduler_pb2.CallResponse:
        return await self._unary(context, self._kill_event, request)

    async def Acknowledge(
        self,
        request: scheduler_pb2.AcknowledgeRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> scheduler_pb2.CallResponse:
        return await self._unary(context, self._acknowledge_event, request)

    async def Reconcile(
        self, request: scheduler_pb2.ReconcileRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> scheduler_pb2.CallResponse:
        return await self._unary(context, self._reconcile_event, request)

    async def Teardown(
        self, request: scheduler_pb2.TeardownRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> scheduler_pb2.CallResponse:
        return await self._unary(context, self._teardown_event, request)

    async def SetDemands(
        self, request: scheduler_pb2.SetDemandsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> scheduler_pb2.CallResponse:
        return await self._unary(context, self._set_demands_event, request)

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
        # without its ``_<kind>_event`` fails here, not silently as "no known type".
        builders: dict[str, Callable[[Any], ev.Event]] = {
            kind: getattr(self, f"_{kind}_event") for kind in CALL_KINDS
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
                    results.expect(call.id, submit(event, timeout))
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
        self._wake = asyncio.Event()

    def add(self, call_id: int, code: grpc.StatusCode, message: str = "") -> None:
        self._ready.append(
            scheduler_pb2.CallResult(id=call_id, code=_status_code(code), message=message)
        )
        self._wake.set()

    @staticmethod
    def _result_bytes(result: scheduler_pb2.CallResult) -> int:
        """At least the result's serialized size (id, code, message, key and length)."""
        return 32 + text_bytes(result.message)

    def expect(self, call_id: int, answer: asyncio.Future[Any]) -> None:
        """The core's answer to call ``call_id`` comes as ``answer``."""
        self._outstanding += 1

        def done(future: asyncio.Future[Any]) -> None:
            self._outstanding -= 1
            if future.cancelled():
                self.add(call_id, grpc.StatusCode.CANCELLED, "the master is stopping")
                return
            exc = future.exception()
            if exc is None:
                self.add(call_id, grpc.StatusCode.OK)
            elif isinstance(exc, CallRejected):
                self.add(call_id, _code_of(exc), exc.message)
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


class AgentServicer(agent_pb2_grpc.AgentServiceServicer):
    def __init__(self, runtime: MasterRuntime) -> None:
        self.rt = runtime

    async def Connect(
        self,
        request_iterator: AsyncIterator[agent_pb2.AgentMessage],
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> AsyncIterator[agent_pb2.MasterMessage]:
        rt = self.rt
        try:
            first = await request_iterator.__anext__()
        except StopAsyncIteration:
            return
        if not first.HasField("register"):
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, "the first message must be REGISTER"
            )
        try:
            convert.count(first.register.tasks, "reported tasks", limits.MAX_TASKS_PER_AGENT)
            convert.ident(first.register.secret, "register.secret")
            spec = convert.agent_spec_from_pb(first.register.info)
            latest = {s.task_id: s for s in first.register.task_statuses}
            tasks = tuple(
                convert.reported_task_from_pb(t, latest.get(t.task_id))
                for t in first.register.tasks
            )
        except WireError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        connection = rt.new_connection()
        agent_id = spec.agent_id or rt.new_id("S")
        stream = rt.new_stream("agent")
        _cut_when_behind(rt, stream, context, "agent")
        rt.agent_streams[connection] = stream
        try:
            await rt.call(
                ev.AgentRegister(
                    stimulus_id=rt.stimulus("register"),
                    now=rt.clock(),
                    connection=connection,
                    spec=spec,
                    new_agent_id=agent_id,
                    tasks=tasks,
                    secret=first.register.secret,
                    new_secret=rt.new_secret(),
                )
            )
        except CallRejected as exc:
            rt.forget_agent_connection(connection)
            await context.abort(_code_of(exc), exc.message)
        reader = spawn(
            self._read(request_iterator, agent_id, connection, stream),
            "agent-reader",
            log,
            on_failure=self.rt.task_failed,
        )
        try:
            async for msg in stream.messages():
                yield msg
        finally:
            reader.cancel()
            rt.stream_ended("agent", stream)
            rt.forget_agent_connection(connection)
            rt.submit(
                ev.AgentStreamClosed(
                    stimulus_id=rt.stimulus("agent-closed"),
                    now=rt.clock(),
                    agent_id=agent_id,
                    connection=connection,
                )
            )

    async def _read(
        self,
        request_iterator: AsyncIterator[agent_pb2.AgentMessage],
        agent_id: str,
        connection: int,
        stream: OutStream,
    ) -> None:
        rt = self.rt

        def bad(exc: WireError) -> None:
            log.warning("bad_status_update", agent_id=agent_id, error=str(exc))

        try:
            async for msg in request_iterator:
                kind = msg.WhichOneof("message")
                if kind == "heartbeat":
                    rt.submit(
                        ev.AgentHeartbeat(
                            stimulus_id="heartbeat",
                            now=rt.clock(),
                            agent_id=agent_id,
                            connection=connection,
                        )
                    )
                elif kind == "status_updates":
                    # Statuses are forwarded to frameworks as received: fields this master does
                    # not know must not ride along (nor escape the outbox's size estimate).
                    msg.DiscardUnknownFields()
                    rt.submit(
                        ev.AgentStatusUpdates(
                            stimulus_id=rt.stimulus("status"),
                            now=rt.clock(),
                            agent_id=agent_id,
                            connection=connection,
                            statuses=convert.agent_statuses(msg.status_updates, bad),
                        )
                    )
                else:
                    log.warning("unexpected_agent_message", agent_id=agent_id, kind=kind)
        except (grpc.aio.AioRpcError, asyncio.CancelledError):
            pass
        finally:
            stream.end()  # the agent's side ended: end ours so the handler returns


class OperatorServicer(operator_pb2_grpc.OperatorServicer):
    def __init__(self, runtime: MasterRuntime) -> None:
        self.rt = runtime

    async def GetState(
        self, request: operator_pb2.GetStateRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> operator_pb2.State:
        return await self.rt.query(views.state_pb)

    async def Explain(
        self, request: operator_pb2.ExplainRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> operator_pb2.Explanation:
        now = self.rt.clock()
        framework_id = request.framework_id

        def run(core: Any) -> dict[str, Any]:
            result: dict[str, Any] = core.explain(framework_id, now)
            return result

        try:
            data = await self.rt.query(run)
        except CallRejected as exc:
            await context.abort(grpc.StatusCode.NOT_FOUND, exc.message)
        return operator_pb2.Explanation(
            framework_id=data["framework_id"],
            state=data["state"],
            suppressed=data["suppressed"],
            outstanding_offers=data["outstanding_offers"],
            offered_agents=data["offered_agents"],
            reasons={k: int(v) for k, v in data["reasons"].items()},
            details_json=json.dumps(data["details"], default=str),
            priority=data["priority"],
            wants_nothing=data["wants_nothing"],
            pending_demands_json=json.dumps(data["pending_demands"]),
        )

    async def _operator_call(
        self, context: grpc.aio.ServicerContext[Any, Any], event: ev.Event
    ) -> None:
        try:
            await self.rt.call(event)
        except CallRejected as exc:
            await context.abort(_code_of(exc), exc.message)

    async def SetWeight(
        self, request: operator_pb2.SetWeightRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> operator_pb2.SetWeightResponse:
        event = ev.SetWeight(
            stimulus_id=self.rt.stimulus("set-weight"),
            now=self.rt.clock(),
            role=request.role,
            weight=request.weight,
        )
        await self._operator_call(context, event)
        return operator_pb2.SetWeightResponse()

    async def SetQuota(
        self, request: operator_pb2.SetQuotaRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> operator_pb2.SetQuotaResponse:
        try:
            guarantee, limit = convert.quota_from_pb(request.quota)
        except WireError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        event = ev.SetQuota(
            stimulus_id=self.rt.stimulus("set-quota"),
            now=self.rt.clock(),
            role=request.role,
            guarantee=guarantee,
            limit=limit,
        )
        await self._operator_call(context, event)
        return operator_pb2.SetQuotaResponse()

    async def GetRoles(
        self, request: operator_pb2.GetRolesRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> operator_pb2.Roles:
        return await self.rt.query(views.roles_pb)

    async def SetPriorityClass(
        self,
        request: operator_pb2.SetPriorityClassRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> operator_pb2.SetPriorityClassResponse:
        try:
            c = convert.priority_class_from_pb(request.priority_class)
        except WireError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        event = ev.SetPriorityClass(
            stimulus_id=self.rt.stimulus("set-priority-class"),
            now=self.rt.clock(),
            priority_class=c,
        )
        await self._operator_call(context, event)
        return operator_pb2.SetPriorityClassResponse()

    async def DeletePriorityClass(
        self,
        request: operator_pb2.DeletePriorityClassRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> operator_pb2.DeletePriorityClassResponse:
        event = ev.DeletePriorityClass(
            stimulus_id=self.rt.stimulus("delete-priority-class"),
            now=self.rt.clock(),
            name=request.name,
        )
        await self._operator_call(context, event)
        return operator_pb2.DeletePriorityClassResponse()

    async def GetPriorityClasses(
        self,
        request: operator_pb2.GetPriorityClassesRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> operator_pb2.PriorityClasses:
        return await self.rt.query(views.priority_classes_pb)

    async def Watch(
        self, request: operator_pb2.WatchRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[operator_pb2.ClusterEvent]:
        reason = await _reason_of(request.reason, context)
        q = self.rt.watch()
        try:
            while True:
                e = await q.get()
                if not reason or e.reason == reason:
                    yield event_pb(e)
        finally:
            self.rt.unwatch(q)

    async def GetEvents(
        self, request: operator_pb2.GetEventsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> operator_pb2.ClusterEvents:
        reason = await _reason_of(request.reason, context)
        log = self.rt.recent_events
        return operator_pb2.ClusterEvents(
            events=[event_pb(e) for e in log.select(reason)], dropped=log.dropped
        )


async def _reason_of(text: str, context: grpc.aio.ServicerContext[Any, Any]) -> str:
    """A request's reason filter ("" : all); INVALID_ARGUMENT if it is not a reason."""
    if text:
        try:
            cluster_events.check_reason(text)
        except ValueError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
    return text


def event_pb(e: cmd.ClusterEvent) -> operator_pb2.ClusterEvent:
    return operator_pb2.ClusterEvent(
        timestamp=e.timestamp,
        kind=e.kind,
        subject=e.subject,
        message=e.message,
        stimulus_id=e.stimulus_id,
        reason=e.reason,
        object_kind=e.object_kind,
    )
