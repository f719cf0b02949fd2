"""The load test's drain: it waits while launched tasks keep ending, and gives up once none
has ended for the quiet period (or at the limit), leaving the rest to be counted as lost."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from corral.frameworks.loadtest.scheduler import LoadScheduler
from corral.frameworks.loadtest.worker import _drain


class Pending:
    def __init__(self, n: int) -> None:
        self.pending: dict[str, None] = {f"t{i}": None for i in range(n)}


async def never() -> None:
    await asyncio.Event().wait()


async def run_drain(schedulers: list[Pending], quiet: float, limit: float) -> float:
    loop = asyncio.get_running_loop()
    ends = {loop.create_task(never())}
    start = loop.time()
    try:
        await _drain(cast(list[LoadScheduler], schedulers), cast(Any, ends), quiet, limit)
    finally:
        for t in ends:
            t.cancel()
    return loop.time() - start


async def test_waits_past_the_quiet_period_while_tasks_keep_ending() -> None:
    s = Pending(12)

    async def finish_one_every_tenth_of_a_second() -> None:
        while s.pending:
            await asyncio.sleep(0.1)
            s.pending.popitem()

    ender = asyncio.create_task(finish_one_every_tenth_of_a_second())
    # 12 tasks over ~1.2 s, longer than the 0.6 s quiet period: all of them end.
    took = await run_drain([s], quiet=0.6, limit=30.0)
    await ender
    assert s.pending == {}
    assert took >= 1.2


async def test_stops_after_the_quiet_period_without_progress() -> None:
    s = Pending(3)
    took = await run_drain([s], quiet=0.3, limit=30.0)
    assert len(s.pending) == 3
    assert 0.3 <= took < 5.0


async def test_stops_at_the_limit_even_while_tasks_end() -> None:
    s = Pending(1000)

    async def keep_ending() -> None:
        while s.pending:
            await asyncio.sleep(0.05)
            s.pending.popitem()

    ender = asyncio.create_task(keep_ending())
    took = await run_drain([s], quiet=5.0, limit=0.5)
    ender.cancel()
    assert s.pending  # still tasks left: the limit, not the drain, ended it
    assert 0.5 <= took < 5.0
