"""A quiet call on the CALLS stream (Call.quiet) is answered only if it fails: a real master
in this process, a raw stub, so what comes back is exactly what the master wrote."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from corral.frameworks.sdk import tls as sdk_tls
from corral.master.core.config import MasterConfig
from corral.master.server import RunningMaster, start_master
from corral.v1 import common_pb2 as pb
from corral.v1 import scheduler_pb2 as s
from corral.v1 import scheduler_pb2_grpc
from tests.pki import TestPKI

TIMEOUT = 10.0


@pytest.fixture
async def channel(tmp_path: Path) -> AsyncIterator[grpc.aio.Channel]:
    certs = TestPKI(tmp_path)
    master: RunningMaster = await start_master(
        MasterConfig(allocation_interval=0.05),
        "127.0.0.1:0",
        "127.0.0.1:0",
        allocator="numpy",
        tls=certs.server,
    )
    try:
        async with sdk_tls.aio_channel(master.grpc_address, certs.operator) as ch:
            yield ch
    finally:
        await master.stop()


async def test_only_a_quiet_calls_refusal_is_answered_and_in_order(
    channel: grpc.aio.Channel,
) -> None:
    stub = scheduler_pb2_grpc.SchedulerStub(channel)  # type: ignore[no-untyped-call]
    events = stub.Subscribe(
        s.SubscribeRequest(framework_info=pb.FrameworkInfo(name="quiet", role="*")),
        timeout=TIMEOUT,
    )
    subscribed = (await events.read()).subscribed
    ours = s.Caller(framework_id=subscribed.framework_id, stream_id=subscribed.stream_id)
    stranger = s.Caller(framework_id="nobody", stream_id="x")
    calls = stub.Calls(timeout=TIMEOUT)
    await calls.write(
        s.CallBatch(
            calls=[
                s.Call(
                    id=1, quiet=True, timeout_seconds=5, suppress=s.SuppressRequest(caller=ours)
                ),
                s.Call(
                    id=2, quiet=True, timeout_seconds=5, revive=s.ReviveRequest(caller=stranger)
                ),
                s.Call(id=3, quiet=True, timeout_seconds=5, revive=s.ReviveRequest(caller=ours)),
                s.Call(id=4, timeout_seconds=5, suppress=s.SuppressRequest(caller=ours)),
            ]
        )
    )
    await calls.done_writing()
    results = []
    async with asyncio.timeout(TIMEOUT):
        async for batch in calls:
            results.extend((r.id, r.code) for r in batch.results)
    assert await calls.code() == grpc.StatusCode.OK, await calls.details()
    # 1 and 3 succeeded quietly; 2 names a framework the master does not know; 4 is loud.
    ((refused_id, refused_code), (last_id, last_code)) = results
    assert refused_id == 2 and refused_code != grpc.StatusCode.OK.value[0]
    assert (last_id, last_code) == (4, grpc.StatusCode.OK.value[0])
    events.cancel()
