"""sdk.StopSignals: the first SIGINT or SIGTERM is an event the framework awaits (and a wait
it cuts short), the next one gets the default action again."""

from __future__ import annotations

import asyncio
import os
import signal

from corral.frameworks import sdk


async def test_the_first_signal_is_an_event_and_the_next_gets_the_default_action() -> None:
    with sdk.StopSignals() as stop:
        assert not stop.is_set() and stop.received is None
        os.kill(os.getpid(), signal.SIGTERM)
        assert await asyncio.wait_for(stop.wait(), 5) == "SIGTERM"
        assert stop.is_set() and stop.received == "SIGTERM"
        # A second signal would now end the process (a way out if stopping hangs).
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


async def test_unless_stopped_returns_the_result_or_cancels_on_a_signal() -> None:
    with sdk.StopSignals() as stop:
        assert await stop.unless_stopped(asyncio.sleep(0, "done")) == "done"
        never: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        waiting = asyncio.ensure_future(stop.unless_stopped(never))
        await asyncio.sleep(0)  # it waits now
        os.kill(os.getpid(), signal.SIGINT)
        assert await asyncio.wait_for(waiting, 5) is None
        assert never.cancelled() and stop.received == "SIGINT"
