"""The SDK against the real master (subprocesses on 127.0.0.1): refusals come back as typed
errors, and a driver survives a master crash and restart with its framework id."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable

import grpc
import pytest

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster

CORRAL = (sys.executable, "-m", "corral.cli.main")
TIMEOUT = 60.0


@pytest.fixture
async def cluster() -> AsyncIterator[LocalCluster]:
    async with LocalCluster(agents=1, corral=CORRAL) as c:
        yield c


async def until(predicate: Callable[[], bool], what: str, timeout: float = TIMEOUT) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        await asyncio.sleep(0.02)


async def test_the_real_master_refuses_a_task_bigger_than_its_offer(cluster: LocalCluster) -> None:
    got_offers: asyncio.Queue[list[sdk.Offer]] = asyncio.Queue()

    class Hold(sdk.Scheduler):
        async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
            await got_offers.put(offers)

    info = sdk.FrameworkInfo(name="greedy")
    async with sdk.Driver(Hold(), info, cluster.master, connect_timeout=10) as driver:
        offers = await asyncio.wait_for(got_offers.get(), TIMEOUT)
        offer = offers[0]
        too_big = sdk.task("big", "true", cpus=offer.resources.cpus + 1, mem=1)
        with pytest.raises(sdk.CallError) as caught:
            await driver.launch([offer], [too_big])
        # Nothing changed: the same offer still launches a task that fits.
        small = sdk.task("small", "true", cpus=0.1, mem=1)
        await driver.launch([offer], [small])
        await driver.teardown()
    assert caught.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "cpus" in caught.value.message


async def test_a_quiet_launch_on_the_real_master_tells_a_refusal_and_runs_what_fits(
    cluster: LocalCluster,
) -> None:
    got_offers: asyncio.Queue[list[sdk.Offer]] = asyncio.Queue()
    states: dict[str, list[int]] = {}

    class Hold(sdk.Scheduler):
        async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
            await got_offers.put(offers)

        async def status(self, driver: sdk.Driver, status: sdk.TaskStatus) -> None:
            states.setdefault(status.task_id, []).append(status.state)

    refusals: list[sdk.CallError] = []
    info = sdk.FrameworkInfo(name="quiet")
    async with sdk.Driver(Hold(), info, cluster.master, connect_timeout=10) as driver:
        offer = (await asyncio.wait_for(got_offers.get(), TIMEOUT))[0]
        too_big = sdk.task("big", "true", cpus=offer.resources.cpus + 1, mem=1)
        # Returns once written; the refusal comes after, to on_refused.
        await driver.launch([offer], [too_big], on_refused=refusals.append)
        await until(lambda: bool(refusals), "the quiet launch's refusal")
        small = sdk.task("small", "true", cpus=0.1, mem=1)
        await driver.launch([offer], [small], on_refused=refusals.append)
        await until(
            lambda: sdk.TaskState.TASK_STATE_FINISHED in states.get(small.task_id, []),
            "the quietly launched task to finish",
        )
        await driver.teardown()
    (refused,) = refusals  # the small task's launch was not refused
    assert refused.code == grpc.StatusCode.INVALID_ARGUMENT and refused.method == "Accept"
    assert "cpus" in refused.message
    assert too_big.task_id not in states  # refused: it never ran, no status


async def test_a_driver_resubscribes_to_a_restarted_master_with_its_id(
    cluster: LocalCluster,
) -> None:
    subscriptions: list[str] = []

    class Track(sdk.Scheduler):
        async def subscribed(self, driver: sdk.Driver, framework_id: str) -> None:
            subscriptions.append(framework_id)

    info = sdk.FrameworkInfo(name="survivor", failover_timeout=60)
    backoff = sdk.Backoff(initial=0.05, maximum=0.5)
    async with sdk.Driver(Track(), info, cluster.master, backoff=backoff) as driver:
        framework_id = driver.framework_id
        await cluster.restart_master()
        await until(lambda: len(subscriptions) == 2, "a second SUBSCRIBED after the restart")
        state = await cluster.state()
        await driver.suppress()  # calls work on the new connection
        await driver.teardown()
    assert subscriptions == [framework_id, framework_id]
    assert [f.info.id for f in state.frameworks if f.info.name == "survivor"] == [framework_id]


async def test_why_pending_gives_the_master_s_reason_for_a_demand_that_cannot_be_placed(
    cluster: LocalCluster,
) -> None:
    info = sdk.FrameworkInfo(name="too-big")
    async with sdk.Driver(sdk.Scheduler(), info, cluster.master, connect_timeout=10) as driver:
        await driver.set_demands([sdk.Demand("huge", 2, cpus=100, mem=64)])
        assert driver.address == cluster.master  # the master the driver is connected to
        (pending,) = await sdk.why_pending(driver.address, driver.framework_id)
        assert (pending.name, pending.count, pending.unmet) == ("huge", 2, 2)
        assert pending.summary == "1 of 1 agents: insufficient cpus", pending
        assert pending.reasons == ("insufficient cpus",)
        await driver.set_demands([])
        assert await sdk.why_pending(driver.address, driver.framework_id) == []
        await driver.teardown()
    with pytest.raises(sdk.CallError) as unknown:
        await sdk.why_pending(cluster.master, "no-such-framework")
    assert unknown.value.code == grpc.StatusCode.NOT_FOUND


async def test_an_offer_shows_its_agent_s_taints_over_grpc() -> None:
    # Issue #40, defect 6: offers are written as pre-serialized bytes (master/wire/offers.py),
    # which left the taints out: sdk.view(offer).taints was () for a tainted agent.
    taints = "spot=true:PreferNoSchedule;gpu-sku=inference:NoSchedule"
    async with LocalCluster(
        agents=1, insecure=True, corral=CORRAL, agent_args=("--taints", taints)
    ) as c:
        tolerating = sdk.FrameworkInfo(
            name="tolerant",
            tolerations=[sdk.Toleration.equal("gpu-sku", "inference", "NoSchedule").to_pb()],
        )
        async with sdk.Driver(None, tolerating, c.master, tls=sdk.INSECURE) as driver:
            async with asyncio.timeout(TIMEOUT):
                async for event in driver.events():
                    if isinstance(event, sdk.OffersEvent) and event.offers:
                        offer = sdk.view(event.offers[0])
                        break
            assert offer.taints == ("spot=true:PreferNoSchedule", "gpu-sku=inference:NoSchedule")
            # A second cycle's offer of the same agent comes from the master's cached bytes.
            await driver.decline([offer.id], refuse_seconds=0)
            async with asyncio.timeout(TIMEOUT):
                async for event in driver.events():
                    if isinstance(event, sdk.OffersEvent) and event.offers:
                        again = sdk.view(event.offers[0])
                        break
            assert again.id != offer.id and again.taints == offer.taints
            await driver.teardown()
