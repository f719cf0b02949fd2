"""Keeping the master's copy of a framework's demands current, cheaply.

A framework's demands change with every task that starts or ends; sending SetDemands for each
would make 500 calls for 500 tasks ending in a burst. ``DemandSync`` keeps one call in flight,
and when it returns sends the newest demands if they changed meanwhile (the latest wins).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from corral.frameworks.sdk.demands import Demand
from corral.frameworks.sdk.driver import Driver
from corral.frameworks.sdk.errors import CallError, DriverError


class DemandSync:
    """``wanted()`` gives the demands as they should be now. Call ``changed(driver)`` whenever
    they may have changed (it never waits), ``resend()`` after (re)subscribing to a master that
    may not know them, and ``settle()`` to wait for the call in flight.

    A call the master refuses for good (``CallError.permanent``: INVALID_ARGUMENT for an
    unknown priority class or a shape below the granularity, PERMISSION_DENIED for a class or
    toleration the ACLs do not grant) never works: ``on_refused(error)`` is called and nothing
    more is sent until ``changed`` is called with different demands. Any other failure
    (disconnected) waits for ``resend()``."""

    def __init__(
        self,
        wanted: Callable[[], Sequence[Demand]],
        on_refused: Callable[[CallError], None] | None = None,
    ) -> None:
        self._wanted = wanted
        self._on_refused = on_refused
        self._sent: list[Demand] | None = None
        self._refused: list[Demand] | None = None
        self._task: asyncio.Task[None] | None = None

    def changed(self, driver: Driver) -> None:
        if self._task is not None and not self._task.done():
            return  # the call in flight sends the newest demands when it returns
        want = list(self._wanted())
        if want == self._sent or want == self._refused:
            return
        self._task = asyncio.get_running_loop().create_task(self._loop(driver))

    def resend(self, driver: Driver) -> None:
        self._sent = None
        self._refused = None
        self.changed(driver)

    async def settle(self) -> None:
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)

    async def _loop(self, driver: Driver) -> None:
        while (want := list(self._wanted())) != self._sent:
            try:
                await driver.set_demands(want)
            except CallError as err:
                if err.permanent:
                    self._refused = want
                    if self._on_refused is not None:
                        self._on_refused(err)
                return
            except DriverError:
                return  # disconnected: resend() after the driver subscribes again
            self._sent = want
