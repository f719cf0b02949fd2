"""Issue 15, "Nothing lost" (bounded everything): a framework that stops reading its stream.

Real processes: a master with the smallest stream bound (8 MiB), a simulated agent, and a raw
gRPC framework that launches 20,000 tasks with long ids and then reads nothing. Their statuses
(~15 MB) cannot all wait in the master for it: the stream is cut (RESOURCE_EXHAUSTED with the
reason), the framework is DISCONNECTED but keeps its tasks, the most the master ever queued for
it stayed under the bound, and when it subscribes again its pending statuses come.
"""

from __future__ import annotations

import asyncio

import aiohttp
import grpc
import pytest

from corral.frameworks.sdk.testing import LocalCluster
from tests.integration.recording import WAIT
from tests.integration.slow_framework import FLOOD_MASTER_ARGS, StalledFramework
from tests.master_http import master_session

pytestmark = pytest.mark.e2e

BOUND = 8 * 1024 * 1024


async def _metric(http: aiohttp.ClientSession, base: str, line_start: str) -> float:
    async with http.get(f"{base}/metrics") as r:
        for line in (await r.text()).splitlines():
            if line.startswith(line_start):
                return float(line.rsplit(" ", 1)[1])
    return 0.0


async def _framework_state(http: aiohttp.ClientSession, base: str, fid: str) -> str:
    async with http.get(f"{base}/api/v1/state", params={"framework_id": fid}) as r:
        state = await r.json()
    [fw] = state["frameworks"]
    return str(fw["state"])


async def test_a_framework_that_stops_reading_is_cut_at_the_bound_and_can_come_back() -> None:
    async with LocalCluster(
        agents=1,
        agent_resources="cpus:1000;mem:100000;disk:1000",
        agent_args=("--simulate",),
        master_args=(
            *FLOOD_MASTER_ARGS,  # the flood is the point here (see slow_framework.py)
            *("--allocation-interval", "0.2", "--stream-queue-mib", "8"),
        ),
    ) as cluster:
        base = f"{cluster.base_url}"
        stalled = StalledFramework(cluster.master)
        try:
            await stalled.subscribe()
            await stalled.launch(20_000, id_length=250, seconds=0.5)
            # From here on nothing reads the stream.
            async with master_session(cluster) as http:
                loop = asyncio.get_running_loop()
                deadline = loop.time() + 2 * WAIT
                while await _framework_state(http, base, stalled.framework_id) != "disconnected":
                    assert loop.time() < deadline, "the stalled framework was never cut"
                    await asyncio.sleep(0.2)  # a remote process's state: nothing to await
                peak = await _metric(http, base, 'corral_stream_queue_peak_bytes{kind="framework"}')
                assert 0 < peak <= BOUND
                assert await _metric(http, base, 'corral_streams_cut_total{kind="framework"}') == 1
                async with http.get(f"{base}/api/v1/state") as r:
                    state = await r.json()
                [fw] = [f for f in state["frameworks"] if f["id"] == stalled.framework_id]
                assert fw["pending_updates"] > 0  # kept for when it comes back

            # What it had read was buffered; past that the call ends with the reason.
            with pytest.raises(grpc.aio.AioRpcError) as cut:
                async with asyncio.timeout(WAIT):
                    while True:
                        await stalled.next_event()
            assert cut.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "fell too far behind" in (cut.value.details() or "")

            # Back with its id: the same framework, and its pending statuses come.
            await stalled.subscribe()
            async with asyncio.timeout(WAIT):
                while not (await stalled.next_event()).HasField("update"):
                    pass
        finally:
            await stalled.close()
