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


class _Details:
    def __init__(self, method: str) -> None:
        self.method = method


SUBSCRIBE = "/corral.v1.Scheduler/Subscribe"
CONNECT = "/corral.v1.AgentService/Connect"


async def _intercept(
    gate: LeaderGate, handler: grpc.RpcMethodHandler, method: str = SUBSCRIBE
) -> grpc.RpcMethodHandler:
    async def continuation(_details: Any) -> grpc.RpcMethodHandler:
        return handler

    return await gate.intercept_service(continuation, _Details(method))


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


async def test_held_frameworks_go_first_and_agents_a_few_a_turn_in_arrival_order() -> None:
    """Let through all at once, 50,000 agents' registrations were decoded before a framework's
    SUBSCRIBE got the event loop; paced, the framework goes through at once (it arrived last
    here) and the agents follow in the order they came, ``agents_per_turn`` a turn."""
    gate = _gate()
    gate.agents_per_turn = 10
    through: list[str] = []
    agents = []
    for i in range(100):
        task = asyncio.create_task(_intercept(gate, STREAM, CONNECT))
        task.add_done_callback(lambda t, i=i: through.append(f"agent-{i}"))
        agents.append(task)
    framework = asyncio.create_task(_intercept(gate, STREAM, SUBSCRIBE))
    framework.add_done_callback(lambda _: through.append("framework"))
    await asyncio.sleep(0)  # every call is in the gate, waiting
    assert not through
    gate.taking_over = False
    gate.open(7)
    assert await asyncio.wait_for(framework, 5) is STREAM
    agents_before = through.index("framework")
    assert agents_before <= gate.agents_per_turn, (
        f"{agents_before} agents went through before the framework"
    )
    got = await asyncio.wait_for(asyncio.gather(*agents), 5)
    assert all(handler is STREAM for handler in got)
    assert [n for n in through if n != "framework"] == [f"agent-{i}" for i in range(100)]


async def test_held_agents_are_refused_when_the_takeover_fails() -> None:
    gate = _gate()
    held = [asyncio.create_task(_intercept(gate, STREAM, CONNECT)) for _ in range(3)]
    await asyncio.sleep(0)
    gate.contender.lost_reason = "session expired"
    for callback in gate.contender.on_lost:
        callback()
    refused = await asyncio.wait_for(asyncio.gather(*held), 5)
    assert all(r is not STREAM and r.stream_stream is not _behavior for r in refused)
