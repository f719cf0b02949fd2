"""A scheduler that declines every offer for an hour: a framework that is subscribed, has
been offered something and then stays quiet, for tests that look at the master around it."""

from __future__ import annotations

import asyncio

from corral.frameworks import sdk


class Decliner(sdk.Scheduler):
    def __init__(self) -> None:
        self.declined = 0  # decline calls answered
        self.offered = asyncio.Event()  # set once the first offers were declined

    async def offers(self, driver: sdk.Driver, offers: list[sdk.Offer]) -> None:
        await driver.decline([o.id for o in offers], refuse_seconds=3600)
        self.declined += 1
        self.offered.set()
