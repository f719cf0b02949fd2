"""master/ha/leader_gate.py: a standby taking over holds streaming calls until it leads (then
lets them through), refuses them if its takeover fails or takes longer than the hold, and
refuses unary calls at once."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc

from corral.master.ha.leader_gate import LeaderGate
from corral.zk_election import Contender


def _gate(hold: float = 30.0) -> LeaderGate:
    # Built, never connected: the gate reads only its events and leader.
    gate = LeaderGate(Contender("127.0.0.1:1", "/corral", 5.0, b""), "m2", "127.0.0.1:2", hold)
    gate.taking_over = True
    return gate


async def _behavior(_request: Any, _context: Any) -> None:
    return None


STREAM = grpc.stream_stream_rpc_method_handler(_behavior)
UNARY = grpc.unary_unary_rpc_method_handler(_behavior)


async def _intercept(gate: LeaderGate, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
    async def continuation(_details: Any) -> grpc.RpcMethodHandler:
        return handler

    return await gate.intercept_service(continuation, None)


async def test_a_stream_reaching_a_master_taking_over_is_let_through_once_it_leads() -> None:
    gate = _gate()
    held = asyncio.create_task(_intercept(gate, STREAM))
    await asyncio.sleep(0)  # the call is in the gate, waiting
    assert not held.done()
    gate.taking_over = False
    gate.open(7)
    got = await asyncio.wait_for(held, 5)
    assert got is STREAM  # the real handler: served by the new leader


async def test_a_stream_is_refused_when_the_takeover_fails_or_outlasts_the_hold() -> None:
    gate = _gate()
    held = asyncio.create_task(_intercept(gate, STREAM))
    await asyncio.sleep(0)
    gate.contender.lost_reason = "session expired"
    for callback in gate.contender.on_lost:
        callback()
    refused = await asyncio.wait_for(held, 5)
    assert refused is not STREAM and refused.stream_stream is not _behavior

    slow = _gate(hold=0.01)
    refused = await asyncio.wait_for(_intercept(slow, STREAM), 5)
    assert refused is not STREAM


async def test_a_unary_call_is_refused_at_once_while_taking_over() -> None:
    gate = _gate()
    refused = await asyncio.wait_for(_intercept(gate, UNARY), 5)
    assert refused is not UNARY and refused.unary_unary is not _behavior
