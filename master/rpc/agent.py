"""The AgentService: an agent's one stream (Connect), REGISTER first, then heartbeats and status
updates in, and the master's messages for it out."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc

from corral import limits
from corral.master import framework_messages
from corral.master.core import events as ev
from corral.master.core.refusals import CallRejected
from corral.master.rpc.common import code_of, cut_when_behind, log
from corral.master.rpc.out_stream import OutStream
from corral.master.runtime import MasterRuntime
from corral.master.security import seals
from corral.master.security.principals import principal_of
from corral.master.wire import convert
from corral.master.wire import usage as usage_wire
from corral.master.wire.convert import WireError
from corral.supervise import spawn
from corral.v1 import agent_pb2, agent_pb2_grpc


class AgentServicer(agent_pb2_grpc.AgentServiceServicer):
    def __init__(self, runtime: MasterRuntime) -> None:
        self.rt = runtime

    async def Connect(
        self,
        request_iterator: AsyncIterator[agent_pb2.AgentMessage],
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> AsyncIterator[agent_pb2.MasterMessage]:
        registered = await self._register(request_iterator, context)
        if registered is None:
            return
        agent_id, connection, stream = registered
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
            self.rt.agent_stream_closed(stream, agent_id, connection)

    async def _register(
        self,
        request_iterator: AsyncIterator[agent_pb2.AgentMessage],
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> tuple[str, int, OutStream] | None:
        """Read and register the stream's REGISTER. A coroutine of its own, so what it parsed
        (the message with every task the agent reported) is let go once the agent is
        registered, not held by the stream's frame for the stream's life."""
        rt = self.rt
        try:
            first = await request_iterator.__anext__()
        except StopAsyncIteration:
            return None
        if not first.HasField("register"):
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, "the first message must be REGISTER"
            )
        try:
            convert.count(first.register.tasks, "reported tasks", limits.MAX_TASKS_PER_AGENT)
            convert.ident(first.register.secret, "register.secret")
            status_retry = convert.status_retry(first.register.status_retry_seconds)
            spec = convert.agent_spec_from_pb(first.register.info)
            # Keyed as the agent keys its tasks: two frameworks' tasks may share an id.
            latest = {(s.framework_id, s.task_id): s for s in first.register.task_statuses}
            tasks = tuple(
                seals.checked_owner(
                    rt.seals,
                    convert.reported_task_from_pb(t, latest.get((t.framework_id, t.task_id))),
                    t.framework_seal,
                )
                for t in first.register.tasks
            )
        except WireError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        connection = rt.new_connection()
        agent_id = spec.agent_id or rt.new_id("S")
        principal = principal_of(context)
        secret = first.register.secret
        sealed = False
        if rt.seals is not None and principal.name:
            # An id's secret is the seal of the id and the certificate it was issued to, so a
            # master that forgot the id can still check it (master/security/seals.py).
            new_secret = rt.seals.agent_secret(agent_id, principal.name)
            sealed = bool(spec.agent_id) and rt.seals.agent_secret_ok(
                spec.agent_id, principal.name, secret
            )
        else:
            new_secret = rt.new_secret()
        stream = rt.new_stream("agent", status_retry)
        cut_when_behind(rt, stream, context, "agent")
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
                    secret=secret,
                    new_secret=new_secret,
                    secret_sealed=sealed,
                    principal=principal,
                )
            )
        except CallRejected as exc:
            rt.forget_agent_connection(connection)
            await context.abort(code_of(exc), exc.message)
        return agent_id, connection, stream

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
                elif kind == "framework_message":  # master/framework_messages.py
                    framework_messages.to_framework(rt, agent_id, msg.framework_message)
                elif kind == "executor_terminated":  # master/core/losses.py
                    try:
                        fw_id, executor_id, status, message = convert.executor_terminated(
                            msg.executor_terminated
                        )
                    except WireError as exc:
                        log.warning("bad_executor_terminated", agent_id=agent_id, error=str(exc))
                        continue
                    rt.submit(
                        ev.AgentExecutorTerminated(
                            stimulus_id=rt.stimulus("executor"),
                            now=rt.clock(),
                            agent_id=agent_id,
                            connection=connection,
                            framework_id=fw_id,
                            executor_id=executor_id,
                            status=status,
                            message=message,
                        )
                    )
                elif kind == "file_chunk":
                    rt.sandbox.deliver(connection, msg.file_chunk)  # master/sandbox_relay.py
                elif kind == "usage":
                    try:
                        usage, tasks = usage_wire.agent_usage_from_pb(msg.usage)
                    except WireError as exc:
                        log.warning("bad_usage_report", agent_id=agent_id, error=str(exc))
                        continue
                    rt.submit(
                        ev.AgentUsageReport(
                            stimulus_id=rt.stimulus("usage"),
                            now=rt.clock(),
                            agent_id=agent_id,
                            connection=connection,
                            usage=usage,
                            tasks=tasks,
                        )
                    )
                else:
                    log.warning("unexpected_agent_message", agent_id=agent_id, kind=kind)
        except (grpc.aio.AioRpcError, asyncio.CancelledError):
            pass
        finally:
            stream.end()  # the agent's side ended: end ours so the handler returns
