"""Commands that start processes stop them all on SIGINT, SIGTERM or SIGHUP.

Python's default for SIGTERM and SIGHUP ends the interpreter at once: no ``finally`` runs, and a
command's master, agents, frameworks and ZooKeeper (each in a process group of its own, so that
a terminal's Ctrl-C reaches only the command) keep running; ``timeout 300 corral loadtest ...``
left a master and 20 agent processes holding 4.7 GB. Here each of these signals stops the
command as Ctrl-C does, and its ``finally`` blocks and context managers stop what it started:

- ``stop_on_signals()``, for a command's synchronous code: the signal raises ``Stopped`` (a
  ``KeyboardInterrupt``, as Ctrl-C's is) in the main thread. ``corral.cli.main`` installs it for
  every command that sets ``starts_processes=True``.
- ``run(coro)``, ``asyncio.run`` for such a command's event loop: the signal cancels ``coro``,
  as ``asyncio.run`` does on Ctrl-C, and ``Stopped`` is raised once it has ended. A
  cancellation arrives at an ``await``; an exception raised at any bytecode could land between
  a child's fork and the line that records it (``asyncio.create_subprocess_exec``), leaving a
  process no cleanup knows of.

Only the first signal stops; later ones do nothing, so a second signal cannot cut the stop short
(``timeout`` signals the command's process group, and make then signals the command again a
moment later; a user presses Ctrl-C twice). ``stopping()`` says the command is stopping on its
own (``--duration`` reached): from there too, signals change nothing. What a command starts must
still be stopped however its stop ends: each group of children is SIGKILLed if its graceful
stop is interrupted (``ProcessGroup.close``, ``LocalCluster.close``).

The command then exits 128 + the signal's number (``corral.cli.main``), unless it handles
``Stopped`` itself (``corral demo`` prints its summary and exits 0).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Coroutine, Iterator
from types import FrameType
from typing import Any, TypeVar

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
T = TypeVar("T")


class Stopped(KeyboardInterrupt):
    """A stop signal arrived; ``args[0]`` is its name (``"SIGTERM"``)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def name(self) -> str:
        return str(self.args[0])


class _StopOnce:
    """The handler: the first signal raises ``Stopped``, later ones do nothing."""

    def __init__(self) -> None:
        self.fired = False

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if self.fired:
            return
        self.fired = True
        raise Stopped(signum)


_active: _StopOnce | None = None


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """While inside, SIGINT, SIGTERM and SIGHUP raise ``Stopped`` once (the module's doc); the
    previous handlers come back at the end. Main thread only, as signal handlers are."""
    global _active
    handler, outer = _StopOnce(), _active
    previous = {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS}
    _active = handler
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
        _active = outer


def stopping() -> None:
    """The command is stopping what it started, on its own: from here on (until
    ``stop_on_signals`` ends) a signal changes nothing, so the stop cannot be cut short."""
    if _active is not None:
        _active.fired = True


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)``; the first stop signal cancels ``main`` and, once it has ended,
    raises ``Stopped`` (the module's doc). Main thread only."""
    return asyncio.run(_cancelled_on_signals(main))


async def _cancelled_on_signals(main: Coroutine[Any, Any, T]) -> T:
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    received: list[int] = []

    def on_signal(signum: int) -> None:
        if received or (_active is not None and _active.fired):
            return
        received.append(signum)
        task.cancel()

    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, on_signal, sig)
    try:
        return await main
    except asyncio.CancelledError:
        if received and task.uncancel() == 0:
            raise Stopped(received[0]) from None
        raise
    finally:
        for sig, old in previous.items():
            loop.remove_signal_handler(sig)
            if old is not None:  # None: not set from Python; the loop left the default
                signal.signal(sig, old)
