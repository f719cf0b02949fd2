"""Malformed calls over real gRPC: INVALID_ARGUMENT with a reason, nothing changes, the master
keeps serving. Uses raw stubs (not the SDK) so nothing is validated before the master sees it."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from corral.frameworks.sdk.testing import LocalCluster
from corral.v1 import common_pb2 as pb
from corral.v1 import scheduler_pb2 as s
from corral.v1 import scheduler_pb2_grpc

pytestmark = pytest.mark.e2e

STATUS_OF_CODE = {c.value[0]: c for c in grpc.StatusCode}


class RawFramework:
    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.stub = scheduler_pb2_grpc.SchedulerStub(channel)  # type: ignore[no-untyped-call]
        self.events: asyncio.Queue[s.Event] = asyncio.Queue()
        self.caller = s.Caller()
        self._reader: asyncio.Task[None] | None = None

    async def subscribe(self) -> None:
        call = self.stub.Subscribe(
            s.SubscribeRequest(framework_info=pb.FrameworkInfo(name="raw", role="*"))
        )

        async def read() -> None:
            async for event in call:
                await self.events.put(event)

        self._reader = asyncio.create_task(read())
        first = await asyncio.wait_for(self.events.get(), 10)
        assert first.HasField("subscribed"), first
        self.caller = s.Caller(
            framework_id=first.subscribed.framework_id, stream_id=first.subscribed.stream_id
        )

    async def next_offer(self) -> pb.Offer:
        while True:
            event = await asyncio.wait_for(self.events.get(), 15)
            if event.HasField("offers") and event.offers.offers:
                return event.offers.offers[0]

    def accept(self, offer_ids: list[str], *tasks: pb.TaskInfo) -> Any:
        return self.stub.Accept(
            s.AcceptRequest(
                caller=self.caller,
                offer_ids=offer_ids,
                operations=[s.Operation(launch=s.LaunchOperation(tasks=list(tasks)))],
                filters=s.Filters(refuse_seconds=0),
            ),
            timeout=10,
        )

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()


def task(
    task_id: str, cpus: float = 0.1, mem: float = 16, disk: float = 0, command: str = "true"
) -> pb.TaskInfo:
    return pb.TaskInfo(
        task_id=task_id,
        name=task_id,
        command=pb.CommandInfo(value=command, shell=True),
        resources=pb.Resources(cpus=cpus, mem=mem, disk=disk),
    )


@pytest.fixture
async def framework(tmp_path: Any) -> AsyncIterator[tuple[LocalCluster, RawFramework]]:
    async with (
        LocalCluster(
            agents=1, work_dir=tmp_path, master_args=("--allocation-interval", "0.2")
        ) as cluster,
        cluster.channel() as channel,
    ):
        fw = RawFramework(channel)
        await fw.subscribe()
        yield cluster, fw
        await fw.close()


BAD_TASKS = [
    (task("neg", cpus=-1), "cpus is negative"),
    (task("nan", mem=math.nan), "mem is NaN"),
    (task("inf", disk=math.inf), "disk is infinite"),
    (task("big", cpus=1000), "exceed the offered cpus"),
    (task("", cpus=0.1), "empty task_id"),
    (task("nocmd", command=""), "command is empty"),
]


@pytest.mark.parametrize(("bad", "reason"), BAD_TASKS, ids=[r for _, r in BAD_TASKS])
async def test_malformed_task_refused(
    framework: tuple[LocalCluster, RawFramework], bad: pb.TaskInfo, reason: str
) -> None:
    cluster, fw = framework
    offer = await fw.next_offer()
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await fw.accept([offer.id], bad)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert reason in (info.value.details() or "")
    # Nothing changed: the same offer is still good for a valid launch, and state is intact.
    await fw.accept([offer.id], task("good"))
    state = await cluster.state()
    assert [t.info.task_id for t in state.tasks] == ["good"]


async def test_unknown_used_and_duplicate_refused(
    framework: tuple[LocalCluster, RawFramework],
) -> None:
    cluster, fw = framework
    offer = await fw.next_offer()
    for offer_ids, tasks, reason in [
        (["no-such-offer"], [task("a")], "unknown, rescinded or already used"),
        ([offer.id], [task("dup"), task("dup")], "appears twice"),
    ]:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await fw.accept(offer_ids, *tasks)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert reason in (info.value.details() or "")
    await fw.accept([offer.id], task("first", command="sleep 30"))
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await fw.accept([offer.id], task("again"))
    assert "already used" in (info.value.details() or "")
    second = await fw.next_offer()
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await fw.accept([second.id], task("first"))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "already in use" in (info.value.details() or "")
    # The master keeps serving.
    await fw.accept([second.id], task("second"))
    state = await cluster.state()
    assert sorted(t.info.task_id for t in state.tasks) == ["first", "second"]


async def test_calls_from_unknown_framework_refused(
    framework: tuple[LocalCluster, RawFramework],
) -> None:
    _cluster, fw = framework
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await fw.stub.Decline(
            s.DeclineRequest(caller=s.Caller(framework_id="ghost", stream_id="x")), timeout=10
        )
    assert info.value.code() == grpc.StatusCode.NOT_FOUND
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await fw.stub.Suppress(
            s.SuppressRequest(
                caller=s.Caller(framework_id=fw.caller.framework_id, stream_id="stale")
            ),
            timeout=10,
        )
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await fw.stub.Decline(
            s.DeclineRequest(caller=fw.caller, filters=s.Filters(refuse_seconds=-3)), timeout=10
        )
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "refuse_seconds" in (info.value.details() or "")


async def test_calls_stream_answers_each_call_as_its_unary_rpc_would(
    framework: tuple[LocalCluster, RawFramework],
) -> None:
    """One CallBatch mixing good and bad calls: each result carries its call's id and the
    status and reason the unary RPC gives; the bad ones change nothing; after the caller
    half-closes, the master ends the stream once every call is answered."""
    cluster, fw = framework
    offer = await fw.next_offer()
    ghost = s.Caller(framework_id="ghost", stream_id="x")
    calls = [
        s.Call(
            id=1,
            accept=s.AcceptRequest(
                caller=fw.caller, offer_ids=[offer.id], operations=[s.Operation()]
            ),
        ),
        s.Call(
            id=2,
            accept=s.AcceptRequest(
                caller=fw.caller,
                offer_ids=[offer.id],
                operations=[s.Operation(launch=s.LaunchOperation(tasks=[task("neg", cpus=-1)]))],
            ),
        ),
        s.Call(id=3, kill=s.KillRequest(caller=fw.caller)),
        s.Call(id=4, suppress=s.SuppressRequest(caller=ghost)),
        s.Call(id=5),
        s.Call(id=6, decline=s.DeclineRequest(caller=fw.caller, offer_ids=["no-such-offer"])),
        s.Call(
            id=7,
            accept=s.AcceptRequest(
                caller=fw.caller,
                offer_ids=[offer.id],
                operations=[s.Operation(launch=s.LaunchOperation(tasks=[task("good")]))],
            ),
        ),
    ]
    rpc = fw.stub.Calls()
    await rpc.write(s.CallBatch(calls=calls))
    await rpc.done_writing()
    results: dict[int, s.CallResult] = {}
    async with asyncio.timeout(10):
        async for batch in rpc:
            for r in batch.results:
                assert r.id not in results, f"call {r.id} answered twice"
                results[r.id] = r
    assert sorted(results) == [1, 2, 3, 4, 5, 6, 7], "the stream ended before every answer"
    code = {i: STATUS_OF_CODE[r.code] for i, r in results.items()}
    invalid, ok = grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.OK
    assert code == {
        1: invalid,
        2: invalid,
        3: invalid,
        4: grpc.StatusCode.NOT_FOUND,
        5: invalid,
        6: ok,
        7: ok,
    }
    assert "no known type" in results[1].message
    assert "cpus is negative" in results[2].message
    assert "task_id is empty" in results[3].message
    assert "not subscribed" in results[4].message
    assert "no known type" in results[5].message
    assert results[7].message == ""
    # The refused accept of the same offer changed nothing; the good one launched.
    state = await cluster.state()
    assert [t.info.task_id for t in state.tasks] == ["good"]


async def test_a_call_past_its_deadline_is_refused_and_not_applied(
    framework: tuple[LocalCluster, RawFramework],
) -> None:
    """A call the master cannot get to within the caller's timeout is refused with
    DEADLINE_EXCEEDED, not applied late: here a timeout shorter than any queueing."""
    cluster, fw = framework
    offer = await fw.next_offer()
    late = s.Call(
        id=1,
        timeout_seconds=1e-9,
        accept=s.AcceptRequest(
            caller=fw.caller,
            offer_ids=[offer.id],
            operations=[s.Operation(launch=s.LaunchOperation(tasks=[task("late")]))],
        ),
    )
    rpc = fw.stub.Calls()
    await rpc.write(s.CallBatch(calls=[late]))
    await rpc.done_writing()
    async with asyncio.timeout(10):
        results = [r async for b in rpc for r in b.results]
    assert [(r.id, STATUS_OF_CODE[r.code]) for r in results] == [
        (1, grpc.StatusCode.DEADLINE_EXCEEDED)
    ]
    assert "deadline" in results[0].message
    # Nothing was launched, and the offer is still good.
    await fw.accept([offer.id], task("on-time"))
    state = await cluster.state()
    assert [t.info.task_id for t in state.tasks] == ["on-time"]
