"""The Driver against FakeMaster: a real grpc.aio Scheduler service on 127.0.0.1 that plays the
master, so every assertion is about what the SDK puts on the wire and when."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import grpc
import pytest

from corral.v1.common_pb2 import Offer, Resources, TaskState, TaskStatus
from frameworks import sdk
from frameworks.sdk.testing import FakeMaster

TIMEOUT = 5.0


async def until(predicate: Callable[[], bool], what: str, timeout: float = TIMEOUT) -> None:
    """Wait for a condition the test cannot subscribe to; fail with ``what`` after timeout."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        await asyncio.sleep(0.01)


class Recorder(sdk.Scheduler):
    """Records every callback as (name, argument) in order; never declines on its own."""

    def __init__(self) -> None:
        self.log: list[tuple[str, object]] = []
        self.release = asyncio.Event()
        self.release.set()

    def names(self) -> list[str]:
        return [name for name, _ in self.log]

    async def subscribed(self, driver: sdk.Driver, framework_id: str) -> None:
        self.log.append(("subscribed", framework_id))

    async def offers(self, driver: sdk.Driver, offers: list[Offer]) -> None:
        self.log.append(("offers", [o.id for o in offers]))

    async def rescinded(self, driver: sdk.Driver, offer_ids: object) -> None:
        self.log.append(("rescinded", list(offer_ids)))  # type: ignore[call-overload]

    async def status(self, driver: sdk.Driver, status: TaskStatus) -> None:
        await self.release.wait()
        self.log.append(("status", status.task_id))

    async def error(self, driver: sdk.Driver, message: str) -> None:
        self.log.append(("error", message))

    async def disconnected(self, driver: sdk.Driver) -> None:
        self.log.append(("disconnected", None))


def offer(offer_id: str, agent_id: str = "agent-1", cpus: float = 1, mem: float = 256) -> Offer:
    return Offer(
        id=offer_id, agent_id=agent_id, hostname="h", resources=Resources(cpus=cpus, mem=mem)
    )


def status(task_id: str, uuid: bytes = b"", state: int = TaskState.TASK_STATE_RUNNING) -> TaskStatus:
    return TaskStatus(task_id=task_id, agent_id="agent-1", state=state, uuid=uuid)  # type: ignore[arg-type]


@pytest.fixture
async def master() -> AsyncIterator[FakeMaster]:
    async with FakeMaster() as m:
        yield m


def driver_for(master: FakeMaster, scheduler: sdk.Scheduler, **kw: object) -> sdk.Driver:
    kw.setdefault("connect_timeout", TIMEOUT)
    kw.setdefault("backoff", sdk.Backoff(initial=0.02, maximum=0.1))
    return sdk.Driver(scheduler, sdk.FrameworkInfo(name="t", role="*"), master.address, **kw)  # type: ignore[arg-type]


async def test_subscribes_and_dispatches_events_in_order(master: FakeMaster) -> None:
    rec = Recorder()
    async with driver_for(master, rec) as driver:
        assert driver.framework_id == "framework-1"
        await master.send_offers([offer("o1"), offer("o2")])
        await master.send_rescind(["o1"])
        await master.send_update([status("t1")])
        await until(lambda: len(rec.log) == 4, "four callbacks")
        await driver.stop()
        await driver.wait()
    assert rec.log == [
        ("subscribed", "framework-1"),
        ("offers", ["o1", "o2"]),
        ("rescinded", ["o1"]),
        ("status", "t1"),
    ]
    assert master.subscriptions[0].framework_info.name == "t"
    assert master.subscriptions[0].framework_info.id == ""
