"""Commands that start processes stop them all on SIGINT, SIGTERM or SIGHUP.

Python's default for SIGTERM and SIGHUP ends the interpreter at once: no ``finally`` runs, and a
command's master, agents, frameworks and ZooKeeper (each in a process group of its own, so that
a terminal's Ctrl-C reaches only the command) keep running; ``timeout 300 corral loadtest ...``
left a master and 20 agent processes holding 4.7 GB. Under ``stop_on_signals()`` each of these
signals raises ``Stopped`` (a ``KeyboardInterrupt``, as Ctrl-C's is) in the main thread instead,
so the command's ``finally`` blocks and context managers stop what it started, as on Ctrl-C.
Under ``asyncio.run`` the exception ends the loop, which then cancels the command's tasks: their
``finally`` blocks and ``async with`` exits run too.

Only the first signal raises; later ones do nothing, so a second signal cannot cut the stop
short (``timeout`` signals the command's process group, and make then signals the command
again a moment later; a user presses Ctrl-C twice). ``stopping()`` says the command is stopping
on its own (``--duration`` reached): from there too, signals change nothing. What a command
starts must still be stopped however its stop ends: each group of children is SIGKILLed if its
graceful stop is interrupted (``ProcessGroup.close``, ``LocalCluster.close``).

``corral.cli.main`` installs it for every command that sets ``starts_processes=True``; the
command's exit status is then 128 + the signal's number, unless the command handles ``Stopped``
itself (``corral demo`` prints its summary and exits 0).
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


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
