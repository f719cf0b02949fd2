"""Registering a gRPC service so that a request which does not decode (corrupt bytes, invalid
UTF-8 in a string field) is answered INVALID_ARGUMENT with the reason, on every method and
stream, instead of gRPC's UNKNOWN "Unexpected DecodeError". One mechanism for all services: each
handler gets a deserializer that never raises and a wrapper that refuses what did not decode.
The same wrapper counts each method's messages received and sent (``Counting``), as
go-grpc-prometheus' interceptors do.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import grpc


@dataclass(frozen=True, slots=True)
class Undecodable:
    """What a request that does not decode (corrupt bytes, invalid UTF-8 in a string) turns
    into: the handler answers it with INVALID_ARGUMENT. A deserializer that raised would make
    gRPC answer UNKNOWN "Unexpected DecodeError", with no reason a caller can act on."""

    reason: str


# (grpc_type, service, method) -> (count one received, count one sent); grpc_type as
# go-grpc-prometheus names it: unary, client_stream, server_stream, bidi_stream.
Counting = Callable[[str, str, str], tuple[Callable[[], None], Callable[[], None]]]
# (method, context) -> None, or the call ended (context.abort) before its handler runs: the
# operator endpoints' authorization (rpc.py).
Guard = Callable[[str, grpc.aio.ServicerContext[Any, Any]], Awaitable[None]]


def _uncounted(grpc_type: str, service: str, method: str) -> tuple[Any, Any]:
    return _nothing, _nothing


def _nothing() -> None:
    pass


def _never_raises(deserializer: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    def decode(data: bytes) -> Any:
        try:
            return deserializer(data)
        except Exception as exc:  # DecodeError, or whatever else a parser raises on junk
            return Undecodable(f"the message does not decode: {exc}")

    return decode


async def _refuse_undecodable(context: grpc.aio.ServicerContext[Any, Any], request: Any) -> None:
    if isinstance(request, Undecodable):
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, request.reason)


async def _unguarded(method: str, context: grpc.aio.ServicerContext[Any, Any]) -> None:
    pass


def _checked(
    handler: Any, service: str, method: str, counting: Counting, guard: Guard = _unguarded
) -> Any:
    """``handler`` (a grpc RpcMethodHandler) with a deserializer that never raises, and a
    behaviour that ends the call with INVALID_ARGUMENT when a request does not decode; every
    message received and sent is counted; ``guard`` may end the call before the handler."""
    deserializer = _never_raises(handler.request_deserializer)
    if handler.unary_unary is not None:
        unary = handler.unary_unary
        received, sent = counting("unary", service, method)

        async def unary_unary(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            received()
            await guard(method, context)
            await _refuse_undecodable(context, request)
            response = await unary(request, context)
            sent()
            return response

        return handler._replace(request_deserializer=deserializer, unary_unary=unary_unary)
    if handler.unary_stream is not None:
        producer = handler.unary_stream
        received, sent = counting("server_stream", service, method)

        async def unary_stream(
            request: Any, context: grpc.aio.ServicerContext[Any, Any]
        ) -> AsyncIterator[Any]:
            received()
            await guard(method, context)
            await _refuse_undecodable(context, request)
            # aclosing: when gRPC closes this generator, the servicer's runs its cleanup now,
            # not whenever the garbage collector gets to it.
            async with contextlib.aclosing(producer(request, context)) as responses:
                async for response in responses:
                    sent()
                    yield response

        return handler._replace(request_deserializer=deserializer, unary_stream=unary_stream)

    # A request stream is read by the servicer, often from a task of its own, where aborting
    # the call does not end it cleanly. So an undecodable message ends the requests as a
    # half-close would (the servicer winds down as usual), and the handler's own task then
    # ends the call with INVALID_ARGUMENT.
    streaming = "bidi_stream" if handler.stream_stream is not None else "client_stream"
    received, sent = counting(streaming, service, method)

    def requests(iterator: AsyncIterator[Any], refused: list[str]) -> AsyncIterator[Any]:
        async def checked() -> AsyncIterator[Any]:
            async for request in iterator:
                received()
                if isinstance(request, Undecodable):
                    refused.append(request.reason)
                    return
                yield request

        return checked()

    if handler.stream_unary is not None:
        consumer = handler.stream_unary

        async def stream_unary(
            iterator: AsyncIterator[Any], context: grpc.aio.ServicerContext[Any, Any]
        ) -> Any:
            await guard(method, context)
            refused: list[str] = []
            response = await consumer(requests(iterator, refused), context)
            if refused:
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, refused[0])
            sent()
            return response

        return handler._replace(request_deserializer=deserializer, stream_unary=stream_unary)
    both = handler.stream_stream

    async def stream_stream(
        iterator: AsyncIterator[Any], context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[Any]:
        await guard(method, context)
        refused: list[str] = []
        async with contextlib.aclosing(both(requests(iterator, refused), context)) as responses:
            async for response in responses:
                sent()
                yield response
        if refused:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, refused[0])

    return handler._replace(request_deserializer=deserializer, stream_stream=stream_stream)


class _HandlerCapture:
    """Stands in for the server while generated code lists a service's handlers."""

    def __init__(self) -> None:
        self.service = ""
        self.handlers: dict[str, grpc.RpcMethodHandler] = {}

    def add_generic_rpc_handlers(self, handlers: Any) -> None:
        pass

    def add_registered_method_handlers(self, service: str, handlers: Any) -> None:
        self.service = service
        self.handlers = dict(handlers)


def add_servicer(
    register: Callable[[Any, Any], None],
    servicer: Any,
    server: grpc.aio.Server,
    overrides: dict[str, grpc.RpcMethodHandler] | None = None,
    counting: Counting = _uncounted,
    guard: Guard = _unguarded,
) -> None:
    """The generated registration ``register`` (add_XServicer_to_server), every method's
    handler made to answer undecodable requests with INVALID_ARGUMENT, to count its
    messages with ``counting`` and to pass ``guard`` first."""
    capture = _HandlerCapture()
    register(servicer, capture)
    handlers = capture.handlers
    for name, handler in (overrides or {}).items():
        if name not in handlers:
            raise RuntimeError(f"the generated {capture.service} registration changed shape")
        handlers[name] = handler
    handlers = {
        name: _checked(handler, capture.service, name, counting, guard)
        for name, handler in handlers.items()
    }
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(capture.service, handlers),)
    )
    server.add_registered_method_handlers(capture.service, handlers)
