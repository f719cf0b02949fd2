"""SIGINT and SIGTERM as something a framework's main loop awaits.

A framework killed by a signal's default action leaves its tasks running until the master's
failover timeout, and prints nothing. With ``StopSignals`` the first signal only sets an event:
the framework then tears down (or stops, to fail over) and prints its summary. A second signal
gets the default action again (Ctrl-C twice quits at once).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Awaitable
from types import TracebackType
from typing import TypeVar

T = TypeVar("T")

DEFAULT_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopSignals:
    """``with sdk.StopSignals() as stop:`` ... ``await stop.wait()`` returns the signal's name
    (``"SIGTERM"``) once one arrives; ``stop.received`` is that name, or None. Enter it in the
    event loop's thread (the main thread); elsewhere it never fires."""

    def __init__(self, signals: tuple[signal.Signals, ...] = DEFAULT_SIGNALS) -> None:
        self.signals = signals
        self.received: str | None = None
        self._event = asyncio.Event()
        self._handled: list[signal.Signals] = []
        self._loop: asyncio.AbstractEventLoop | None = None

    def __enter__(self) -> StopSignals:
        self._loop = asyncio.get_running_loop()
        for sig in self.signals:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                self._loop.add_signal_handler(sig, self._on_signal, sig)
                self._handled.append(sig)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._restore()

    def _on_signal(self, sig: signal.Signals) -> None:
        self.received = sig.name
        self._event.set()
        self._restore()  # the next one is the default action: a way out if stopping hangs

    def _restore(self) -> None:
        if self._loop is not None:
            for sig in self._handled:
                self._loop.remove_signal_handler(sig)
        self._handled = []

    def is_set(self) -> bool:
        return self._event.is_set()

    async def wait(self) -> str:
        await self._event.wait()
        return self.received or ""

    async def unless_stopped(self, awaitable: Awaitable[T]) -> T | None:
        """``await awaitable``, unless a signal comes first: then it is cancelled and this
        returns None. For what may take long before the main loop runs (subscribing to a
        master that does not answer: ``stop.unless_stopped(stack.enter_async_context(driver))``)."""
        work = asyncio.ensure_future(awaitable)
        signalled = asyncio.ensure_future(self._event.wait())
        try:
            await asyncio.wait({work, signalled}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            signalled.cancel()
            if not work.done():
                work.cancel()
                await asyncio.wait({work})
        if work.cancelled():
            return None
        return work.result()
