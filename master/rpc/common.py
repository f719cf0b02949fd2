"""What the master's gRPC servicers share: the status a refused call ends with, the answer to a
unary call, and cutting a stream whose peer fell behind."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

import grpc

from corral.logging import get_logger
from corral.master.core.refusals import CallRejected
from corral.master.rpc.out_stream import OutStream
from corral.master.runtime import MasterRuntime
from corral.master.wire.convert import WireError
from corral.v1 import scheduler_pb2

log = get_logger("corral.master.rpc.services")


def code_of(exc: CallRejected) -> grpc.StatusCode:
    """The status a refused call ends with, on the unary RPCs and on the CALLS stream: each
    Refusal is named after its gRPC status (tests/unit/test_refusals.py checks every one)."""
    return grpc.StatusCode[exc.code.value]


OK = scheduler_pb2.CallResponse()


# Aborts under way (a task must be referenced until it is done).
_aborting: set[asyncio.Task[None]] = set()


def cut_when_behind(
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


async def answer(
    context: grpc.aio.ServicerContext[Any, Any], work: Callable[[], Awaitable[None]]
) -> scheduler_pb2.CallResponse:
    try:
        await work()
    except WireError as exc:
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
    except CallRejected as exc:
        await context.abort(code_of(exc), exc.message)
    return OK
