"""A flag one coroutine waits on: ``asyncio.Event``'s ``set`` / ``clear`` / ``wait`` for a
stream's writer, the core's inbox and their like, without a system call per wait.

On Python 3.11 every ``asyncio.Event.wait`` that has to wait asks asyncio for the running loop
(``_LoopBoundMixin._get_loop``), and asyncio checks the loop it has cached against the process
id, which glibc asks the kernel for: a ``getpid`` system call each time. A master under load
waits on a stream's queue or the inbox once per message or so: 3.7 % of its busy time went to
``getpid`` (docs/performance.md, "A system call per wait, an answer per accept, …"). Here the
loop is asked for once, at the first wait, and kept (3.12 dropped the process id check).
"""

from __future__ import annotations

import asyncio


class Wakeup:
    """``set`` wakes the coroutine waiting in ``wait`` (one at a time: a second waiter while
    one waits is a bug, and raises); ``wait`` returns at once while the flag is set; ``clear``
    lowers it. Bound to the event loop of its first wait, as ``asyncio.Event`` is."""

    __slots__ = ("_loop", "_set", "_waiter")

    def __init__(self) -> None:
        self._set = False
        self._waiter: asyncio.Future[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        if self._set:
            return
        self._set = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def clear(self) -> None:
        self._set = False

    async def wait(self) -> None:
        if self._set:
            return
        if self._waiter is not None:
            raise RuntimeError("Wakeup.wait: another coroutine is already waiting")
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiter = waiter
        try:
            await waiter
        finally:
            self._waiter = None
