"""A scheduler that records every status it is sent and lets a test wait on what it saw."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from corral.frameworks import sdk

WAIT = 30.0  # seconds for any one condition; generous for a loaded 2-core CI machine


class RecordingScheduler(sdk.Scheduler):
    def __init__(self) -> None:
        self.statuses: dict[str, list[sdk.TaskStatus]] = {}
        self.changed = asyncio.Event()

    async def status(self, driver: sdk.Driver, status: sdk.TaskStatus) -> None:
        self.statuses.setdefault(status.task_id, []).append(status)
        self.changed.set()

    def last(self, task_id: str) -> sdk.TaskStatus | None:
        seen = self.statuses.get(task_id)
        return seen[-1] if seen else None

    async def until(self, what: str, check: Callable[[], bool], timeout: float = WAIT) -> None:
        """Wait until ``check()`` holds, re-checking on every status; fail naming ``what``."""
        await until_set(self.changed, what, check, timeout)


async def until_set(
    changed: asyncio.Event, what: str, check: Callable[[], bool], timeout: float
) -> None:
    """Wait until ``check()`` holds, re-checking each time ``changed`` is set (by whoever
    changes what ``check`` reads); fail naming ``what`` after ``timeout`` seconds."""

    async def loop() -> None:
        while not check():
            changed.clear()
            await changed.wait()

    try:
        await asyncio.wait_for(loop(), timeout)
    except TimeoutError:
        raise AssertionError(f"timed out after {timeout:g}s waiting for {what}") from None
