"""What a master that does not lead answers: the leader's address, on gRPC and on HTTP.

gRPC: every call is refused with UNAVAILABLE, the reason naming the leader and the leader's
gRPC address in the ``corral-leader`` trailing metadata (the SDK's, the agent's and the CLI's
detectors follow it). HTTP: ``/health`` answers with this master's role; every other path is a
307 to ``//LEADER_HTTP/same/path``. Until a leader is known (an election under way, or this
master taking over), calls are refused with UNAVAILABLE and HTTP with 503, and clients retry.

One exception: a streaming call (an agent's Connect, a framework's Subscribe or Calls stream,
an operator's Watch) that reaches this master while it is taking over is held until it leads,
for at most ``TAKEOVER_HOLD`` seconds, then let through (or refused, if the takeover failed).
Refused, every agent would back off (up to 5 s) and a large cluster's agents would all come back
at once after the takeover, the standby idle meanwhile (docs/performance.md, "Master failover at
50,000 agents"); held, their streams are open when it leads and they register at once. Unary
calls are still refused at once: their callers have deadlines, and retry.

When it leads, the held streams are let through in an order: frameworks' and operators' at once,
agents' ``AGENTS_PER_TURN`` per turn of the event loop, first come first through. Let through
all at once, every agent's registration was decoded (in one turn of the loop each step) before
a framework's SUBSCRIBE or the core got the loop: at 50,000 agents, seconds with no framework
subscribed and no offer. Paced, frameworks subscribe at once and the core offers the first
agents back while the rest are let through (master/inbox.py keeps their registrations from
queueing ahead of the frameworks' calls).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
from aiohttp import web

from corral.leader_record import LEADER_METADATA
from corral.master.ha.leadership import Contender

# Longer than a takeover at 50,000 agents (fence, read, recover: ~4.5 s) with room for a slow
# machine; a stream held this long is refused as before.
TAKEOVER_HOLD = 30.0
# Agents' streams let through per turn of the event loop once it leads: each costs the loop its
# registration's decoding (~0.1-0.2 ms), so a turn stays within tens of milliseconds.
AGENTS_PER_TURN = 200
AGENT_STREAMS = "/corral.v1.AgentService/"


class LeaderGate(grpc.aio.ServerInterceptor):  # type: ignore[misc]  # grpc.aio untyped
    """Lets calls through only while this master leads (``open``); streams that arrive while it
    is taking over wait for it (the module's exception)."""

    def __init__(
        self,
        contender: Contender,
        master_id: str,
        grpc_address: str,
        takeover_hold: float = TAKEOVER_HOLD,
        agents_per_turn: int = AGENTS_PER_TURN,
    ) -> None:
        self.contender = contender
        self.master_id = master_id
        self.grpc_address = grpc_address
        self.takeover_hold = takeover_hold
        self.agents_per_turn = agents_per_turn
        self.is_open = False
        self.epoch = 0
        self.taking_over = False
        # Set once the takeover is decided: this master leads (open) or lost its leadership.
        self._decided = asyncio.Event()
        # Agents' streams held, each waiting for its turn (let through in arrival order).
        self._agents_held: deque[asyncio.Future[None]] = deque()
        self._releasing: asyncio.Task[None] | None = None
        contender.on_lost.append(self._lost)

    def open(self, epoch: int) -> None:
        self.epoch = epoch
        self.is_open = True
        self._decided.set()
        self._releasing = asyncio.get_running_loop().create_task(self._release_agents())

    def _lost(self) -> None:
        """The takeover failed: every held stream is let go at once, to be refused."""
        self._decided.set()
        while self._agents_held:
            turn = self._agents_held.popleft()
            if not turn.done():
                turn.set_result(None)

    async def _release_agents(self) -> None:
        """Let the held agents' streams through, ``agents_per_turn`` a turn of the loop."""
        held = self._agents_held
        while held:
            for _ in range(min(self.agents_per_turn, len(held))):
                turn = held.popleft()
                if not turn.done():  # (done: its call gave up waiting)
                    turn.set_result(None)
            await asyncio.sleep(0)

    def close(self) -> None:
        self.is_open = False

    @property
    def role(self) -> str:
        if self.is_open:
            return "leader"
        if self.contender.lost.is_set():
            return "deposed"
        return "taking-over" if self.taking_over else "standby"

    def refusal(self) -> tuple[str, str]:
        """Why a call is refused here, and the leader's gRPC address ("" if none is known)."""
        if self.contender.lost.is_set():
            return f"this master stopped leading: {self.contender.lost_reason}", ""
        leader = self.contender.leader
        if self.taking_over or leader is None:
            what = "this master is taking over" if self.taking_over else "no leader is known"
            return f"{what}; try again shortly", ""
        return f"this master is a standby; the leading master is {leader.grpc}", leader.grpc

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if self.is_open or handler is None:
            return handler
        if self.taking_over and (handler.request_streaming or handler.response_streaming):
            turn: asyncio.Future[None] | None = None
            if handler_call_details.method.startswith(AGENT_STREAMS):
                turn = asyncio.get_running_loop().create_future()
                self._agents_held.append(turn)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.takeover_hold):
                    await (self._decided.wait() if turn is None else turn)
            if self.is_open:
                return handler
        return _refusing(handler, self)


def _refusing(handler: grpc.RpcMethodHandler, gate: LeaderGate) -> grpc.RpcMethodHandler:
    """A handler of the same kind as ``handler`` that refuses the call with the leader."""

    async def abort(context: grpc.aio.ServicerContext[Any, Any]) -> None:
        message, leader = gate.refusal()
        if leader:
            context.set_trailing_metadata(((LEADER_METADATA, leader),))
        await context.abort(grpc.StatusCode.UNAVAILABLE, message)

    async def unary(_request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        await abort(context)

    async def streaming(_request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        await abort(context)
        yield  # a generator: the kind a streaming response needs

    kinds = {
        (False, False): grpc.unary_unary_rpc_method_handler,
        (False, True): grpc.unary_stream_rpc_method_handler,
        (True, False): grpc.stream_unary_rpc_method_handler,
        (True, True): grpc.stream_stream_rpc_method_handler,
    }
    make = kinds[(handler.request_streaming, handler.response_streaming)]
    return make(
        streaming if handler.response_streaming else unary,
        request_deserializer=handler.request_deserializer,
        response_serializer=handler.response_serializer,
    )


def http_middleware(gate: LeaderGate) -> Any:
    @web.middleware
    async def leader_only(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        contender = gate.contender
        if request.path == "/health":
            leader = (
                gate.grpc_address
                if gate.is_open
                else (contender.leader.grpc if contender.leader else None)
            )
            body = {
                "status": "ok" if not contender.lost.is_set() else "stopping",
                "master_id": gate.master_id,
                "role": gate.role,
                "epoch": gate.epoch,
                "leader": leader,
                "znode": contender.znode,
            }
            return web.json_response(body, status=200 if body["status"] == "ok" else 503)
        if gate.is_open:
            return await handler(request)
        message, leader_grpc = gate.refusal()
        info = contender.leader
        if leader_grpc and info is not None and info.http:
            raise web.HTTPTemporaryRedirect(f"//{info.http}{request.path_qs}")
        return web.json_response({"error": message}, status=503)

    return leader_only


def mesos_middleware(gate: LeaderGate) -> Any:
    """The Mesos API's answer on a master that does not lead, as a Mesos standby's: ``307`` to
    the leader's Mesos API (pymesos follows it), ``503`` while no leader is known (it retries).
    ``/health`` and ``/version`` are this master's own."""

    @web.middleware
    async def leader_only(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        if gate.is_open or request.path in ("/health", "/version"):
            return await handler(request)
        message, leader_grpc = gate.refusal()
        info = gate.contender.leader
        if leader_grpc and info is not None and info.mesos:
            scheme = "https" if request.secure else "http"
            raise web.HTTPTemporaryRedirect(f"{scheme}://{info.mesos}{request.path_qs}")
        return web.Response(status=503, text=message)

    return leader_only
