"""A wake-up many coroutines wait on at once, each with its own timeout.

``asyncio.Event`` keeps its waiters in a deque and removes one that stops waiting (its timeout
fired, it was cancelled) by searching the deque: O(waiters) each, O(waiters²) when all of them
time out in turn. The simulated agents of one process (12,500 at 50,000 agents) all wait out
their reconnect backoff on their one shared detector: that search was ~40 % of the process's
time while its master was away (docs/performance.md, "Master failover at 50,000 agents").
Here a waiter leaves a set, in O(1).
"""

from __future__ import annotations

import asyncio


class Broadcast:
    """``fire`` wakes every coroutine waiting in ``wait`` now; a later ``wait`` waits for the
    next ``fire`` (an ``asyncio.Event`` set and replaced by a new one, in one)."""

    def __init__(self) -> None:
        self._waiters: set[asyncio.Future[None]] = set()

    def __len__(self) -> int:
        """The coroutines waiting now."""
        return len(self._waiters)

    async def wait(self) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.add(future)
        try:
            await future
        finally:
            self._waiters.discard(future)

    def fire(self) -> None:
        for future in self._waiters:
            if not future.done():
                future.set_result(None)
