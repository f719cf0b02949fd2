"""Issue 18, admission control on a real master: a framework that accepts everything cannot push
the master's backlog past its bounds, and a refused accept is answered at once with
RESOURCE_EXHAUSTED and the bound's reason, never left to time out.

Real processes (a master and simulated agents) and a raw gRPC framework, so what is sent is
exactly what the test says: a burst of accepts in one CallBatch (the master reads a batch's
calls without yielding, so they all reach the inbox together), and greedy accepts onto an agent
that is paused (SIGSTOP), whose launches therefore stay in flight.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal

import aiohttp
import grpc
import grpc.aio
import pytest

from corral.frameworks.sdk.testing import LocalCluster
from corral.v1 import common_pb2, scheduler_pb2, scheduler_pb2_grpc
from tests.integration.recording import WAIT
from tests.master_http import master_session

pytestmark = pytest.mark.e2e

CALL_TIMEOUT = 60.0  # what each call tells the master its caller waits


class RawFramework:
    """Subscribes and keeps every offer it is sent; calls are made by the test."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.channel = cluster.channel()
        self.stub = scheduler_pb2_grpc.SchedulerStub(self.channel)  # type: ignore[no-untyped-call]
        self.caller = scheduler_pb2.Caller()
        self.offers: list[scheduler_pb2.Offer] = []
        self.new_offer = asyncio.Event()
        self._reader: asyncio.Task[None] | None = None

    async def subscribe(self) -> None:
        info = common_pb2.FrameworkInfo(name="greedy", role="*", failover_timeout=3600)
        call = self.stub.Subscribe(scheduler_pb2.SubscribeRequest(framework_info=info))
        first = await call.read()
        assert isinstance(first, scheduler_pb2.Event) and first.HasField("subscribed"), first
        self.caller = scheduler_pb2.Caller(
            framework_id=first.subscribed.framework_id, stream_id=first.subscribed.stream_id
        )
        self._reader = asyncio.create_task(self._read(call))

    async def _read(
        self, call: grpc.aio.UnaryStreamCall[scheduler_pb2.SubscribeRequest, scheduler_pb2.Event]
    ) -> None:
        while (event := await call.read()) is not grpc.aio.EOF:
            assert isinstance(event, scheduler_pb2.Event)
            if event.HasField("offers"):
                self.offers.extend(event.offers.offers)
                self.new_offer.set()

    async def next_offer(self) -> scheduler_pb2.Offer:
        async with asyncio.timeout(WAIT):
            while not self.offers:
                self.new_offer.clear()
                await self.new_offer.wait()
        return self.offers.pop(0)

    def accept(
        self, offer: scheduler_pb2.Offer, tasks: int, prefix: str
    ) -> scheduler_pb2.AcceptRequest:
        infos = [
            common_pb2.TaskInfo(
                task_id=f"{prefix}-{i}",
                name="greedy",
                agent_id=offer.agent_id,
                command=common_pb2.CommandInfo(value="true", shell=True),
                resources=common_pb2.Resources(cpus=1, mem=1),
                simulation=common_pb2.SimulationInfo(duration_seconds=3600),
            )
            for i in range(tasks)
        ]
        return scheduler_pb2.AcceptRequest(
            caller=self.caller,
            offer_ids=[offer.id],
            operations=[scheduler_pb2.Operation(launch=scheduler_pb2.LaunchOperation(tasks=infos))],
            filters=scheduler_pb2.Filters(refuse_seconds=0),
        )

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, grpc.aio.AioRpcError):
                await self._reader
        await self.channel.close()


async def _metrics(http: aiohttp.ClientSession, base: str) -> dict[str, float]:
    async with http.get(f"{base}/metrics") as r:
        text = await r.text()
    return {
        name: float(value)
        for line in text.splitlines()
        if line and not line.startswith("#")
        for name, value in [line.rsplit(" ", 1)]
    }


async def test_accepts_past_the_waiting_bound_are_refused_at_once() -> None:
    async with LocalCluster(
        agents=10,
        agent_resources="cpus:4;mem:1024;disk:100",
        agent_args=("--simulate",),
        master_args=("--max-waiting-accepts", "4", "--allocation-interval", "0.1"),
    ) as cluster:
        fw = RawFramework(cluster)
        try:
            await fw.subscribe()
            offers = [await fw.next_offer() for _ in range(10)]
            batch = scheduler_pb2.CallBatch(
                calls=[
                    scheduler_pb2.Call(
                        id=n + 1,
                        timeout_seconds=CALL_TIMEOUT,
                        accept=fw.accept(offer, 1, f"o{n}"),
                    )
                    for n, offer in enumerate(offers)
                ]
            )
            results: dict[int, scheduler_pb2.CallResult] = {}
            call = fw.stub.Calls()
            await call.write(batch)
            await call.done_writing()
            # Answered well inside the calls' 60 s: every refusal is made as the call arrives.
            async with asyncio.timeout(WAIT):
                while (answer := await call.read()) is not grpc.aio.EOF:
                    assert isinstance(answer, scheduler_pb2.CallResultBatch)
                    results.update({r.id: r for r in answer.results})
            assert sorted(results) == list(range(1, 11))
            ok = sorted(i for i, r in results.items() if r.code == grpc.StatusCode.OK.value[0])
            refused = [r for r in results.values() if r.code != grpc.StatusCode.OK.value[0]]
            assert ok == [1, 2, 3, 4]  # the first four waited; the core launched them
            assert len(refused) == 6
            for r in refused:
                assert r.code == grpc.StatusCode.RESOURCE_EXHAUSTED.value[0]
                assert "accepts already wait for the master (the bound is 4)" in r.message
            async with master_session(cluster) as http:
                m = await _metrics(http, f"{cluster.base_url}")
            assert m['corral_accepts_refused_total{bound="waiting_accepts"}'] == 6
            assert m["corral_accepts_waiting_peak"] == 4
        finally:
            await fw.close()


async def test_a_greedy_framework_cannot_push_a_paused_agent_past_its_launch_bound() -> None:
    bound = 8
    async with LocalCluster(
        agents=1,
        agent_resources="cpus:64;mem:4096;disk:100",
        agent_args=("--simulate",),
        master_args=(
            *("--max-agent-launches", str(bound), "--allocation-interval", "0.1"),
            *("--agent-timeout", "120"),  # paused for the test, not lost
        ),
    ) as cluster:
        base = f"{cluster.base_url}"
        fw = RawFramework(cluster)
        agent = cluster.processes["agent-0"]
        try:
            await fw.subscribe()
            offer = await fw.next_offer()
            os.kill(agent.pid, signal.SIGSTOP)  # from here on nothing it is sent starts
            launched = refused = 0
            async with master_session(cluster) as http:
                while launched < bound:
                    # Everything offered, as tasks; refused, the framework insists with one.
                    for n in (int(offer.resources.cpus), 1):
                        try:
                            await fw.stub.Accept(
                                fw.accept(offer, n, f"t{launched}-{n}"), timeout=CALL_TIMEOUT
                            )
                        except grpc.aio.AioRpcError as exc:
                            assert exc.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, exc
                            assert f"more would pass the bound of {bound} launches in flight" in (
                                exc.details() or ""
                            )
                            refused += 1
                            continue
                        launched += n
                        break
                    if launched < bound:
                        offer = await fw.next_offer()
                # At the bound the agent is held: cycles go on, and none offers it.
                m = await _metrics(http, base)
                cycles = m["corral_allocation_cycle_seconds_count"]
                async with asyncio.timeout(WAIT):
                    while m["corral_allocation_cycle_seconds_count"] < cycles + 5:
                        await asyncio.sleep(0.1)  # a remote process's counter: nothing to await
                        m = await _metrics(http, base)
                assert fw.offers == []
                assert m["corral_agents_held"] == 1
                assert m["corral_agent_launches_in_flight_max"] == bound
                assert m['corral_accepts_refused_total{bound="agent_launches"}'] == refused
                assert refused == bound  # each round, the accept of all it was offered
                async with http.get(f"{base}/api/v1/state") as r:
                    state = await r.json()
                staging = [t for t in state["tasks"] if t["state"] == "STAGING"]
                assert len(staging) == bound
                # Resumed, the agent starts them and is offered again.
                os.kill(agent.pid, signal.SIGCONT)
                offer = await fw.next_offer()
                assert offer.resources.cpus == 64 - bound
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(agent.pid, signal.SIGCONT)
            await fw.close()
