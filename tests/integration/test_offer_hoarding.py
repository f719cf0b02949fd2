"""Offer hoarding (issue #41, item 4) on a real master with real agents and frameworks over TLS.

A framework that holds its offers and never answers them kept the cluster from everyone else:
its offers ran out after the offer timeout and went straight back to it. Now an expired offer
counts as a decline (a refuse filter that doubles while it keeps happening), and a framework
whose every demand fits nowhere is offered nothing.

Rates are counted per allocation cycle of the master (its /metrics), not per second: a loaded
machine runs fewer cycles in a second, and each phase waits for as many cycles, however long
they take. The offer timeout is short (3 s) so that the hoarder's rounds come many times a
window; the innocent framework declines with a short filter (0.4 s), as an eager framework
does, which is what a hoarder exploited: whatever the innocent declined, the hoarder got.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from corral.frameworks import sdk
from corral.frameworks.sdk.testing import LocalCluster
from corral.v1 import operator_pb2, operator_pb2_grpc
from tests.integration.recording import WAIT

pytestmark = pytest.mark.e2e

OFFER_TIMEOUT = 3.0
REFUSE = 0.4  # the innocent framework's refuse filter
CYCLES = 150  # per measured window: ~30 s at 0.2 s a cycle on a quiet machine


@dataclass
class Counted:
    """A framework's driver and the offers it was sent."""

    driver: sdk.Driver
    offers: int = 0


async def _innocent(driver: sdk.Driver, counted: Counted) -> None:
    """Declines every offer at once, with a short filter."""
    async for event in driver.events():
        if isinstance(event, sdk.OffersEvent):
            counted.offers += len(event.offers)
            await driver.decline(event.offers, refuse_seconds=REFUSE)


async def _hoarder(driver: sdk.Driver, counted: Counted) -> None:
    """Reads its events and answers none of its offers."""
    async for event in driver.events():
        if isinstance(event, sdk.OffersEvent):
            counted.offers += len(event.offers)


@contextlib.asynccontextmanager
async def _running(cluster: LocalCluster, name: str, loop: object) -> AsyncIterator[Counted]:
    info = sdk.FrameworkInfo(name=name, role="*")
    async with sdk.Driver(None, info, cluster.master, tls=cluster.tls) as driver:
        counted = Counted(driver)
        task = asyncio.create_task(loop(driver, counted))  # type: ignore[operator]
        try:
            yield counted
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def _offered(counted: Counted) -> None:
    async with asyncio.timeout(WAIT):
        while not counted.offers:
            await asyncio.sleep(0.05)  # offers arrive on the driver's own task


async def _rate(cluster: LocalCluster, counted: Counted) -> float:
    """Offers the framework is sent per allocation cycle, over CYCLES cycles."""
    cycles, offers = await cluster.allocation_cycles(), counted.offers
    await cluster.wait_for_cycles(CYCLES, WAIT * 4)
    return (counted.offers - offers) / (await cluster.allocation_cycles() - cycles)


@pytest.fixture
async def cluster() -> AsyncIterator[LocalCluster]:
    async with LocalCluster(
        agents=3,
        agent_args=("--simulate",),
        master_args=(
            *("--offer-timeout", f"{OFFER_TIMEOUT:g}"),
            *("--allocation-interval", "0.2"),
        ),
    ) as c:
        yield c


async def test_an_innocent_frameworks_offers_stay_within_half_its_rate_while_a_hoarder_holds_on(
    cluster: LocalCluster,
) -> None:
    async with _running(cluster, "innocent", _innocent) as innocent:
        await _offered(innocent)
        baseline = await _rate(cluster, innocent)
        assert baseline > 0.3, f"the innocent framework alone got {baseline:.2f} offers a cycle"
        async with _running(cluster, "hoarder", _hoarder) as hoarder:
            await _offered(hoarder)  # it holds on from here
            with_hoarder = await _rate(cluster, innocent)
            held = hoarder.offers
        print(  # the figures, for the record (pytest -s)
            f"\ninnocent offers per cycle: alone {baseline:.2f}, beside the hoarder "
            f"{with_hoarder:.2f} ({with_hoarder / baseline:.0%}); the hoarder was sent {held}"
        )
        assert with_hoarder >= baseline / 2, (
            f"beside a hoarder the innocent framework got {with_hoarder:.2f} offers a cycle, "
            f"less than half its {baseline:.2f} alone\n{cluster.logs()}"
        )
    # The hoarder was not shut out either: its offers ran out and came back, each time later.
    async with cluster.channel() as ch:
        stub = operator_pb2_grpc.OperatorStub(ch)  # type: ignore[no-untyped-call]
        got = await stub.GetEvents(operator_pb2.GetEventsRequest(), timeout=10)
    expired = [e.message for e in got.events if "rescinded, and taken as declined" in e.message]
    assert len(expired) >= 2, expired
    assert held > 3, f"the hoarder was sent only {held} offers"


async def test_a_framework_whose_every_demand_fits_nowhere_is_offered_nothing(
    cluster: LocalCluster,
) -> None:
    # The probe: the hoarder's only demand (cpus: 1000, in a class it may use) fits no
    # agent. Offers could never serve it; it is sent none, and others lose nothing to it.
    async with _running(cluster, "innocent", _innocent) as innocent:
        await _offered(innocent)
        baseline = await _rate(cluster, innocent)
        async with _running(cluster, "hoarder", _hoarder) as hoarder:
            huge = sdk.Demand("huge", 1, cpus=1000, mem=128, priority_class="batch")
            await hoarder.driver.set_demands([huge])
            # Offers made before its demands arrived run out (the offer timeout), then none.
            await cluster.wait_for_cycles(int(2 * OFFER_TIMEOUT / 0.2), WAIT * 4)
            before = hoarder.offers
            with_hoarder = await _rate(cluster, innocent)
            assert hoarder.offers == before, f"sent {hoarder.offers - before} offers"
            async with cluster.channel() as ch:
                stub = operator_pb2_grpc.OperatorStub(ch)  # type: ignore[no-untyped-call]
                why = await stub.Explain(
                    operator_pb2.ExplainRequest(framework_id=hoarder.driver.framework_id),
                    timeout=10,
                )
        assert why.reasons["none of its unmet demands fits the agent"] == 3, why
        print(
            f"\ninnocent offers per cycle: alone {baseline:.2f}, beside a framework whose "
            f"demand fits nowhere {with_hoarder:.2f} ({with_hoarder / baseline:.0%})"
        )
        assert with_hoarder >= baseline / 2
