"""Issue 17, hardening: what a framework, an agent or an HTTP client sends cannot wedge, crash
or corrupt the master. A real master in this process (gRPC and HTTP on free ports), raw stubs
and raw bytes, so nothing is checked before the master sees it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest

from corral.limits import MAX_MESSAGE_BYTES
from corral.master.core.config import MasterConfig
from corral.master.server import RunningMaster, start_master
from corral.v1 import operator_pb2, operator_pb2_grpc, scheduler_pb2_grpc
from corral.v1 import scheduler_pb2 as s

TIMEOUT = 10.0


@pytest.fixture
async def master() -> AsyncIterator[RunningMaster]:
    running = await start_master(
        MasterConfig(allocation_interval=0.05), "127.0.0.1:0", "127.0.0.1:0", allocator="numpy"
    )
    try:
        yield running
    finally:
        await running.stop()


@pytest.fixture
async def channel(master: RunningMaster) -> AsyncIterator[grpc.aio.Channel]:
    # Larger than the master's limit on our side, so the master's own limit is what is tested.
    options = [("grpc.max_send_message_length", 4 * MAX_MESSAGE_BYTES)]
    async with grpc.aio.insecure_channel(master.grpc_address, options=options) as ch:
        yield ch


async def assert_serving(channel: grpc.aio.Channel) -> None:
    stub = operator_pb2_grpc.OperatorStub(channel)  # type: ignore[no-untyped-call]
    state = await stub.GetState(operator_pb2.GetStateRequest(), timeout=TIMEOUT)
    assert isinstance(state, operator_pb2.State)


async def test_a_message_over_the_size_limit_is_refused_by_grpc_and_the_master_serves_on(
    channel: grpc.aio.Channel,
) -> None:
    stub = scheduler_pb2_grpc.SchedulerStub(channel)  # type: ignore[no-untyped-call]
    caller = s.Caller(framework_id="f", stream_id="s")
    ack = s.AcknowledgeRequest(caller=caller)
    # One uuid that takes the message just past the limit.
    ack.acknowledgements.add(task_id="t", agent_id="a", uuid=b"x" * MAX_MESSAGE_BYTES)
    assert MAX_MESSAGE_BYTES < ack.ByteSize() < MAX_MESSAGE_BYTES + 64
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.Acknowledge(ack, timeout=TIMEOUT)
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, info.value
    await assert_serving(channel)
