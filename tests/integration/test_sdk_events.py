"""``async for event in driver.events()`` against FakeMaster: the callbacks' promises, kept by a
loop (order, acknowledgement after handling, how the loop ends)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import grpc
import pytest

from corral.frameworks import sdk
from corral.frameworks.sdk.events import EventChannel
from corral.frameworks.sdk.testing import FakeMaster, LocalCluster
from corral.v1.common_pb2 import Resources

TIMEOUT = 5.0


@pytest.fixture
async def master() -> AsyncIterator[FakeMaster]:
    async with FakeMaster() as m:
        yield m


def driver_for(master: FakeMaster) -> sdk.Driver:
    return sdk.Driver(
        None,
        sdk.FrameworkInfo(name="t", role="*"),
        master.address,
        connect_timeout=TIMEOUT,
        backoff=sdk.Backoff(initial=0.02, maximum=0.1),
        tls=master.tls,
    )


def finished(task_id: str, uuid: bytes) -> sdk.TaskStatus:
    return sdk.TaskStatus(
        task_id=task_id,
        agent_id="agent-1",
        state=sdk.TaskState.TASK_STATE_FINISHED,
        uuid=uuid,
        exit_code=0,
    )


async def test_events_arrive_typed_in_order_and_a_status_is_acked_after_its_body(
    master: FakeMaster,
) -> None:
    seen: list[object] = []
    acks_during_body: list[int] = []
    async with driver_for(master) as driver:
        await master.send_offers(
            [sdk.Offer(id="o1", agent_id="agent-1", resources=Resources(cpus=2))]
        )
        await master.send_rescind(["o1"])
        await master.send_update([finished("t1", b"u1"), finished("t2", b"u2")])
        async with asyncio.timeout(TIMEOUT):
            async for event in driver.events():
                match event:
                    case sdk.SubscribedEvent(framework_id=fid):
                        seen.append(("subscribed", fid))
                    case sdk.OffersEvent() as offers:
                        seen.append(("offers", [(v.id, v.cpus) for v in offers.views]))
                    case sdk.RescindEvent(offer_ids=ids):
                        seen.append(("rescind", ids))
                    case sdk.UpdateEvent() as update:
                        acks_during_body.append(len(master.calls_of("Acknowledge")))
                        seen.append(("update", update.view.task_id, update.view.state))
                        if update.view.task_id == "t2":
                            await driver.stop()
    assert seen == [
        ("subscribed", "framework-1"),
        ("offers", [("o1", 2.0)]),
        ("rescind", ["o1"]),
        ("update", "t1", "FINISHED"),
        ("update", "t2", "FINISHED"),
    ]
    # One UPDATE, one Acknowledge, sent after both bodies ran (stop() inside the second).
    assert acks_during_body == [0, 0]
    (ack,) = master.calls_of("Acknowledge")
    assert [a.uuid for a in ack.acknowledgements] == [b"u1", b"u2"]


async def test_an_error_event_is_read_then_the_loop_raises_framework_error(
    master: FakeMaster,
) -> None:
    kinds: list[str] = []
    async with driver_for(master) as driver:
        await master.send_error("framework removed by the operator")
        with pytest.raises(sdk.FrameworkError, match="removed by the operator"):
            async with asyncio.timeout(TIMEOUT):
                async for event in driver.events():
                    kinds.append(type(event).__name__)
    assert kinds == ["SubscribedEvent", "ErrorEvent"]


async def test_a_reconnect_shows_as_disconnected_then_subscribed(master: FakeMaster) -> None:
    kinds: list[str] = []
    async with driver_for(master) as driver:
        async with asyncio.timeout(TIMEOUT):
            async for event in driver.events():
                kinds.append(type(event).__name__)
                if len(kinds) == 1:
                    await master.drop_stream(grpc.StatusCode.UNAVAILABLE)
                elif len(kinds) == 3:
                    await driver.stop()
    assert kinds == ["SubscribedEvent", "DisconnectedEvent", "SubscribedEvent"]
    assert [s.framework_info.id for s in master.subscriptions] == ["", "framework-1"]


async def test_a_status_no_loop_took_is_not_acknowledged(master: FakeMaster) -> None:
    async with driver_for(master) as driver:
        events = driver.events()
        first = await asyncio.wait_for(anext(events), TIMEOUT)
        assert isinstance(first, sdk.SubscribedEvent)
        await events.aclose()  # the loop is left (as by break): the driver goes on
        await master.send_update([finished("t1", b"u1")])
        # The driver hands the status over and waits for a loop; none comes, it is stopped.
        channel = driver.scheduler
        assert isinstance(channel, EventChannel)
        async with asyncio.timeout(TIMEOUT):
            while channel._handoff.empty():  # the hand-over has no signal a test can await
                await asyncio.sleep(0.01)
        await driver.stop()
        # A loop started after the driver ended ends at once.
        assert [e async for e in driver.events()] == []
    assert master.calls_of("Acknowledge") == []


async def test_events_needs_a_driver_without_a_scheduler(master: FakeMaster) -> None:
    driver = sdk.Driver(
        sdk.Scheduler(), sdk.FrameworkInfo(name="t"), master.address, tls=master.tls
    )
    with pytest.raises(RuntimeError, match="without a scheduler"):
        driver.events()


async def test_a_loop_runs_tasks_on_a_real_master(tmp_path: Path) -> None:
    """The events() way of writing hello: launch 3 tasks, see each finish, tear down."""
    pending = [sdk.task(f"e{i}", "exit 0", cpus=0.1, mem=16) for i in range(3)]
    ended: dict[str, sdk.StatusView] = {}
    async with LocalCluster(agents=1, work_dir=tmp_path / "cluster") as cluster:
        info = sdk.FrameworkInfo(name="events", role="*")
        async with sdk.Driver(None, info, cluster.master, connect_timeout=30) as driver:
            async with asyncio.timeout(60):
                async for event in driver.events():
                    match event:
                        case sdk.OffersEvent(offers=offers):
                            for offer in offers:
                                packer = sdk.OfferPacker(offer)
                                pending = packer.add_all(pending)
                                await driver.launch([offer], packer.tasks)
                        case sdk.UpdateEvent() as update if update.view.terminal:
                            ended[update.view.task_id] = update.view
                            if len(ended) == 3:
                                await driver.teardown()
        state = await cluster.state()
    assert sorted((v.state, v.exit_code) for v in ended.values()) == [("FINISHED", 0)] * 3
    assert [f.info.name for f in state.frameworks if f.connected] == []


async def test_agents_lost_and_an_executors_end_reach_the_loop_and_the_callbacks(
    master: FakeMaster,
) -> None:
    from corral.v1 import scheduler_pb2

    removed = sdk.AgentLossReason.Value("AGENT_LOSS_REASON_REMOVED")
    lost = scheduler_pb2.Event(
        agents_lost=scheduler_pb2.AgentsLost(
            agents=[
                sdk.AgentLost(
                    agent_id="a1", reason=sdk.AgentLossReason.Value("AGENT_LOSS_REASON_REMOVED")
                )
            ]
        )
    )
    ended = scheduler_pb2.Event(
        executor_terminated=sdk.ExecutorTerminated(agent_id="a1", executor_id="e1", status=9)
    )
    seen: list[object] = []
    async with driver_for(master) as driver:
        await master.send(lost)
        await master.send(ended)
        async with asyncio.timeout(TIMEOUT):
            async for event in driver.events():
                match event:
                    case sdk.AgentsLostEvent(agents=agents):
                        seen.append([(a.agent_id, a.reason) for a in agents])
                    case sdk.ExecutorTerminatedEvent(executor=x):
                        seen.append((x.executor_id, x.status))
                        await driver.stop()
    assert seen == [[("a1", removed)], ("e1", 9)]

    class Callbacks(sdk.Scheduler):
        async def agents_lost(self, driver: sdk.Driver, agents: Sequence[sdk.AgentLost]) -> None:
            seen.append(("lost", [a.agent_id for a in agents]))

        async def executor_terminated(
            self, driver: sdk.Driver, executor: sdk.ExecutorTerminated
        ) -> None:
            seen.append(("ended", executor.executor_id))
            await driver.stop()

    seen.clear()
    async with sdk.Driver(
        Callbacks(),
        sdk.FrameworkInfo(name="t", role="*"),
        master.address,
        connect_timeout=TIMEOUT,
        tls=master.tls,
    ) as driver:
        await master.send(lost)
        await master.send(ended)
        async with asyncio.timeout(TIMEOUT):
            await driver.wait()
    assert seen == [("lost", ["a1"]), ("ended", "e1")]
