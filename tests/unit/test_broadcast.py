"""The wake-up detectors' waiters share (corral/broadcast.py): every waiter woken at once, a
waiter that gives up leaves, a later waiter waits for the next fire; the static detector's
``changed`` returns for good once it is closed."""

from __future__ import annotations

import asyncio
import contextlib

from corral.broadcast import Broadcast
from corral.detector import StaticDetector


async def test_fire_wakes_every_waiter_and_a_later_one_waits_for_the_next() -> None:
    wake = Broadcast()
    waiters = [asyncio.create_task(wake.wait()) for _ in range(100)]
    while len(wake) < 100:  # each task must reach its wait first
        await asyncio.sleep(0)
    wake.fire()
    await asyncio.wait_for(asyncio.gather(*waiters), 5)
    assert len(wake) == 0
    later = asyncio.create_task(wake.wait())
    await asyncio.sleep(0.01)
    assert not later.done(), "a wait after the fire must wait for the next one"
    wake.fire()
    await asyncio.wait_for(later, 5)


async def test_waiters_that_time_out_leave_and_the_rest_still_wake() -> None:
    wake = Broadcast()

    async def give_up() -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(0.01):
                await wake.wait()

    await asyncio.wait_for(asyncio.gather(*(give_up() for _ in range(5000))), 10)
    assert len(wake) == 0, "waiters that timed out must not stay"
    stays = asyncio.create_task(wake.wait())
    while len(wake) < 1:
        await asyncio.sleep(0)
    wake.fire()
    await asyncio.wait_for(stays, 5)


async def test_a_closed_static_detector_no_longer_waits() -> None:
    detector = StaticDetector(("m1:5050",))
    waiting = asyncio.create_task(detector.changed("m1:5050"))
    await asyncio.sleep(0.01)
    assert not waiting.done(), "a list of masters cannot tell a change: it waits"
    await detector.close()
    await asyncio.wait_for(waiting, 5)
    await asyncio.wait_for(detector.changed("m1:5050"), 5)  # closed: at once
