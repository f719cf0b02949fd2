"""sdk.DemandSync: one SetDemands in flight, the latest wins, a refusal stops it until the
demands change, and resend() says them again to a new master."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import grpc

from corral.frameworks import sdk


class Calls:
    """A driver's set_demands only, each call held until released."""

    def __init__(self) -> None:
        self.sent: list[list[sdk.Demand]] = []
        self.gate = asyncio.Event()
        self.refuse = False
        self.code = grpc.StatusCode.INVALID_ARGUMENT

    async def set_demands(self, demands: list[sdk.Demand]) -> None:
        self.sent.append(list(demands))
        await self.gate.wait()
        if self.refuse:
            raise sdk.CallError("SetDemands", self.code, "unknown or ungranted class")


def _d(n: int) -> list[sdk.Demand]:
    return [sdk.Demand("web", n, cpus=1, mem=64)] if n else []


async def test_one_call_in_flight_and_the_latest_wins() -> None:
    calls, want = Calls(), [1]
    sync = sdk.DemandSync(lambda: _d(want[0]))
    driver = cast(Any, calls)
    sync.changed(driver)
    await asyncio.sleep(0)
    for n in (2, 3, 4):  # changes while the first call is in flight
        want[0] = n
        sync.changed(driver)
    calls.gate.set()
    await sync.settle()
    assert calls.sent == [_d(1), _d(4)]
    sync.changed(driver)  # nothing changed: no call
    await sync.settle()
    assert len(calls.sent) == 2
    sync.resend(driver)  # a new master: say it again
    await sync.settle()
    assert calls.sent[-1] == _d(4) and len(calls.sent) == 3


async def test_a_refusal_is_reported_once_and_not_retried_until_the_demands_change() -> None:
    calls, refused = Calls(), []
    want = [5]
    sync = sdk.DemandSync(lambda: _d(want[0]), on_refused=refused.append)
    driver = cast(Any, calls)
    calls.refuse = True
    calls.gate.set()
    sync.changed(driver)
    await sync.settle()
    sync.changed(driver)
    await sync.settle()
    assert len(calls.sent) == 1 and len(refused) == 1
    want[0] = 6
    calls.refuse = False
    sync.changed(driver)
    await sync.settle()
    assert calls.sent[-1] == _d(6)


async def test_a_class_the_acls_do_not_grant_is_refused_for_good_too() -> None:
    # Issue #40, defect 3: PERMISSION_DENIED was taken for a passing failure, so the shipped
    # frameworks waited forever on a demand the master would never take.
    calls, refused = Calls(), []
    sync = sdk.DemandSync(lambda: _d(1), on_refused=refused.append)
    calls.refuse, calls.code = True, grpc.StatusCode.PERMISSION_DENIED
    calls.gate.set()
    sync.changed(cast(Any, calls))
    await sync.settle()
    assert [e.code for e in refused] == [grpc.StatusCode.PERMISSION_DENIED]
    assert refused[0].permanent
    assert not sdk.CallError("SetDemands", grpc.StatusCode.UNAVAILABLE, "away").permanent
