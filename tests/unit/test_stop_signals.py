"""corral/stop_signals.py in this process: the first stop signal raises Stopped (or, under
``stop_signals.run``, cancels the coroutine at an await, and Stopped comes out once its cleanup
has run), later ones do nothing, ``stopping()`` makes every later one do nothing, and the
handlers before it come back. (With real processes: tests/integration/test_stop_signals.py.)"""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from corral import stop_signals
from corral.stop_signals import Stopped, stop_on_signals


def _signal_self(sig: signal.Signals) -> None:
    os.kill(os.getpid(), sig)
    # The handler runs in the main thread at the next bytecode: give it one.
    for _ in range(1000):
        pass


@pytest.mark.parametrize("sig", stop_signals.STOP_SIGNALS, ids=lambda s: s.name)
def test_the_first_signal_raises_stopped_and_later_ones_do_nothing(sig: signal.Signals) -> None:
    before = signal.getsignal(sig)
    with stop_on_signals():
        with pytest.raises(Stopped) as stopped:
            _signal_self(sig)
        assert (stopped.value.signum, stopped.value.name) == (sig, sig.name)
        assert isinstance(stopped.value, KeyboardInterrupt)  # Ctrl-C's handling applies
        for later in stop_signals.STOP_SIGNALS:
            _signal_self(later)  # the stop under way is not cut short
    assert signal.getsignal(sig) == before


def test_after_stopping_a_signal_does_nothing() -> None:
    with stop_on_signals():
        stop_signals.stopping()
        _signal_self(signal.SIGTERM)  # no Stopped: the command is stopping on its own


@pytest.mark.parametrize("sig", stop_signals.STOP_SIGNALS, ids=lambda s: s.name)
def test_under_run_a_signal_cancels_at_an_await_and_the_cleanup_runs_whole(
    sig: signal.Signals,
) -> None:
    steps: list[str] = []

    async def command() -> None:
        try:
            os.kill(os.getpid(), sig)
            steps.append("signalled")  # no exception between two awaits
            await asyncio.Event().wait()  # cancelled here
        finally:
            os.kill(os.getpid(), signal.SIGTERM)  # a second signal: the cleanup goes on
            await asyncio.sleep(0.01)
            steps.append("cleaned up")

    before = signal.getsignal(sig)
    with stop_on_signals():
        sync_handler = signal.getsignal(sig)
        with pytest.raises(Stopped) as stopped:
            stop_signals.run(command())
        assert signal.getsignal(sig) is sync_handler  # the loop's handler gave it back
    assert stopped.value.signum == sig
    assert steps == ["signalled", "cleaned up"]
    assert signal.getsignal(sig) == before


def test_under_run_a_result_comes_back_and_no_signal_means_no_stop() -> None:
    async def command() -> int:
        await asyncio.sleep(0)
        return 7

    assert stop_signals.run(command()) == 7
